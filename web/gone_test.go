package web

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/render/form"
)

// A post (without the script) to a question this server does not hold,
// as after a restart, is a page in the UI's style: it says the question
// is no longer open and nothing was sent, shows what the operator typed
// (text, not choice indexes or the token), and links back to the inbox.
// To the script it stays plain words under 404 (it withdraws the card in
// place itself).
func TestPostToAQuestionNoLongerHeldKeepsTheTypedText(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	post := url.Values{form.NameToken: {"tok-123"}, "f0": {"payments-api"}, "f1": {"2"}, "f1-other": {"eu-west"},
		"f2": {"on"}, "f3": {"1", "3"}, form.NameText: {"Ship it after 22:00"}}

	r := h.postForm(nil, "cards/cgone/answer", post)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	assert.Contains(t, r.Header.Get("Content-Type"), "text/html")
	d := r.doc(t)
	require.Equal(t, 1, d.Find(`[data-testid="gone"]`).Length(), "the styled page")
	assert.Contains(t, d.Find(`[data-testid="gone"] h1`).Text(), "no longer open")
	assert.Contains(t, d.Find(`[data-testid="gone-message"]`).Text(), "not sent")
	var typed []string
	d.Find(`[data-testid="gone-typed"]`).Each(func(_ int, s *goquery.Selection) { typed = append(typed, s.Text()) })
	assert.Equal(t, []string{"Ship it after 22:00", "payments-api", "eu-west"}, typed, "the operator's text, in field order")
	assert.NotContains(t, r.body, "tok-123", "the form token is not text to keep")
	link, ok := d.Find(`a[data-testid="gone-inbox"]`).Attr("href")
	require.True(t, ok, "a link back to the inbox")
	assert.Equal(t, "", h.relative(link), "the inbox")
	assert.Equal(t, 1, d.Find(`link[rel="stylesheet"]`).Length(), "styled like every page")

	r = h.postForm(nil, "cards/cgone/answer", post, HeaderFragment, "card")
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
	assert.Contains(t, r.Header.Get("Content-Type"), "text/plain", "the script reads plain words")
}

// Every other way into a question the server no longer holds, without
// the script, is the same styled page with the way back: "Send the same
// answer again" posted after a restart, and a row's own page; and so is
// an address the UI does not serve.
func TestNoScriptRefusalsOfAGoneQuestionAreStyledPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, r := range []response{
		h.postForm(nil, "cards/cgone/again", url.Values{"command": {"01ABC"}}),
		h.getPage(nil, "cards/cgone/page"),
		h.getPage(nil, "sessions"), // no such page
	} {
		require.Equal(t, http.StatusNotFound, r.StatusCode)
		assert.Contains(t, r.Header.Get("Content-Type"), "text/html")
		d := r.doc(t)
		require.Equal(t, 1, d.Find(`[data-testid="gone"]`).Length(), "the styled page: %s", r.body)
		assert.Regexp(t, "no longer open|no page here", d.Find(`[data-testid="gone"] h1`).Text())
		assert.NotEmpty(t, d.Find(`[data-testid="gone-message"]`).Text())
		link, ok := d.Find(`a[data-testid="gone-inbox"]`).Attr("href")
		require.True(t, ok, "a link back to the inbox")
		assert.Equal(t, "", h.relative(link))
		assert.Equal(t, 1, d.Find(`link[rel="stylesheet"]`).Length(), "styled like every page")
	}
	r := h.postForm(nil, "cards/cgone/again", url.Values{"command": {"01ABC"}}, HeaderFragment, "card")
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
	assert.Contains(t, r.Header.Get("Content-Type"), "text/plain", "the script reads plain words")
}
