package agent

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestExpiringFormTimesOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioExpiring}, func(c *Config) { c.ExpiresIn = 90 * time.Second })
	evs := h.take()
	req := decodeRequest(t, evs[2])
	at, err := time.Parse(time.RFC3339, req.ExpiresAt)
	require.NoError(t, err)
	assert.Equal(t, h.clk.Now().Add(90*time.Second), at, "expires_at 90 s ahead")

	h.advance(89 * time.Second)
	assert.Empty(t, h.take(), "nothing before expiry")
	h.advance(time.Second)
	evs = h.take()
	require.Equal(t, []string{"attention.timeout", "run.finished", "session.ended"}, types(evs))
	assert.Equal(t, map[string]any{"after_ms": 90000.0}, data(t, evs[0]))
	q := h.session(ScenarioExpiring).Requests[0]
	assert.Equal(t, q.ID, evs[0].Subject())
	assert.Equal(t, q.ID, evs[0].Cause())
	assert.Equal(t, StateTimedOut, q.State)

	// A late answer is refused.
	s := h.session(ScenarioExpiring)
	late := h.send(command{typ: "control.attention.respond", session: s.ID, subject: q.ID,
		data: map[string]any{"answer": map[string]any{"values": map[string]any{"window": "2200"}}}}.event(t))
	require.Equal(t, []string{"control.rejected"}, types(late))
	assert.Equal(t, "refused", data(t, late[0])["reason"])
}

func TestExpiringFormAskedAgainWhenReaskExpired(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioExpiring}, func(c *Config) {
		c.ExpiresIn = time.Minute
		c.ReaskExpired = true
	})
	h.take()
	for round := range 2 {
		h.advance(time.Minute)
		evs := h.take()
		require.Equal(t, []string{"attention.timeout", "run.finished", "run.started", "attention.requested"}, types(evs), "round %d", round)
		assert.NotEqual(t, evs[1].Run(), evs[2].Run(), "asked again in a new run")
		assert.Equal(t, evs[2].Run(), evs[3].Run())
	}
	s := h.session(ScenarioExpiring)
	assert.True(t, s.Open)
	assert.Len(t, s.Runs, 3)
	_, q := h.pendingRequest(ScenarioExpiring)
	assert.Equal(t, s.Run, q.Run)

	// Answered, it is not asked again.
	evs := h.send(h.respond(ScenarioExpiring, map[string]any{"values": map[string]any{"window": "0200"}}))
	require.Equal(t, []string{"control.accepted", "attention.answered", "attention.resolved", "run.finished", "session.ended"}, types(evs))
	h.advance(time.Minute)
	assert.Empty(t, h.take())
}

func TestOOBFormResolvedByTheAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioOOB}, func(c *Config) { c.OOBResolveAfter = 20 * time.Second })
	evs := h.take()
	assert.Equal(t, []string{aep.ViaOOB}, decodeRequest(t, evs[2]).RespondVia)
	h.advance(20 * time.Second)
	evs = h.take()
	require.Equal(t, []string{"attention.answered", "attention.resolved", "run.finished", "session.ended"}, types(evs))
	q := h.session(ScenarioOOB).Requests[0]
	var ad aep.Answered
	require.NoError(t, evs[0].DecodeData(&ad))
	assert.Equal(t, aep.ViaOOB, ad.Via)
	assert.Equal(t, oobResponder, ad.By)
	assert.Equal(t, aep.Values{"suites": []any{"unit", "integration"}}, ad.Answer.Values)
	assert.Equal(t, q.ID, evs[0].Cause())
	assert.Equal(t, evs[0].ID(), evs[1].Cause(), "resolved follows the answer")
	assert.Equal(t, 20000.0, data(t, evs[1])["latency_ms"])
}

