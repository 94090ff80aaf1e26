package agent

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// harness drives an agent's state machine without a network: start opens
// the sessions, take pops what it queued (as if delivered), send hands it
// a command.
type harness struct {
	t   *testing.T
	a   *Agent
	clk *clock
}

func newHarness(t *testing.T, scenarios []string, mod func(*Config)) *harness {
	t.Helper()
	clk := &clock{now: time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)}
	cfg := Config{
		RelayURL:  "http://relay.test",
		Host:      "host-t",
		Instance:  "host-t/1",
		Scenarios: scenarios,
		Now:       clk.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	a := New(cfg)
	require.NoError(t, a.err)
	h := &harness{t: t, a: a, clk: clk}
	a.mu.Lock()
	a.startLocked(clk.Now())
	a.mu.Unlock()
	return h
}

// take returns the queued events and marks them delivered.
func (h *harness) take() []*aep.Event {
	h.t.Helper()
	var out []*aep.Event
	for {
		ev := h.a.peek()
		if ev == nil {
			return out
		}
		h.a.delivered(ev)
		out = append(out, ev)
	}
}

// advance moves the clock and runs what fell due.
func (h *harness) advance(d time.Duration) {
	now := h.clk.add(d)
	h.a.mu.Lock()
	h.a.runDueLocked(now)
	h.a.mu.Unlock()
}

// session returns the only session of scenario.
func (h *harness) session(scenario string) SessionInfo {
	h.t.Helper()
	var found []SessionInfo
	for _, s := range h.a.Sessions() {
		if s.Scenario == scenario {
			found = append(found, s)
		}
	}
	require.Len(h.t, found, 1, "sessions of scenario %s", scenario)
	return found[0]
}

// pendingRequest returns the pending request of the scenario's session.
func (h *harness) pendingRequest(scenario string) (SessionInfo, RequestInfo) {
	h.t.Helper()
	s := h.session(scenario)
	for _, q := range s.Requests {
		if q.State == StatePending {
			return s, q
		}
	}
	h.t.Fatalf("scenario %s has no pending request", scenario)
	return s, RequestInfo{}
}

// command is a command as a foreign sender builds it.
type command struct {
	id, typ, session, subject, run string
	data                           any
}

func (c command) event(t *testing.T) *aep.Event {
	t.Helper()
	if c.id == "" {
		c.id = ulid.Make().String()
	}
	ev, err := aep.Build(aep.Envelope{
		ID: c.id, Type: c.typ, Subject: c.subject, Cause: c.subject,
		Time: "2026-07-03T10:00:01.000Z", Source: "aep://host-b/agent/mission-control",
		Agent: "mission-control", Session: c.session, Run: c.run, Capture: "full", Data: c.data,
	})
	require.NoError(t, err)
	return ev
}

// send hands the command to the agent as a frame from the relay and
// returns what it queued in answer.
func (h *harness) send(ev *aep.Event) []*aep.Event {
	h.t.Helper()
	require.Nil(h.t, h.a.handleFrame(ev.Raw()), "a command gets no frame reply")
	return h.take()
}

// respond builds a control.attention.respond for the pending request of scenario.
func (h *harness) respond(scenario string, answer map[string]any) *aep.Event {
	h.t.Helper()
	s, q := h.pendingRequest(scenario)
	return command{typ: "control.attention.respond", session: s.ID, subject: q.ID, data: map[string]any{"answer": answer}}.event(h.t)
}

// types lists the events' types.
func types(evs []*aep.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type()
	}
	return out
}

// data decodes an event's data into a generic map.
func data(t *testing.T, ev *aep.Event) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(ev.Data(), &m))
	return m
}

// decodeRequest decodes attention.requested data.
func decodeRequest(t *testing.T, ev *aep.Event) aep.Request {
	t.Helper()
	var r aep.Request
	require.NoError(t, ev.DecodeData(&r))
	return r
}
