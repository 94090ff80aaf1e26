//go:build unix

package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/crashpoint"
)

// The default setup's restart: serve with its embedded relay, as a
// process, stopped and started again on the same journal and the same
// relay port. The agent is outside it (in this process), so it outlives
// serve, loses its relay with it and comes back on its own schedule.

// askMany starts an agent on s's relay asking n permission questions,
// one session each, and returns it with the sessions once every question
// is a card with its form read.
func askMany(t *testing.T, s *stack, n int, o agentOptions) (*agent.Agent, []string, map[string]*htmlForm) {
	t.Helper()
	o.scenarios = slices.Repeat([]string{agent.ScenarioPermission}, n)
	ag := s.startAgent(t, o)
	sessions := awaitAsked(t, ag, n)
	forms := make(map[string]*htmlForm, n)
	for _, sess := range sessions {
		_, _, forms[sess] = s.openForm(t, sess)
	}
	return ag, sessions, forms
}

// awaitAsked waits until the agent has n requests pending and delivered,
// and returns their sessions.
func awaitAsked(t *testing.T, ag *agent.Agent, n int) []string {
	t.Helper()
	var sessions []string
	ctx, cancel := context.WithTimeout(t.Context(), stackWait)
	defer cancel()
	require.NoError(t, ag.Until(ctx, func() bool {
		sessions = sessions[:0]
		for _, ss := range ag.Sessions() {
			for _, q := range ss.Requests {
				if q.State == agent.StatePending && q.Delivered {
					sessions = append(sessions, ss.ID)
				}
			}
		}
		return len(sessions) == n
	}), "the agent asked %d questions, want %d", len(sessions), n)
	return sessions
}

// assertExecutedOnce waits until the agent executed one command for each
// session, and checks that it is the only one, accepted, with the
// journaled bytes and the operator's "Deny"; then that every card is
// answered as this UI's own and that History lists exactly those
// commands, accepted and recorded.
func assertExecutedOnce(t *testing.T, s *stack, ag *agent.Agent, sessions []string) {
	t.Helper()
	var ids []string
	for _, sess := range sessions {
		got := awaitCommands(t, ag, sess, 1, nil)
		require.Len(t, got, 1, "session %s: one command id, never two: %+v", sess, got)
		assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "session %s executed: %+v", sess, got[0].Decision)
		assert.Equal(t, 0, got[0].Differing, "session %s: every transmission the journaled bytes", sess)
		assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw))
		ids = append(ids, got[0].ID)
	}
	for _, sess := range sessions {
		card := s.awaitCard(t, sess, "the answer recorded by the agent", func(c *goquery.Selection) bool {
			return c.AttrOr("data-state", "") == "answered"
		})
		assert.NotContains(t, card.Find(`[data-testid="state-text"]`).Text(), "elsewhere", "session %s: this UI's own answer", sess)
	}
	for _, sess := range sessions {
		assert.Len(t, commandsTo(ag, sess), 1, "session %s: still one command", sess)
	}
	slices.Sort(ids)
	var rows []historyRow
	awaitHistory(t, s, func(got []historyRow) bool {
		rows = got
		recorded := 0
		for _, r := range rows {
			if r.Recorded {
				recorded++
			}
		}
		return recorded >= len(sessions)
	})
	require.Len(t, rows, len(sessions), "one History entry per answer: %+v", rows)
	var accepted []string
	for _, r := range rows {
		assert.Equal(t, "accepted", r.State, "History of %s: %+v", r.CommandID, r)
		assert.True(t, r.Recorded, "History of %s: recorded by the agent: %+v", r.CommandID, r)
		accepted = append(accepted, r.CommandID)
	}
	slices.Sort(accepted)
	assert.Equal(t, ids, accepted, "History's commands are the ones the agent executed")
}

// agentLate is how long the agent takes to come back to a restarted
// relay: 5 s, well past the 1 s of quiet after which a
// freshly started relay's history counted as read. It is the fault, not
// a wait for an event.
const agentLate = 5 * time.Second