func TestEveryAsksOneMoreQuestion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby}, func(c *Config) {
		c.Every = 30 * time.Second
		c.MaxExtra = 2
	})
	h.take()
	names := RepeatableScenarios()
	for i := range 2 {
		h.advance(30 * time.Second)
		evs := h.take()
		require.Equal(t, []string{"session.started", "run.started", "attention.requested"}, withoutTool(types(evs)))
		ss := h.a.Sessions()
		last := ss[len(ss)-1]
		assert.True(t, last.Extra)
		assert.Equal(t, names[i], last.Scenario, "rotates through the repeatable scenarios")
	}
	// At MaxExtra pending, the next tick dismisses the oldest, then asks:
	// never more than MaxExtra pending, however long the demo runs.
	oldest := h.a.Sessions()[1]
	// (As many ticks as bring the rotation back to names[0], the deploy
	// form, answered below.)
	for i := range len(names) - 1 {
		h.advance(30 * time.Second)
		evs := h.take()
		require.Equal(t, []string{"attention.resolved", "run.finished", "session.ended", "session.started", "run.started", "attention.requested"}, withoutTool(types(evs)), "tick %d", i)
		assert.Equal(t, aep.ResolutionDismissed, data(t, evs[0])["resolution"])
		if i == 0 {
			assert.Equal(t, oldest.Requests[0].ID, evs[0].Subject(), "the oldest goes")
			assert.Equal(t, oldest.ID, evs[0].Session())
		}
		assert.Equal(t, 2, pendingExtra(h.a), "tick %d", i)
	}

	// Answering one frees a slot: the next tick dismisses nothing.
	ss := h.a.Sessions()
	last := ss[len(ss)-1]
	require.Equal(t, names[0], last.Scenario)
	cmd := command{typ: "control.attention.respond", session: last.ID, subject: last.Requests[0].ID,
		data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}}.event(t)
	require.Equal(t, "control.accepted", h.send(cmd)[0].Type())
	h.take()
	h.advance(30 * time.Second)
	assert.Equal(t, []string{"session.started", "run.started", "attention.requested"}, types(h.take()))
	assert.Equal(t, 2, pendingExtra(h.a))
}

// pendingExtra counts the pending requests asked by Every.
func pendingExtra(a *Agent) int {
	n := 0
	for _, s := range a.Sessions() {
		for _, q := range s.Requests {
			if s.Extra && q.State == StatePending {
				n++
			}
		}
	}
	return n
}

func TestEveryZeroNeverAsks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby}, nil)
	h.take()
	h.advance(time.Hour)
	assert.Empty(t, h.take())
}

func TestShutdownClosesEverySession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby, ScenarioDeploy}, nil)
	h.take()
	_, q := h.pendingRequest(ScenarioDeploy)
	h.a.mu.Lock()
	h.a.stopping = true
	h.a.closeAllLocked(h.clk.add(time.Second))
	h.a.mu.Unlock()
	evs := h.take()
	require.Equal(t, []string{
		"run.cancelled", "session.ended", // standby
		"attention.resolved", "run.cancelled", "session.ended", // deploy
	}, types(evs))
	assert.Equal(t, "shutdown", data(t, evs[0])["by"])
	assert.Equal(t, q.ID, evs[2].Subject())
	assert.Equal(t, "dismissed", data(t, evs[2])["resolution"])
	for _, s := range h.a.Sessions() {
		assert.False(t, s.Open)
	}
}

func TestReclaimResendsPendingRequestsAndLastEvent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby, ScenarioDeploy, ScenarioPermission}, nil)
	first := h.take()
	h.a.mu.Lock()
	got := h.a.reclaimLocked()
	h.a.mu.Unlock()

	byType := func(session, typ string) *aep.Event {
		for _, ev := range first {
			if ev.Session() == session && ev.Type() == typ {
				return ev
			}
		}
		t.Fatalf("no %s in %s", typ, session)
		return nil
	}
	standby, deploy, perm := h.session(ScenarioStandby), h.session(ScenarioDeploy), h.session(ScenarioPermission)
	want := []*aep.Event{
		byType(standby.ID, "run.started"),
		byType(deploy.ID, "attention.requested"),
		byType(perm.ID, "attention.requested"),
	}
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Raw(), got[i].Raw(), "byte-identical re-claim %d", i)
	}

	// An ended session is not re-claimed; a session whose events are still
	// queued is claimed by the queue.
	h.send(h.respond(ScenarioPermission, map[string]any{"option": "deny"}))
	h.a.mu.Lock()
	h.a.openLocked(h.clk.Now(), h.a.scenarios[0], false)
	got = h.a.reclaimLocked()
	h.a.mu.Unlock()
	assert.Len(t, got, 2, "standby and deploy only")
}

