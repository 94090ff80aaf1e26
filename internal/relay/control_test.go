package relay_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/relay"
)

// fakeTarget is a control-capable emitter: it claims a session by
// emitting a sequenced event and records every command it receives.
type fakeTarget struct {
	*wsClient
}

func (tr *testRelay) target(t *testing.T, session string, accepts ...string) *fakeTarget {
	t.Helper()
	w := tr.dial(t)
	h := hello("emitter")
	h["identity"] = map[string]any{"agent": "target", "instance": "t/1"}
	if accepts != nil {
		h["capabilities"] = map[string]any{"control": map[string]any{"accepts": accepts, "ack_window_ms": 10000}}
	}
	w.send(t, h)
	w.expect(t, "hello")
	claim := ev(t, "session.started", session, 0, withSource("aep://target/agent/target/session/"+session))
	w.send(t, claim)
	// The claim is in once the relay has stored the event.
	s := tr.stream(t, url.Values{"from": {"all"}, "filter": {`{"id":"` + idOf(t, claim) + `"}`}}, nil)
	s.nextEvent(t)
	return &fakeTarget{w}
}

// command builds a control.attention.respond from a sender.
func command(t *testing.T, session string, opts ...func(*aep.Envelope)) []byte {
	t.Helper()
	opts = append([]func(*aep.Envelope){
		withSource("aep://ui/agent/operator"), withSubject("req-1"),
		withData(map[string]any{"answer": map[string]any{"option": "yes"}}),
	}, opts...)
	return ev(t, "control.attention.respond", session, 0, opts...)
}

// refused asserts the sender gets a cause-matched error frame with code.
func refused(t *testing.T, sender *wsClient, cmd []byte, code string) {
	t.Helper()
	f := sender.expect(t, "error")
	assert.Equal(t, code, f.str("code"))
	assert.Equal(t, idOf(t, cmd), f.str("cause"), "the refusal's cause is the command id")
	assert.NotEmpty(t, f.str("detail"))
}

// sessionHistory returns the ids a replay of session holds.
func (tr *testRelay) sessionHistory(t *testing.T, session string) []string {
	t.Helper()
	events, _ := tr.history(t, url.Values{"from": {"all"}, "filter": {`{"session":"` + session + `"}`}})
	return ids(t, events)
}

// noFrame asserts nothing arrives at w within a short grace period. It is
// used only after a later, ordered frame proved the relay processed the
// command, so the grace period is not what the verdict waits on.
func noFrame(t *testing.T, w *wsClient, why string) {
	t.Helper()
	select {
	case b := <-w.frames:
		t.Fatalf("%s: got %s", why, b)
	default:
	}
}

func TestControlRoutesToTheOneOwnerByteIdentically(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	tgt := tr.target(t, "c1", "control.attention.respond")
	watch := tr.stream(t, url.Values{"filter": {`{"type":"control.*"}`}}, nil)
	sender := tr.consumer(t)

	cmd := command(t, "c1")
	sender.send(t, cmd)
	_, got := tgt.nextFrame(t)
	assert.Equal(t, string(cmd), string(got), "forwarded byte-identically")
	assert.Equal(t, string(cmd), watch.nextEvent(t).Data, "a routed command is fanned out")

	sender.send(t, cmd) // a retry: the same envelope
	_, got = tgt.nextFrame(t)
	assert.Equal(t, string(cmd), string(got), "every transmission reaches the target, retries included")
	assert.Equal(t, string(cmd), watch.nextEvent(t).Data)

	hist := tr.sessionHistory(t, "c1")
	assert.Equal(t, 2, len(hist), "session.started and one copy of the command: %v", hist)
	assert.Contains(t, hist, idOf(t, cmd), "a routed command is kept in the session's history")

	// The sender's own seq-less command did not make it an owner, and the
	// target's ack comes back as an ordinary sequenced event.
	ack := ev(t, "control.accepted", "c1", 1, withSource("aep://target/agent/target/session/c1"), func(e *aep.Envelope) { e.Cause = idOf(t, cmd) })
	tgt.send(t, ack)
	assert.Equal(t, string(ack), watch.nextEvent(t).Data)
	sender.send(t, map[string]any{"type": "ping", "t": 1})
	sender.expect(t, "pong")
	noFrame(t, sender, "the sender gets no error for a routed command")
}

// A relay set to keep no commands routes and fans out each one as
// before, but its replay holds the command's ack and never the command.
func TestControlKeepNoCommands(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.KeepNoCommands = true
	tr := startRelay(t, c)
	tgt := tr.target(t, "k1", "control.attention.respond")
	watch := tr.stream(t, url.Values{"filter": {`{"type":"control.*"}`}}, nil)
	sender := tr.consumer(t)

	cmd := command(t, "k1")
	sender.send(t, cmd)
	_, got := tgt.nextFrame(t)
	assert.Equal(t, string(cmd), string(got), "still routed")
	assert.Equal(t, string(cmd), watch.nextEvent(t).Data, "still fanned out live")
	ack := ev(t, "control.accepted", "k1", 1, withSource("aep://target/agent/target/session/k1"), func(e *aep.Envelope) { e.Cause = idOf(t, cmd) })
	tgt.send(t, ack)
	assert.Equal(t, string(ack), watch.nextEvent(t).Data)

	hist := tr.sessionHistory(t, "k1")
	assert.NotContains(t, hist, idOf(t, cmd), "the command is not kept")
	assert.Contains(t, hist, idOf(t, ack), "its ack is")
}