// The first fault: serve with its embedded relay takes 20
// answers (each journaled, each 303), none of whose commands leaves (the
// respond path is held before its first write), and is killed with
// SIGKILL. Started again on the same journal and relay port, its relay
// knows no session; the agent comes back 5 s later and asks its open
// requests again. Every answer is sent then, under its own command id
// and bytes, and executed once; every card says answered, as History
// does.
func TestEmbeddedRelayRestartSendsOwedAnswersWhenTheAgentReturns(t *testing.T) {
	t.Parallel()
	const n = 20
	r := newEmbeddedRig(t, buildCrashBinary(t, t.TempDir()))
	first, proc := r.serve(t, "serve (held before the first write)", crashpoint.UnsentHeld)
	ag, sessions, forms := askMany(t, first, n, agentOptions{reconnectAfter: agentLate})
	for _, sess := range sessions {
		status, err := first.post(t, forms[sess], forms[sess].button(t, "Deny"))
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "session %s: the answer is journaled", sess)
	}
	proc.killed(t)
	for _, sess := range sessions {
		require.Empty(t, commandsTo(ag, sess), "session %s: nothing left before the kill", sess)
	}

	second, _ := r.serve(t, "serve (restarted)", "")
	assertExecutedOnce(t, second, ag, sessions)
}

// SIGTERM to serve with its embedded relay, 20 answers in flight to a
// stalled agent (their commands reached it and were dropped unread), and
// a client of the relay that stopped reading (a process stopped with
// SIGSTOP, which never answers the relay's close): serve exits within
// 1 s, as it does with an external relay. Started
// again, it sends those answers again once the agent is back (5 s
// later), each executed once.
func TestEmbeddedRelaySIGTERMIsQuickAndLosesNothing(t *testing.T) {
	t.Parallel()
	const n = 20
	r := newEmbeddedRig(t, buildCrashBinary(t, t.TempDir()))
	first, proc := r.serve(t, "serve", "", "--ack-window", "5m")
	gate := newCommandGate()
	ag, sessions, forms := askMany(t, first, n, agentOptions{reconnectAfter: agentLate, gate: gate})
	resume := gate.stall()
	for _, sess := range sessions {
		status, err := first.post(t, forms[sess], forms[sess].button(t, "Deny"))
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "session %s", sess)
	}
	ctx, cancel := context.WithTimeout(t.Context(), stackWait)
	defer cancel()
	dropped, err := gate.awaitDropped(ctx, n)
	require.NoError(t, err, "every answer's command reached the stalled agent (%d of %d)", dropped, n)

	first.dialRelay(t, ctx, "stopped") // never read again

	asked := time.Now()
	require.NoError(t, proc.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-proc.done:
	case <-time.After(stackWait):
		t.Fatalf("serve did not exit within %v of SIGTERM", stackWait)
	}
	took := time.Since(asked)
	assert.Less(t, took, time.Second, "serve's exit after SIGTERM")
	assert.NoError(t, proc.err, "a clean exit")
	t.Logf("serve exited %v after SIGTERM", took)

	resume()
	second, _ := r.serve(t, "serve (restarted)", "", "--ack-window", "5m")
	assertExecutedOnce(t, second, ag, sessions)
}

// The second fault: the relay restarts (empty, on the same port)
// and the agent is not back on it yet; 10 answers posted meanwhile reach
// a relay with no route to their agent (no-route). None is given up:
// each card says it waits for the agent to reconnect, and once the agent
// is back every answer is executed once, cards and History agreeing.
func TestAnswersPostedBeforeTheAgentReturnsToARestartedRelay(t *testing.T) {
	t.Parallel()
	const n = 10
	s := startStack(t, stackOptions{})
	gate := startGate(t, strings.TrimPrefix(s.relayURL, "http://"))
	ag, sessions, forms := askMany(t, s, n, agentOptions{relayURL: gate.url()})
	s.awaitRespond(t, true)

	gate.cut() // the agent stays away until reopen
	s.restartRelay(t, func() { s.awaitRespond(t, false) })
	s.awaitRespond(t, true)
	for _, sess := range sessions {
		status, err := s.post(t, forms[sess], forms[sess].button(t, "Deny"))
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "session %s", sess)
	}
	for _, sess := range sessions {
		card := s.awaitCard(t, sess, "the answer waiting for its agent", func(c *goquery.Selection) bool {
			return strings.Contains(c.Find(`[data-testid="state-text"]`).Text(), "Waiting for the agent to reconnect")
		})
		assert.Equal(t, "queued", stateOf(card), "session %s: kept, to be sent", sess)
		assert.Empty(t, commandsTo(ag, sess), "session %s: nothing reached the agent", sess)
	}

	gate.reopen()
	assertExecutedOnce(t, s, ag, sessions)
}