func TestHandleFrame(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby}, nil)
	h.take()
	assert.JSONEq(t, `{"type":"pong","t":12345}`, string(h.a.handleFrame([]byte(`{"type":"ping","t":12345}`))))
	assert.JSONEq(t, `{"type":"pong","t":"abc"}`, string(h.a.handleFrame([]byte(`{"type":"ping","t":"abc"}`))))
	for _, f := range []string{
		`{"type":"subscribed","id":"x"}`,
		`{"type":"closing","reason":"bye","delivered":[]}`,
		`{"type":"error","code":"no-route","cause":"x"}`,
		`{"type":"future-frame","x":1}`,
		`not json`,
		`{"aep":"0.1","id":"A1","type":"control.accepted","source":"aep://x","agent":"x","session":"s","time":"2026-07-03T10:00:00Z"}`,
	} {
		assert.Nil(t, h.a.handleFrame([]byte(f)), "frame %s", f)
	}
	assert.Empty(t, h.take(), "no event for frames and non-command events")
	assert.Empty(t, h.a.Record())
}

func TestHelloDeclaresControl(t *testing.T) {
	t.Parallel()
	a := New(Config{Agent: "demo", Instance: "i/1", AckWindow: 3 * time.Second, Capture: aep.CaptureRedacted})
	var hl map[string]any
	require.NoError(t, json.Unmarshal(a.helloFrame(), &hl))
	assert.Equal(t, "hello", hl["type"])
	assert.Equal(t, []any{"0.1"}, hl["versions"])
	assert.Equal(t, "emitter", hl["role"])
	assert.Equal(t, map[string]any{"agent": "demo", "instance": "i/1"}, hl["identity"])
	caps := hl["capabilities"].(map[string]any)
	assert.Equal(t, map[string]any{
		"accepts":       []any{"control.attention.respond", "control.cancel"},
		"ack_window_ms": 3000.0,
	}, caps["control"])
	assert.Equal(t, []any{"none", "metadata", "redacted"}, caps["capture"])
}

func TestNewSessionIDsPerProcess(t *testing.T) {
	t.Parallel()
	a := newHarness(t, []string{scenarioAll}, nil)
	b := newHarness(t, []string{scenarioAll}, nil)
	seen := map[string]bool{}
	for _, h := range []*harness{a, b} {
		for _, s := range h.a.Sessions() {
			assert.False(t, seen[s.ID], "session id %s reused", s.ID)
			seen[s.ID] = true
		}
	}
	assert.Len(t, seen, 2*len(AllScenarios()))
}

func TestEndedSessionsForgottenBeyondMaxSessions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby, ScenarioPermission}, func(c *Config) {
		c.MaxSessions = 2
		c.Every = time.Second
	})
	h.take()
	perm := h.session(ScenarioPermission)
	h.send(h.respond(ScenarioPermission, map[string]any{"option": "allow"}))
	h.advance(time.Second) // a third session: the ended permission one goes
	ss := h.a.Sessions()
	require.Len(t, ss, 2)
	assert.Equal(t, ScenarioStandby, ss[0].Scenario, "open sessions are never forgotten")
	assert.NotEqual(t, perm.ID, ss[1].ID)

	h.take()
	evs := h.send(command{typ: "control.attention.respond", session: perm.ID, subject: perm.Requests[0].ID,
		data: map[string]any{"answer": map[string]any{"option": "deny"}}}.event(t))
	assert.Empty(t, evs)
	rec := h.a.Record()
	assert.Equal(t, OutcomeDropped, rec[len(rec)-1].Decision.Outcome)
}

// withoutTool drops the tool.requested a permission request's session
// emits before it (its cause).
func withoutTool(ts []string) []string {
	return slices.DeleteFunc(ts, func(t string) bool { return t == "tool.requested" })
}
