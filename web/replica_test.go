package web

import (
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// A journal another replica shares: what it recorded for a card answers
// this replica's posts honestly. The same form posted there first is the
// same 303 here; another form while that answer is live is 409 (already
// on its way), never 503 (not recorded); and once the card settled, the
// form posted there is still a 303 here, not "already answered".
func TestAnswerPostedOnAnotherReplica(t *testing.T) {
	t.Parallel()
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "aepforms.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	h := newHarness(t, withInbox(func(o *inbox.Options) { o.Journal = j }))
	id := h.ask("s1", "r1", nameForm())
	key := inbox.RequestKey{Source: testSource, Session: "s1", RequestID: "r1"}
	elsewhere := func(cmd, token string) inbox.Submission {
		return inbox.Submission{Card: id, Key: key, Token: token, CommandID: cmd, State: inbox.SubmissionSending, At: testNow, By: "bob"}
	}
	// The other replica's post, journaled; this replica's feed has not
	// brought its command yet.
	require.NoError(t, j.Record(elsewhere("cmd-a", "tok-a")))
	post := func(token string) response {
		return h.postForm(nil, "cards/"+string(id)+"/answer", url.Values{"token": {token}, "f0": {"x"}})
	}

	r := post("tok-b")
	assert.Equal(t, http.StatusConflict, r.StatusCode, "another form while the other replica's answer is live")
	assert.Contains(t, r.body, "already on its way")
	assert.Empty(t, h.sub.all(), "nothing sent")

	r = post("tok-a")
	assert.Equal(t, http.StatusSeeOther, r.StatusCode, "the same form as on the other replica")
	assert.Empty(t, h.sub.all(), "nothing sent from here: the other replica sends it")
	card, ok := h.in.Card(id)
	require.True(t, ok)
	require.NotNil(t, card.Submission, "the card shows the other replica's answer")
	assert.Equal(t, "cmd-a", card.Submission.CommandID)

	// The other replica's answer is rejected, it posts again (tok-c), and
	// the agent records that answer: the card settles here.
	require.NoError(t, j.Settle("cmd-a", inbox.SubmissionRejected, "invalid", "", testNow.Add(time.Second)))
	require.NoError(t, j.Record(elsewhere("cmd-c", "tok-c")))
	h.lifecycle("s1", "r1", "attention.answered", map[string]any{"answer": map[string]any{"text": "x"}, "by": "bob"})
	card, _ = h.in.Card(id)
	require.Error(t, card.Closed(testNow), "settled")
	r = post("tok-c")
	assert.Equal(t, http.StatusSeeOther, r.StatusCode, "the form posted on the other replica, after the card settled")
	r = post("tok-never")
	assert.Equal(t, http.StatusConflict, r.StatusCode, "a form posted nowhere, on a settled card")
}
