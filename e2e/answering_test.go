package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// Two serves on one relay, each with its own journal (so its own command
// source): the first's answer, on its way to an agent that has not acked
// it, is shown on the second's card at once with what was sent, and the
// second's form is locked. A post on the second, from a form loaded
// before the first answered, is refused in words and sends nothing: the
// agent's record holds exactly one command, the first's.
func TestSecondServeShowsTheFirstsAnswerAndLocksTheForm(t *testing.T) {
	t.Parallel()
	r := newResumeStack(t)
	other := &resumeStack{base: r.base, home: t.TempDir()}
	other.db = filepath.Join(other.home, "journal", "aepforms.db")
	ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, neverAck: true})
	sess, req := askedRequest(t, ag, agent.ScenarioPermission)

	first, _ := r.serve(t, "ui (first)")
	second, _ := other.serve(t, "ui (second)")
	_, _, stale := second.openForm(t, sess.ID) // the second's form, before anyone answered
	_, _, f := first.openForm(t, sess.ID)
	posted := first.submit(t, f, f.button(t, "Deny"), "")
	require.Equal(t, http.StatusSeeOther, posted.status, "the first's answer post; body: %s", posted.body)
	sent := awaitCommands(t, ag, sess.ID, 1, nil)
	require.Len(t, sent, 1)
	require.Equal(t, agent.OutcomeIgnored, sent[0].Decision.Outcome, "the agent never acks: the answer stays in flight")

	card := second.awaitCard(t, sess.ID, "the first's answer on the second's card", inState("answering"))
	text := card.Find(`[data-testid="state-text"]`).Text()
	assert.Contains(t, text, uiAgent+" answered from another UI, waiting for the agent", "who answered, from where")
	assert.Contains(t, card.Find(`[data-testid="values"]`).Text(), "Deny", "what was sent")
	assert.Equal(t, "true", card.AttrOr("data-open", ""), "the question itself is still open")
	assert.Zero(t, card.Find(`form[data-testid="answer-form"]`).Length(), "no form while the first's answer is in flight")

	refused := second.submit(t, stale, stale.button(t, "Allow once"), "")
	assert.Equal(t, http.StatusConflict, refused.status, "the second's post is refused; body: %s", refused.body)
	require.NotNil(t, refused.doc, "the refusal is a page: %s", refused.body)
	summary := refused.doc.Find(`[data-testid="error-summary"]`).Text()
	assert.Contains(t, summary, "already answered this from another UI", "the refusal says why")
	assert.Contains(t, summary, "Nothing was sent.")

	got := commandsTo(ag, sess.ID)
	require.Len(t, got, 1, "exactly one command for the request: %+v", got)
	assert.Equal(t, sent[0].ID, got[0].ID)
	assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw), "the first's answer, not the second's")
	ev, err := aep.Decode(got[0].Raw)
	require.NoError(t, err)
	assert.Equal(t, req.ID, ev.Subject())
}

// When the agent rejects the first serve's answer, the second's form,
// locked while that answer was on its way, opens again, with a note that
// it was refused; an answer from the second then reaches the agent.
func TestSecondServeOpensAgainWhenTheFirstsAnswerIsRejected(t *testing.T) {
	t.Parallel()
	r := newResumeStack(t)
	other := &resumeStack{base: r.base, home: t.TempDir()}
	other.db = filepath.Join(other.home, "journal", "aepforms.db")
	cfg := agent.DefaultConfig()
	cfg.RelayURL, cfg.Token, cfg.Host = r.base.relayURL, r.base.token, "e2e.test"
	cfg.Scenarios, cfg.Every, cfg.DrainTimeout = []string{agent.ScenarioPermission}, 0, -1
	cfg.Backoff, cfg.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	cfg.RejectRate = 1 // every answer is refused
	ag := runAgent(t, r.base, "agent (rejects)", cfg)
	sess, _ := askedRequest(t, ag, agent.ScenarioPermission)

	first, _ := r.serve(t, "ui (first)")
	second, _ := other.serve(t, "ui (second)")
	_, _, f := first.openForm(t, sess.ID)
	posted := first.submit(t, f, f.button(t, "Deny"), "")
	require.Equal(t, http.StatusSeeOther, posted.status, "the first's answer post; body: %s", posted.body)
	sent := awaitCommands(t, ag, sess.ID, 1, nil)
	require.Equal(t, agent.OutcomeRejected, sent[0].Decision.Outcome, "the agent refused it: %+v", sent[0].Decision)

	card := second.awaitCard(t, sess.ID, "the second's form open again", func(c *goquery.Selection) bool {
		return strings.Contains(c.Find(`[data-testid="card-notice"]`).Text(), "was refused by the agent") &&
			c.Find(`form[data-testid="answer-form"]`).Length() == 1
	})
	assert.Contains(t, card.Find(`[data-testid="card-notice"]`).Text(), "An answer from "+uiAgent+" was refused by the agent.")
	_, _, f2 := second.openForm(t, sess.ID)
	posted = second.submit(t, f2, f2.button(t, "Allow once"), "")
	require.Equal(t, http.StatusSeeOther, posted.status, "the second's answer is taken; body: %s", posted.body)
	got := awaitCommands(t, ag, sess.ID, 2, nil)
	assert.Len(t, got, 2, "the first's refused command and the second's")
}
