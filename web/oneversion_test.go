package web

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// tokenValue is a form token in a rendered card (each copy has its own).
var tokenValue = regexp.MustCompile(`name="token" value="[^"]*"`)

// withoutTokens is a card's HTML with its form token blanked.
func withoutTokens(html string) string {
	return tokenValue.ReplaceAllString(strings.TrimSpace(html), `name="token" value=""`)
}

// One card version renders one way: the fragment a posting browser gets
// back (web/pages.go cardFragment) is the copy the push stream sends
// every browser of the same operator, form tokens aside. Both come from
// pages.cardOptions: the fragment used to lack the operator, the prompt
// cache and NoHistory, so a settled card this operator answered read
// "Answered here by Ann" in the post's answer and "by you (Ann)" pushed.
func TestPostedFragmentIsThePushedCopy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withOperators(t)) // no History: NoHistory
	ann := []string{"Authorization", "Bearer " + annSecret, "X-Operator-Name", "Ann"}
	asFragment := append([]string{HeaderFragment, "card"}, ann...)
	id := h.ask("s1", "r1", nameForm())

	page := h.getPage(nil, "", ann...)
	require.Equal(t, http.StatusOK, page.StatusCode)
	action, token := answerForm(t, page.doc(t), id)
	push := h.openPush("?since="+seqID(h.in), ann...)
	// pushed is the pushed copy of the card at version v.
	pushed := func(v string) string {
		t.Helper()
		for {
			m := push.next()
			if m.Event != "card" {
				continue
			}
			if got, _ := cardMsg(t, m).Attr("data-version"); got == v {
				return m.Data
			}
		}
	}
	versionOf := func(html string) string {
		t.Helper()
		m := regexp.MustCompile(`data-version="(\d+)"`).FindStringSubmatch(html)
		require.NotNil(t, m, "a card: %.200q", html)
		return m[1]
	}

	post := map[string][]string{"token": {token}, "f0": {"svc"}}
	sent := h.postForm(nil, h.relative(action), post, asFragment...)
	require.Equal(t, http.StatusOK, sent.StatusCode, "%s", sent.body)
	assert.Equal(t, withoutTokens(pushed(versionOf(sent.body))), withoutTokens(sent.body), "the card in flight, posted and pushed")

	// The agent takes it and records it: the card settles, answered here
	// by Ann. The same form posted again answers with the card as it now is.
	subs := waitSubmissions(t, h, 1)
	h.in.SettleSubmission(id, subs[0].CommandID, inbox.SubmissionAccepted, "", "")
	h.emit(aep.Envelope{ID: "ans1", Type: "attention.answered", Session: "s1", Subject: "r1", Cause: subs[0].CommandID,
		Data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "svc"}}, "by": "aepforms/Ann", "via": aep.ViaControl}})
	again := h.postForm(nil, h.relative(action), post, asFragment...)
	require.Equal(t, http.StatusOK, again.StatusCode, "%s", again.body)
	assert.Contains(t, again.body, `data-settled="true"`)
	assert.Contains(t, again.body, "you (Ann)", "the operator reads their own answer as theirs")
	assert.Equal(t, withoutTokens(pushed(versionOf(again.body))), withoutTokens(again.body), "the settled card, posted and pushed")
}
