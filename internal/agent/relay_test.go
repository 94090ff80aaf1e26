package agent

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/aeptest"
	"github.com/aepforms/aepforms/internal/aep"
)

// These tests run the agent against the embedded relay in-process, over
// real WebSockets, with a foreign control sender on its own connection.

func TestRelayRespondLoop(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := runAgent(t, tr, []string{ScenarioDeploy}, nil)
	s, q, err := a.WaitRequest(waitCtx(t), ScenarioDeploy)
	require.NoError(t, err)

	snd := newSender(t, tr, s.ID)
	req := snd.event("attention.requested")
	assert.Equal(t, q.Event, req.Raw(), "the relay forwards the request byte-identically")

	cmd := snd.command("control.attention.respond", s.ID, q.ID, "", map[string]any{"answer": map[string]any{
		"values": map[string]any{"name": "billing-api", "staged": true, "regions": []any{"1", "3"}, "db": "MariaDB"},
	}})
	snd.writeRaw(cmd.Raw())
	evs := snd.eventsUntil("session.ended")
	var own []*aep.Event
	for _, ev := range evs {
		if ev.Source() == s.Source {
			own = append(own, ev)
		}
	}
	require.Equal(t, []string{"control.accepted", "attention.answered", "attention.resolved", "run.finished", "session.ended"}, types(own))
	assert.Equal(t, cmd.ID(), own[0].Cause())
	assert.Equal(t, q.ID, own[1].Subject())
	assert.Equal(t, cmd.ID(), own[1].Cause())
	var ad aep.Answered
	require.NoError(t, own[1].DecodeData(&ad))
	assert.Equal(t, "test-sender", ad.By)
	assert.Equal(t, "MariaDB", ad.Answer.Values["db"])

	rec := a.Record()
	require.Len(t, rec, 1)
	assert.Equal(t, cmd.Raw(), rec[0].Raw, "the command reached the agent byte-identically")
	assert.Equal(t, 1, rec[0].Count)
	assert.Equal(t, OutcomeAccepted, rec[0].Decision.Outcome)
	assert.Equal(t, own[0].Raw(), rec[0].Ack)
}

func TestRelayInvalidValuesNackedAndStillPending(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := runAgent(t, tr, []string{ScenarioDeploy}, nil)
	s, q, err := a.WaitRequest(waitCtx(t), ScenarioDeploy)
	require.NoError(t, err)
	snd := newSender(t, tr, s.ID)
	snd.event("attention.requested") // the relay has seen it, so the session is claimed

	cmd := snd.command("control.attention.respond", s.ID, q.ID, "", map[string]any{"answer": map[string]any{
		"values": map[string]any{"staged": true, "regions": []any{"7"}},
	}})
	snd.writeRaw(cmd.Raw())
	nack := snd.event("control.rejected")
	assert.Equal(t, cmd.ID(), nack.Cause())
	var rej aep.Rejected
	require.NoError(t, nack.DecodeData(&rej))
	assert.Equal(t, aep.ReasonInvalid, rej.Reason)
	assert.Contains(t, rej.Detail, `"name"`, "the detail names the missing field")
	assert.Contains(t, rej.Detail, `"regions"`, "and the field with a non-choice")

	_, q2, err := a.WaitRequest(waitCtx(t), ScenarioDeploy)
	require.NoError(t, err)
	assert.Equal(t, q.ID, q2.ID, "the request stays pending")
	for _, ev := range tr.history(t) {
		assert.NotContains(t, []string{"attention.answered", "attention.resolved"}, ev.Type(), "no outcome in the session's history")
	}
}

