package web

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// resendingSubmitter is a fakeSubmitter that also sends owed answers
// again (Resender), recording which.
type resendingSubmitter struct {
	*fakeSubmitter
	mu    sync.Mutex
	again []string
}

func (r *resendingSubmitter) SendAgain(_ context.Context, commandID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.again = append(r.again, commandID)
	return nil
}

func (r *resendingSubmitter) sentAgain() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.again...)
}

// After no reply in time, "Send the same answer again" resends the owed
// command (never a new one), and a different answer is taken only from
// the form under "Answer differently", which names the answer it
// replaces; a post that does not is refused (409).
func TestOwedAnswerSendAgainAndAnswerDifferently(t *testing.T) {
	t.Parallel()
	rs := &resendingSubmitter{fakeSubmitter: &fakeSubmitter{}}
	h := newHarness(t, func(s *setup) { s.deps.Submitter = rs })
	id := h.ask("s1", "r1", replicasForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)
	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}, "f1": {"load"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "body %s", r.body)
	first := rs.all()[0].CommandID
	h.in.SettleSubmission(id, first, inbox.SubmissionSending, inbox.ReasonTimeout, "no ack")

	doc := h.getPage(nil, "").doc(t)
	card := doc.Find("#" + domID(id))
	again := card.Find(`form[data-testid="send-again-form"]`)
	require.Equal(t, 1, again.Length())
	againAction, _ := again.Attr("action")
	r = h.postForm(nil, h.relative(againAction), url.Values{"command": {"someone-else"}})
	assert.Equal(t, http.StatusSeeOther, r.StatusCode)
	assert.Empty(t, rs.sentAgain(), "only the card's owed answer is sent again")
	r = h.postForm(nil, h.relative(againAction), url.Values{"command": {first}})
	assert.Equal(t, http.StatusSeeOther, r.StatusCode)
	assert.Equal(t, []string{first}, rs.sentAgain(), "the same command again")
	assert.Len(t, rs.all(), 1, "no new command")

	action, token = answerForm(t, doc, id)
	replaces, _ := card.Find(`details[data-testid="answer-differently"] input[name="replaces"]`).Attr("value")
	require.Equal(t, first, replaces)
	r = h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"5"}, "f1": {"load"}})
	assert.Equal(t, http.StatusConflict, r.StatusCode, "a second answer without naming the first: refused")
	assert.Len(t, rs.all(), 1)
	r = h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"5"}, "f1": {"load"}, "replaces": {replaces}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "answer differently; body %s", r.body)
	subs := rs.all()
	require.Len(t, subs, 2, "a second command for the same request")
	assert.NotEqual(t, first, subs[1].CommandID)
	c, _ := h.in.Card(id)
	assert.Equal(t, subs[1].CommandID, c.Submission.CommandID)
}

// An answer owed because its relay connection ended (it is sent again
// as soon as a connection is back) offers no "Send again", and a
// hand-made post of it sends nothing: what the card offers is what the
// server takes. "Answer differently" stays offered.
func TestRelayLostAnswerIsNotSentAgainByHand(t *testing.T) {
	t.Parallel()
	rs := &resendingSubmitter{fakeSubmitter: &fakeSubmitter{}}
	h := newHarness(t, func(s *setup) { s.deps.Submitter = rs })
	id := h.ask("s1", "r1", replicasForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)
	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}, "f1": {"load"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "body %s", r.body)
	first := rs.all()[0].CommandID
	h.in.SettleSubmission(id, first, inbox.SubmissionSending, inbox.ReasonRelayLost, "relay gone")

	card := h.getPage(nil, "").doc(t).Find("#" + domID(id))
	assert.Equal(t, 0, card.Find(`form[data-testid="send-again-form"]`).Length(), "not offered")
	assert.Equal(t, 1, card.Find(`details[data-testid="answer-differently"]`).Length())
	r = h.postForm(nil, "cards/"+url.PathEscape(string(id))+"/again", url.Values{"command": {first}})
	assert.Equal(t, http.StatusSeeOther, r.StatusCode)
	assert.Empty(t, rs.sentAgain(), "not offered, not taken")
}