func TestControlRefusals(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())

	t.Run("no-route: history but no live claimant", func(t *testing.T) {
		tr.mustPost(t, ev(t, "session.started", "nr", 0), ev(t, "run.started", "nr", 1, withData(map[string]any{"trigger": "user"}), func(e *aep.Envelope) { e.Run = "r" }))
		before := tr.sessionHistory(t, "nr")
		sender := tr.consumer(t)
		cmd := ev(t, "control.pause", "nr", 0, withSource("aep://ui/agent/op"), withData(map[string]any{"reason": "probe"}))
		sender.send(t, cmd)
		refused(t, sender, cmd, "no-route")
		assert.Equal(t, before, tr.sessionHistory(t, "nr"), "a refused command never enters history")
	})
	t.Run("HTTP posts make no owner", func(t *testing.T) {
		sender := tr.consumer(t)
		cmd := command(t, "nr")
		sender.send(t, cmd)
		refused(t, sender, cmd, "no-route")
	})
	t.Run("ambiguous: two claimants, neither receives", func(t *testing.T) {
		a := tr.target(t, "amb", "control.attention.respond")
		b := tr.target(t, "amb", "control.attention.respond")
		sender := tr.consumer(t)
		cmd := command(t, "amb")
		sender.send(t, cmd)
		refused(t, sender, cmd, "ambiguous")
		for _, w := range []*fakeTarget{a, b} {
			w.send(t, map[string]any{"type": "ping", "t": 2})
			w.expect(t, "pong") // frames are ordered: a command would have come first
		}
		assert.NotContains(t, tr.sessionHistory(t, "amb"), idOf(t, cmd))
	})
	t.Run("unsupported: the owner does not accept the type", func(t *testing.T) {
		for _, accepts := range [][]string{nil, {"control.cancel"}} {
			session := "uns-" + map[bool]string{true: "none", false: "other"}[accepts == nil]
			tgt := tr.target(t, session, accepts...)
			sender := tr.consumer(t)
			cmd := command(t, session)
			sender.send(t, cmd)
			refused(t, sender, cmd, "unsupported")
			tgt.send(t, map[string]any{"type": "ping", "t": 3})
			tgt.expect(t, "pong")
			assert.NotContains(t, tr.sessionHistory(t, session), idOf(t, cmd))
		}
	})
	t.Run("seq-less events claim nothing", func(t *testing.T) {
		tgt := tr.target(t, "sl", "control.attention.respond")
		other := tr.dial(t)
		other.send(t, hello("both"))
		other.expect(t, "hello")
		other.send(t, ev(t, "attention.routed", "sl", 0, withSource("aep://sink/agent/sink"), withSubject("q"), withData(map[string]any{"channel": "c"})))
		cmd := command(t, "sl")
		other.send(t, cmd)
		_, got := tgt.nextFrame(t)
		assert.Equal(t, string(cmd), string(got), "routed to the one owner, not ambiguous")
	})
	t.Run("the claim ends with its connection", func(t *testing.T) {
		tgt := tr.target(t, "gone", "control.attention.respond")
		tgt.c.CloseNow()
		tgt.closed(t)
		sender := tr.consumer(t)
		deadline := time.Now().Add(wait)
		for {
			// Until the relay has seen the connection end, a command is
			// still routed to it (and the sender hears nothing): sent
			// again until it is refused no-route.
			cmd := command(t, "gone")
			sender.send(t, cmd)
			f, ok := sender.frameWithin(t, 200*time.Millisecond)
			if ok {
				require.Equal(t, "error", f.str("type"), "got %v", f)
				if f.str("code") == "no-route" {
					break
				}
			}
			require.True(t, time.Now().Before(deadline), "still routed after the owner left: %v", f)
		}
	})
}

func TestControlWatchOnlyWithoutToken(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, relay.Config{})
	tgt := tr.target(t, "wo", "control.attention.respond")
	for _, role := range []string{"consumer", "emitter", "both"} {
		t.Run(role, func(t *testing.T) {
			sender := tr.dial(t)
			sender.send(t, hello(role))
			sender.expect(t, "hello")
			cmd := command(t, "wo")
			sender.send(t, cmd)
			refused(t, sender, cmd, "unauthorized")
			tgt.send(t, map[string]any{"type": "ping", "t": 4})
			tgt.expect(t, "pong")
			assert.NotContains(t, tr.sessionHistory(t, "wo"), idOf(t, cmd), "not stored")
		})
	}
	events, _ := tr.history(t, url.Values{"from": {"all"}})
	assert.Len(t, events, 1, "open relays still take events")
}