func TestRelayRetryReackedByteIdenticalExecutedOnce(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := runAgent(t, tr, []string{ScenarioPermission}, nil)
	s, q, err := a.WaitRequest(waitCtx(t), ScenarioPermission)
	require.NoError(t, err)
	snd := newSender(t, tr, s.ID)
	snd.event("attention.requested")

	cmd := snd.command("control.attention.respond", s.ID, q.ID, "", map[string]any{"answer": map[string]any{"option": "allow"}})
	snd.writeRaw(cmd.Raw())
	first := snd.event("control.accepted")
	snd.event("session.ended")

	snd.writeRaw(cmd.Raw())
	again := snd.event("control.accepted")
	assert.Equal(t, first.Raw(), again.Raw(), "the retry gets the recorded ack, byte-identical")

	require.NoError(t, a.Until(waitCtx(t), func() bool {
		r := a.Record()
		return len(r) == 1 && r[0].Count == 2
	}))
	rec := a.Record()[0]
	assert.Zero(t, rec.Differing, "the retry reused the id and the bytes")

	answered := 0
	for _, ev := range tr.history(t) {
		if ev.Type() == "attention.answered" {
			answered++
		}
	}
	assert.Equal(t, 1, answered, "executed once")
}

func TestRelayTimeoutPath(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := runAgent(t, tr, []string{ScenarioExpiring}, func(c *Config) {
		c.ExpiresIn = 200 * time.Millisecond
		c.ReaskExpired = true
	})
	s, q, err := a.WaitRequest(waitCtx(t), ScenarioExpiring)
	require.NoError(t, err)
	snd := newSender(t, tr, s.ID)

	to := snd.event("attention.timeout")
	assert.Equal(t, q.ID, to.Subject())
	var d aep.Timeout
	require.NoError(t, to.DecodeData(&d))
	require.NotNil(t, d.AfterMS)
	assert.GreaterOrEqual(t, *d.AfterMS, int64(200))

	again := snd.event("attention.requested")
	assert.NotEqual(t, q.ID, again.ID(), "asked again after it timed out")

	late := snd.command("control.attention.respond", s.ID, q.ID, "", map[string]any{"answer": map[string]any{"values": map[string]any{"window": "2200"}}})
	snd.writeRaw(late.Raw())
	nack := snd.event("control.rejected")
	assert.Equal(t, late.ID(), nack.Cause())
	assert.Equal(t, "refused", data(t, nack)["reason"], "a timed-out request is settled")
}

func TestRelayReconnectAfterRestart(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := runAgent(t, tr, []string{ScenarioStandby, ScenarioDeploy}, nil)
	s, q, err := a.WaitRequest(waitCtx(t), ScenarioDeploy)
	require.NoError(t, err)
	standby := a.Sessions()[0]
	require.Equal(t, ScenarioStandby, standby.Scenario)
	before := tr.history(t)
	high := map[string]int64{}
	for _, ev := range before {
		if seq, ok := ev.Seq(); ok && ev.Source() != "" {
			high[ev.Session()] = max(high[ev.Session()], seq)
		}
	}

	tr.restart()

	// The fresh relay learns the pending request again, byte-identical, and
	// routes commands to the agent: it owns its sessions again.
	snd := newSender(t, tr, s.ID)
	req := snd.event("attention.requested")
	assert.Equal(t, q.Event, req.Raw())

	cmd := snd.command("control.attention.respond", s.ID, q.ID, "", map[string]any{"answer": map[string]any{"values": map[string]any{"name": "after-restart"}}})
	snd.writeRaw(cmd.Raw())
	ack := snd.event("control.accepted")
	seq, _ := ack.Seq()
	assert.Greater(t, seq, high[s.ID], "seq carries on across the reconnect")

	cancelSnd := newSender(t, tr, standby.ID)
	cancelSnd.event("run.started") // re-claimed on the fresh relay
	cancel := cancelSnd.command("control.cancel", standby.ID, "", "", map[string]any{"scope": "run"})
	cancelSnd.writeRaw(cancel.Raw())
	cack := cancelSnd.event("control.accepted")
	cseq, _ := cack.Seq()
	assert.Greater(t, cseq, high[standby.ID], "the standby session was re-claimed without seq regression")

	// Across both relays the agent's stream keeps the stream rules.
	sc := aeptest.NewStreamChecker()
	for _, ev := range append(before, tr.history(t)...) {
		if ev.Source() == s.Source || ev.Source() == standby.Source {
			require.NoError(t, sc.Check(ev), "%s", ev.Raw())
		}
	}
}

