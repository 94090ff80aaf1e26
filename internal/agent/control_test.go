package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestCancelStandbyRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby}, nil)
	h.take()
	s := h.session(ScenarioStandby)
	cmd := command{typ: "control.cancel", session: s.ID, run: s.Run, data: map[string]any{"scope": "run", "reason": "stuck"}}.event(t)
	evs := h.send(cmd)
	require.Equal(t, []string{"control.accepted", "run.cancelled", "run.started"}, types(evs))
	assert.Equal(t, cmd.ID(), evs[0].Cause())
	assert.Equal(t, cmd.ID(), evs[1].Cause(), "run.cancelled.cause = the command")
	assert.Equal(t, s.Run, evs[1].Run())
	assert.Equal(t, map[string]any{"by": "control", "reason": "stuck", "duration_ms": 0.0}, data(t, evs[1]))

	after := h.session(ScenarioStandby)
	assert.True(t, after.Open, "standby stays open")
	assert.NotEqual(t, s.Run, after.Run, "with a new running run")

	again := h.send(cmd)
	require.Len(t, again, 1)
	assert.Equal(t, evs[0].Raw(), again[0].Raw(), "a retried cancel is re-acked, not re-executed")

	// Without a run attribute, scope run cancels the current run.
	evs = h.send(command{typ: "control.cancel", session: s.ID, data: map[string]any{"scope": "run"}}.event(t))
	require.Equal(t, []string{"control.accepted", "run.cancelled", "run.started"}, types(evs))
	assert.Equal(t, after.Run, evs[1].Run())
}

func TestCancelDismissesPendingRequests(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{"run", "session"} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, []string{ScenarioDeploy}, nil)
			h.take()
			s, q := h.pendingRequest(ScenarioDeploy)
			cmd := command{typ: "control.cancel", session: s.ID, data: map[string]any{"scope": scope}}.event(t)
			evs := h.send(cmd)
			require.Equal(t, []string{"control.accepted", "attention.resolved", "run.cancelled", "session.ended"}, types(evs))
			assert.Equal(t, q.ID, evs[1].Subject())
			assert.Equal(t, cmd.ID(), evs[1].Cause())
			assert.Equal(t, "dismissed", data(t, evs[1])["resolution"])
			reason := data(t, evs[3])["reason"]
			if scope == "session" {
				assert.Equal(t, "killed", reason)
			} else {
				assert.Equal(t, "normal", reason)
			}
			assert.Equal(t, StateDismissed, h.session(ScenarioDeploy).Requests[0].State)

			// Answering the dismissed request is refused.
			evs = h.send(command{typ: "control.attention.respond", session: s.ID, subject: q.ID,
				data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}}.event(t))
			require.Equal(t, []string{"control.rejected"}, types(evs))
			assert.Equal(t, aep.ReasonRefused, data(t, evs[0])["reason"])
		})
	}
}

func TestNeverAckRecordsButDoesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioDeploy}, func(c *Config) { c.NeverAck = true })
	h.take()
	cmd := h.respond(ScenarioDeploy, map[string]any{"values": map[string]any{"name": "x"}})
	assert.Empty(t, h.send(cmd))
	assert.Empty(t, h.send(cmd))
	rec := h.a.Record()
	require.Len(t, rec, 1)
	assert.Equal(t, OutcomeIgnored, rec[0].Decision.Outcome)
	assert.Equal(t, 2, rec[0].Count)
	assert.Nil(t, rec[0].Ack)
	_, q := h.pendingRequest(ScenarioDeploy)
	assert.Equal(t, StatePending, q.State)
}

func TestRejectRateAlternatesRefusedAndBusy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioDeploy}, func(c *Config) {
		c.RejectRate = 0.5
		c.Rand = func() float64 { return 0.25 }
	})
	h.take()
	var reasons []any
	for range 3 {
		evs := h.send(h.respond(ScenarioDeploy, map[string]any{"values": map[string]any{"name": "x"}}))
		require.Equal(t, []string{"control.rejected"}, types(evs))
		reasons = append(reasons, data(t, evs[0])["reason"])
	}
	assert.Equal(t, []any{"refused", "busy", "refused"}, reasons)
	_, q := h.pendingRequest(ScenarioDeploy)
	assert.Equal(t, StatePending, q.State)

	h.a.cfg.Rand = func() float64 { return 0.75 }
	evs := h.send(h.respond(ScenarioDeploy, map[string]any{"values": map[string]any{"name": "x"}}))
	assert.Equal(t, "control.accepted", evs[0].Type(), "above the rate the answer is taken")
}

func TestCommandForUnknownSessionIsDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby}, nil)
	h.take()
	evs := h.send(command{typ: "control.cancel", session: "someone-else", data: map[string]any{"scope": "run"}}.event(t))
	assert.Empty(t, evs)
	rec := h.a.Record()
	require.Len(t, rec, 1)
	assert.Equal(t, OutcomeDropped, rec[0].Decision.Outcome)
}

func TestRecordForgetsBeyondMaxCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby}, func(c *Config) { c.MaxCommands = 2 })
	h.take()
	s := h.session(ScenarioStandby)
	var cmds []*aep.Event
	for range 3 {
		c := command{typ: "control.pause", session: s.ID, data: map[string]any{}}.event(t)
		cmds = append(cmds, c)
		h.send(c)
	}
	rec := h.a.Record()
	require.Len(t, rec, 2)
	assert.Equal(t, cmds[1].ID(), rec[0].ID)
	// The forgotten command is a new command again (AEP-0004 §3).
	evs := h.send(cmds[0])
	require.Len(t, evs, 1)
	assert.Equal(t, "control.rejected", evs[0].Type())
}
