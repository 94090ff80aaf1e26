package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// The re-answer fault: the agent is stopped with an answer in
// flight; past the ack window the card says no reply came in time and
// offers no open form, only "Send the same answer again" and, explicitly,
// "Answer differently" (which says the first may still act). The
// operator answers differently; the agent, continued, runs the first
// answer and refuses the second (the question is settled). Each command
// has its own fate: History has the first accepted and recorded, the
// second rejected and never credited with the record, and the card is
// this UI's answer.
func TestAckTimeoutThenAnswerDifferently(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	gate := newCommandGate()
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, gate: gate})
	sess, req := askedRequest(t, ag, agent.ScenarioPermission)
	s.awaitRoster(t, sess.ID, true)
	_, _, f := s.openForm(t, sess.ID)
	s.awaitRespond(t, true)

	resume := gate.hold()
	first := s.submit(t, f, f.button(t, "Deny"), "")
	require.Equal(t, http.StatusSeeOther, first.status, "the first answer; body: %s", first.body)
	card := s.awaitCard(t, sess.ID, "no reply in time", func(c *goquery.Selection) bool {
		return strings.Contains(c.Find(`[data-testid="state-text"]`).Text(), "no reply from the agent in time")
	})
	assert.Equal(t, "sending", card.Find(`[data-testid="state"]`).AttrOr("data-state", ""), "owed, not failed")
	assert.Equal(t, 1, card.Find(`form[data-testid="send-again-form"]`).Length(), "the same answer can be sent again")
	diff := card.Find(`details[data-testid="answer-differently"]`)
	require.Equal(t, 1, diff.Length(), "a different answer only explicitly")
	assert.Contains(t, diff.Find(`[data-testid="differently-warning"]`).Text(), "may still reach the agent and act")
	assert.Zero(t, card.Find(`form[data-testid="answer-form"]`).Not(`details form`).Length(), "no open form outside it")

	_, _, g := s.openForm(t, sess.ID) // the form under "Answer differently"
	second := s.submit(t, g, g.button(t, "Allow once"), "")
	require.Equal(t, http.StatusSeeOther, second.status, "the different answer; body: %s", second.body)
	resume()

	got := awaitCommands(t, ag, sess.ID, 2, nil)
	require.Len(t, got, 2, "two commands, each its own: %+v", got)
	assert.Equal(t, req.ID, got[0].Subject)
	assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw), "the first posted is the first run")
	assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "%+v", got[0].Decision)
	assert.Equal(t, `{"option":"allow"}`, answerOf(t, got[1].Raw))
	assert.Equal(t, agent.OutcomeRejected, got[1].Decision.Outcome, "the question was settled: %+v", got[1].Decision)

	card = s.awaitCard(t, sess.ID, "the answer recorded", func(c *goquery.Selection) bool {
		return c.AttrOr("data-state", "") == "answered"
	})
	assert.NotContains(t, card.Find(`[data-testid="state-text"]`).Text(), "elsewhere", "the record is this UI's first answer")

	byID := map[string]historyRow{}
	awaitHistory(t, s, func(rows []historyRow) bool {
		clear(byID)
		for _, r := range rows {
			byID[r.CommandID] = r
		}
		return byID[got[0].ID].Recorded && byID[got[1].ID].State == "rejected"
	})
	require.Len(t, byID, 2, "one History entry per command: %+v", byID)
	assert.Equal(t, "accepted", byID[got[0].ID].State, "the answer the agent ran")
	assert.True(t, byID[got[0].ID].Recorded, "is the one marked recorded")
	assert.Equal(t, "rejected", byID[got[1].ID].State, "the answer the agent refused")
	assert.False(t, byID[got[1].ID].Recorded, "is never credited with the record")
}

// awaitHistory reads History until done holds for its rows, every few
// milliseconds, with a deadline: the journal is written off the inbox
// lock, after the card's change is pushed, so no event marks the moment.
func awaitHistory(t *testing.T, s *stack, done func([]historyRow) bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(stackWait)
	for !done(historyRows(t, s)) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("History never showed what was expected within %v: %+v", stackWait, historyRows(t, s))
		}
	}
}