// TestRelayStreamValidates runs every scenario, answers each form, probes
// the standby session, stops the agent, and validates everything the relay
// holds: envelope, payload schema, stream rules, capture honesty.
func TestRelayStreamValidates(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := New(Config{
		RelayURL: tr.url(), Token: testToken, Scenarios: []string{scenarioAll},
		ExpiresIn: 300 * time.Millisecond, OOBResolveAfter: 100 * time.Millisecond,
		Backoff: 20 * time.Millisecond,
	})
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	for name, answer := range validAnswers {
		if name == ScenarioExpiring {
			continue // left to time out
		}
		s, q, err := a.WaitRequest(waitCtx(t), name)
		require.NoError(t, err, name)
		snd := newSender(t, tr, s.ID)
		snd.event("attention.requested")
		cmd := snd.command("control.attention.respond", s.ID, q.ID, "", map[string]any{"answer": answer})
		snd.writeRaw(cmd.Raw())
		ack := snd.event("control.accepted")
		assert.Equal(t, cmd.ID(), ack.Cause(), name)
		snd.event("session.ended")
	}
	standby := a.Sessions()[0]
	snd := newSender(t, tr, standby.ID)
	snd.event("run.started")
	pause := snd.command("control.pause", standby.ID, "", "", map[string]any{})
	snd.writeRaw(pause.Raw())
	// The relay refuses on the target's behalf (it knows accepts): an error
	// frame, nothing in the session.
	f := snd.frame(func(f map[string]any) bool { return f["type"] == "error" && f["cause"] == pause.ID() })
	assert.Equal(t, "unsupported", f["code"])

	require.NoError(t, a.Until(waitCtx(t), func() bool {
		for _, s := range a.Sessions() {
			if s.Scenario == ScenarioOOB || s.Scenario == ScenarioExpiring {
				if s.Open {
					return false
				}
			}
		}
		return true
	}), "the oob form resolved and the expiring one timed out")

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}

	sc := aeptest.NewStreamChecker()
	ended := map[string]bool{}
	hist := tr.history(t)
	for _, ev := range hist {
		require.NoError(t, aeptest.ValidateEvent(ev), "%s", ev.Raw())
		require.NoError(t, sc.Check(ev), "%s", ev.Raw())
		assertCaptureHonest(t, ev)
		if ev.Type() == "session.ended" {
			ended[ev.Session()] = true
		}
	}
	for _, s := range a.Sessions() {
		assert.True(t, ended[s.ID], "%s ended on the relay (the drain delivered the shutdown events)", s.Scenario)
	}
	assert.Len(t, a.Record(), len(validAnswers)-1, "the pause never reached the agent")
}

func TestRelayWrongTokenStopsTheAgent(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := New(Config{RelayURL: tr.url(), Token: "wrong", Scenarios: []string{ScenarioStandby}})
	err := a.Run(waitCtx(t))
	assert.ErrorIs(t, err, ErrUnauthorized)
	assert.Empty(t, a.Sessions(), "nothing opened without a hello")
}

func TestRelayNeverAckRecordsTheCommand(t *testing.T) {
	t.Parallel()
	tr := startRelay(t)
	a := runAgent(t, tr, []string{ScenarioDeploy}, func(c *Config) { c.NeverAck = true })
	s, q, err := a.WaitRequest(waitCtx(t), ScenarioDeploy)
	require.NoError(t, err)
	snd := newSender(t, tr, s.ID)
	snd.event("attention.requested")
	cmd := snd.command("control.attention.respond", s.ID, q.ID, "", map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}})
	snd.writeRaw(cmd.Raw())
	require.NoError(t, a.Until(waitCtx(t), func() bool { return len(a.Record()) == 1 }))
	r := a.Record()[0]
	assert.Equal(t, OutcomeIgnored, r.Decision.Outcome)
	assert.True(t, bytes.Equal(cmd.Raw(), r.Raw))
	for _, ev := range tr.history(t) {
		assert.NotEqual(t, "control.accepted", ev.Type())
		assert.NotEqual(t, "control.rejected", ev.Type())
	}
}
