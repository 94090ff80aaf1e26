package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A card version is rendered once for every browser, but each browser's
// copy carries its own form token: two tabs posting the same card never
// share one, so the second gets "already on its way", not silence.
func TestPushedCopiesOfOneCardCarryTheirOwnTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a, b := h.openPush(""), h.openPush("")
	require.Equal(t, "status", a.next().Event)
	require.Equal(t, "status", b.next().Event)

	// Agent text that looks like the placeholder's shape stays as written.
	req := nameForm()
	req.Prompt = "Name it (tok.abc is not a token)"
	id := h.ask("s1", "r1", req)

	ma, mb := a.next(), b.next()
	ta := attr(cardMsg(t, ma).Find(`input[name="token"]`), "value")
	tb := attr(cardMsg(t, mb).Find(`input[name="token"]`), "value")
	require.NotEmpty(t, ta)
	require.NotEmpty(t, tb)
	assert.NotEqual(t, ta, tb, "each browser's copy has its own token")
	for _, tok := range []string{ta, tb} {
		assert.NotContains(t, tok, ".", "a real token, not the render placeholder")
	}
	assert.NotContains(t, ma.Data, `value="tok.`, "the render placeholder never leaves the server")
	assert.Contains(t, cardMsg(t, ma).Find(`[data-testid="question"]`).Text(), "tok.abc is not a token")

	// The fragment served on its own is a fresh copy too.
	r := h.getPage(h.client(), "/cards/"+string(id))
	tc := attr(r.doc(t).Find(`input[name="token"]`), "value")
	assert.NotEqual(t, ta, tc)
	assert.False(t, strings.Contains(tc, "."))
}

// Every response that carries a form token is never stored by a browser
// or a proxy: the page, the panel, a card's fragment on its own, a
// refused post's page and the sign-in page.
func TestResponsesCarryingAFormTokenAreNotStored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", nameForm())
	action, _ := answerForm(t, h.getPage(nil, "").doc(t), id)
	refused := h.postForm(nil, h.relative(action), url.Values{"token": {""}})
	require.Equal(t, http.StatusBadRequest, refused.StatusCode, "a post without a token is refused with the page")

	signin := newHarness(t, withToken("a-long-enough-operator-secret"))
	for name, r := range map[string]response{
		"page":         h.getPage(nil, ""),
		"panel":        h.getPage(nil, "panel"),
		"card":         h.getPage(nil, "cards/"+string(id)),
		"refused post": refused,
		"sign-in page": signin.getPage(nil, "signin"),
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, "no-store", r.Header.Get("Cache-Control"), "%s: Cache-Control", name)
		})
	}
}
