package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/relay"
)

func TestSocketAuth(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	_, resp, err := tr.dialRaw(t, url.Values{})
	require.Error(t, err, "no token: refused before hello")
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_, resp, err = tr.dialRaw(t, url.Values{"access_token": {"wrong"}})
	require.Error(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+tr.srv.URL[4:]+"/socket", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	require.NoError(t, err, "the bearer header works too")
	c.CloseNow()
}

func TestSocketHello(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	t.Run("selects exactly one version", func(t *testing.T) {
		w := tr.dial(t)
		h := hello("consumer")
		h["versions"] = []string{"0.2", "0.1"}
		h["capabilities"] = map[string]any{"futurecap": map[string]any{"enabled": true}}
		w.send(t, h)
		got := w.expect(t, "hello")
		assert.Equal(t, []any{"0.1"}, got["versions"])
		caps, _ := got["capabilities"].(map[string]any)
		assert.Contains(t, caps, "roster")
		assert.Contains(t, caps, "control")
	})
	t.Run("minimal consumer hello", func(t *testing.T) {
		w := tr.dial(t)
		w.send(t, map[string]any{"type": "hello", "versions": []string{"0.1"}, "role": "consumer"})
		w.expect(t, "hello")
	})
	for _, tc := range []struct {
		name  string
		first any
		code  string
	}{
		{"event first", ev(t, "session.started", "hf", 0), "hello-required"},
		{"subscribe first", map[string]any{"type": "subscribe", "id": "s"}, "hello-required"},
		{"not JSON first", []byte("hello?"), "hello-required"},
		{"no common version", map[string]any{"type": "hello", "versions": []string{"9.9"}, "role": "consumer"}, "version-unsupported"},
		{"no role", map[string]any{"type": "hello", "versions": []string{"0.1"}}, "invalid-hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tr.dial(t)
			w.send(t, tc.first)
			f := w.expect(t, "error")
			assert.Equal(t, tc.code, f.str("code"))
			if tc.code == "version-unsupported" {
				assert.Equal(t, []any{"0.1"}, f["versions"])
			}
			assert.Equal(t, websocket.StatusPolicyViolation, w.closed(t))
		})
	}
	t.Run("binary first frame", func(t *testing.T) {
		w := tr.dial(t)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		require.NoError(t, w.c.Write(ctx, websocket.MessageBinary, []byte(`{"type":"hello"}`)))
		assert.Equal(t, "hello-required", w.expect(t, "error").str("code"))
		w.closed(t)
	})
}

func TestSocketHelloTimeout(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.HelloTimeout = 50 * time.Millisecond
	tr := startRelay(t, c)
	w := tr.dial(t)
	w.closed(t)
}

func TestSocketFrames(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	w := tr.consumer(t)

	w.send(t, map[string]any{"type": "zigzag", "note": "unknown frames are ignored"})
	w.send(t, map[string]any{"type": "ping", "t": 12345})
	assert.Equal(t, 12345.0, w.expect(t, "pong")["t"], "pong echoes t")

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, w.c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3}))
	f := w.expect(t, "error")
	assert.Equal(t, "binary-unsupported", f.str("code"))

	w.send(t, []byte("{not json"))
	assert.Equal(t, "invalid-frame", w.expect(t, "error").str("code"))
	w.send(t, []byte(`[1,2]`))
	assert.Equal(t, "invalid-frame", w.expect(t, "error").str("code"))
	w.send(t, []byte(`{"type":7}`))
	assert.Equal(t, "invalid-frame", w.expect(t, "error").str("code"))

	w.send(t, []byte(`{"aep":"0.1","id":"bad-1","type":"session.started"}`))
	f = w.expect(t, "error")
	assert.Equal(t, "invalid-event", f.str("code"))
	assert.Equal(t, "bad-1", f.str("cause"))

	w.send(t, map[string]any{"type": "ping", "t": "still-open"})
	assert.Equal(t, "still-open", w.expect(t, "pong")["t"], "the connection survives every bad frame")
}

func TestSocketRelayPing(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.WSPing = 20 * time.Millisecond
	c.WSPongTimeout = time.Hour
	tr := startRelay(t, c)
	w := tr.consumer(t)
	var f frame
	require.NoError(t, json.Unmarshal(w.next(t), &f))
	assert.Equal(t, "ping", f.str("type"))
	assert.NotNil(t, f["t"])
}

func TestSocketPongTimeout(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.WSPing = 20 * time.Millisecond
	c.WSPongTimeout = 60 * time.Millisecond
	tr := startRelay(t, c)
	w := tr.consumer(t)
	f := w.expect(t, "closing")
	assert.Equal(t, "ping timeout", f.str("reason"))
	assert.Equal(t, []any{}, f["delivered"])
	// Frames after the relay's closing are not processed (the write may
	// also fail if the close already went through: either way no answer).
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = w.c.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","id":"late","filter":{}}`))
	assert.Equal(t, websocket.StatusPolicyViolation, w.closed(t))
	for len(w.frames) > 0 {
		assert.NotContains(t, string(<-w.frames), "subscribed", "a frame after closing got an answer")
	}
	// And the relay serves everyone else as before.
	tr.mustPost(t, ev(t, "session.started", "after-close", 0))
	events, _ := tr.history(t, url.Values{"from": {"all"}})
	assert.Len(t, events, 1)
}

func TestSocketSubscribe(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.Buffer = 4
	c.MaxFrom = 3
	c.MaxSubscriptions = 3
	tr := startRelay(t, c)
	var evs [][]byte
	for i := range 6 {
		evs = append(evs, ev(t, "progress.status", "ws", int64(i)))
	}
	tr.mustPost(t, evs...)

	t.Run("replay-exhausted frame, replay, then live", func(t *testing.T) {
		w := tr.consumer(t)
		w.subscribe(t, "sub-1", map[string]any{"filter": map[string]any{"session": "ws"}, "from": []any{map[string]any{"session": "ws", "epoch": 0, "seq": 0}}})
		f := w.expect(t, "replay-exhausted")
		assert.Equal(t, "sub-1", f.str("sub"))
		assert.Equal(t, "ws", f.str("session"))
		assert.Equal(t, map[string]any{"epoch": 0.0, "seq": 2.0}, f["earliest"])
		for i := 2; i < 6; i++ {
			_, b := w.nextFrame(t)
			assert.Equal(t, string(evs[i]), string(b), "replayed byte-identically")
		}
		next := ev(t, "progress.status", "ws", 6)
		tr.mustPost(t, next)
		_, b := w.nextFrame(t)
		assert.Equal(t, string(next), string(b))
	})
	t.Run("from all", func(t *testing.T) {
		w := tr.consumer(t)
		w.subscribe(t, "all", map[string]any{"from": "all"})
		f, _ := w.nextFrame(t)
		assert.Equal(t, "progress.status", f.str("type"), "no replay-exhausted under from=all")
	})
	t.Run("refusals from the closed set keep the connection", func(t *testing.T) {
		w := tr.consumer(t)
		for _, tc := range []struct {
			name    string
			members map[string]any
			code    string
		}{
			{"from an object", map[string]any{"id": "a", "from": map[string]any{}}, "invalid-filter"},
			{"from a number", map[string]any{"id": "a", "from": 3}, "invalid-filter"},
			{"from a bad position", map[string]any{"id": "a", "from": []any{map[string]any{"session": 1}}}, "invalid-filter"},
			{"from over the cap", map[string]any{"id": "a", "from": []any{
				map[string]any{"session": "a", "seq": 0}, map[string]any{"session": "b", "seq": 0},
				map[string]any{"session": "c", "seq": 0}, map[string]any{"session": "d", "seq": 0}}}, "limit-exceeded"},
			{"filter on an illegal key", map[string]any{"id": "a", "filter": map[string]any{"data": 1}}, "invalid-filter"},
			{"filter not an object", map[string]any{"id": "a", "filter": "session"}, "invalid-filter"},
			{"capture unknown", map[string]any{"id": "a", "capture": "secret"}, "invalid-filter"},
			{"no id", map[string]any{}, "invalid-filter"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := map[string]any{"type": "subscribe"}
				for k, v := range tc.members {
					f[k] = v
				}
				w.send(t, f)
				got := w.expect(t, "error")
				assert.Equal(t, tc.code, got.str("code"))
				if id, ok := tc.members["id"]; ok {
					assert.Equal(t, id, got["id"], "the error echoes the subscribe id")
				}
				assert.NotEmpty(t, got.str("detail"))
			})
		}
		w.subscribe(t, "ok-1", nil)
		w.send(t, map[string]any{"type": "subscribe", "id": "ok-1"})
		assert.Equal(t, "invalid-filter", w.expect(t, "error").str("code"), "a duplicate id is refused")
		w.subscribe(t, "ok-2", nil)
		w.subscribe(t, "ok-3", nil)
		w.send(t, map[string]any{"type": "subscribe", "id": "ok-4"})
		assert.Equal(t, "limit-exceeded", w.expect(t, "error").str("code"), "MaxSubscriptions")
		w.send(t, map[string]any{"type": "unsubscribe", "id": "ok-3"})
		assert.Equal(t, "ok-3", w.expect(t, "unsubscribed").str("id"))
		w.subscribe(t, "ok-4", nil)
	})
	t.Run("emitter role may not subscribe", func(t *testing.T) {
		w := tr.dial(t)
		w.send(t, hello("emitter"))
		w.expect(t, "hello")
		w.send(t, map[string]any{"type": "subscribe", "id": "e1", "filter": map[string]any{}})
		f := w.expect(t, "error")
		assert.Equal(t, "unauthorized", f.str("code"))
		assert.Equal(t, "e1", f.str("id"))
		w.send(t, map[string]any{"type": "ping", "t": 1})
		w.expect(t, "pong")
	})
}

func TestSocketManySubscriptionsAndUnsubscribe(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	w := tr.consumer(t)
	w.subscribe(t, "attention", map[string]any{"filter": map[string]any{"type": "attention.*"}})
	w.subscribe(t, "errors", map[string]any{"filter": map[string]any{"severity": map[string]any{"gte": "error"}}, "capture": "none"})
	assert.Equal(t, 2, tr.Stats().Subscribers)

	boom := ev(t, "error.raised", "mu", 0, withSeverity("error"), withData(map[string]any{"message": "x"}))
	tr.mustPost(t, boom)
	f, _ := w.nextFrame(t)
	assert.Equal(t, idOf(t, boom), f.str("id"))
	assert.Equal(t, "none", f.str("capture"), "the subscription's ceiling applies")
	assert.NotContains(t, f, "data", "at none the data goes")

	w.send(t, map[string]any{"type": "unsubscribe", "id": "errors"})
	w.expect(t, "unsubscribed")
	tr.mustPost(t, ev(t, "error.raised", "mu", 1, withSeverity("error"), withData(map[string]any{"message": "y"})))
	ask := ev(t, "attention.requested", "mu", 2, withData(map[string]any{"kind": "input", "prompt": "ok?"}))
	tr.mustPost(t, ask)
	_, b := w.nextFrame(t)
	assert.Equal(t, string(ask), string(b), "only the remaining subscription delivers")
}

func TestSocketEventsReachStreams(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	s := tr.stream(t, nil, nil)
	w := tr.dial(t)
	w.send(t, hello("emitter"))
	w.expect(t, "hello")
	e := ev(t, "session.started", "wss", 0)
	w.send(t, e)
	assert.Equal(t, string(e), s.nextEvent(t).Data)
}

func TestSocketClosingOnShutdown(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	w := tr.consumer(t)
	w.subscribe(t, "s", map[string]any{"filter": map[string]any{"session": "cl"}})
	tr.mustPost(t, ev(t, "session.started", "cl", 0, withEpoch(3)), ev(t, "progress.status", "cl", 7, withEpoch(3)))
	w.nextFrame(t)
	w.nextFrame(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- tr.Shutdown(ctx) }()
	f := w.expect(t, "closing")
	assert.Equal(t, "shutting-down", f.str("reason"))
	assert.Equal(t, []any{map[string]any{"sub": "s", "session": "cl", "epoch": 3.0, "seq": 7.0}}, f["delivered"])
	assert.Equal(t, websocket.StatusGoingAway, w.closed(t))
	require.NoError(t, <-done)
	assert.Equal(t, relay.Stats{Sessions: 1}, tr.Stats(), "no subscriber or connection is left")
}

func TestSocketRoster(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	em := tr.dial(t)
	h := hello("emitter")
	h["identity"] = map[string]any{"agent": "roster-agent", "instance": "host/7"}
	h["capabilities"] = map[string]any{"emits": []string{"session"}, "control": map[string]any{"accepts": []string{"control.attention.respond"}, "ack_window_ms": 10000, "x": true}}
	em.send(t, h)
	em.expect(t, "hello")
	em.send(t, ev(t, "session.started", "ro", 0))
	em.send(t, ev(t, "attention.routed", "ro-seqless", 0, withSubject("q"), withData(map[string]any{"channel": "c"})))

	c := tr.consumer(t)
	// The emitter's event and the roster request race on different
	// sockets; a subscribe on the consumer proves the event landed.
	s := tr.stream(t, url.Values{"from": {"all"}, "filter": {`{"session":"ro"}`}}, nil)
	s.nextEvent(t)
	c.send(t, map[string]any{"type": "roster", "id": "r-1"})
	f := c.expect(t, "roster")
	assert.Equal(t, "r-1", f.str("id"))
	assert.Equal(t, []any{map[string]any{
		"session": "ro", "agent": "roster-agent", "instance": "host/7",
		"control": map[string]any{"accepts": []any{"control.attention.respond"}, "ack_window_ms": 10000.0, "x": true},
		"emits":   []any{"session"},
	}}, f["entries"], "one entry per claim, declarations verbatim; seq-less events claim nothing")

	em.send(t, map[string]any{"type": "roster", "id": "r-2"})
	e := em.expect(t, "error")
	assert.Equal(t, "unauthorized", e.str("code"))
	assert.Equal(t, "r-2", e.str("id"))
	em.send(t, map[string]any{"type": "ping", "t": 1})
	em.expect(t, "pong")

	em.c.Close(websocket.StatusNormalClosure, "")
	em.closed(t)
	// After the claimant leaves, the roster no longer lists it; the
	// relay notices the close asynchronously, so ask again (each round
	// trip paces the next) until it does.
	deadline := time.Now().Add(wait)
	for {
		c.send(t, map[string]any{"type": "roster", "id": "r-3"})
		f = c.expect(t, "roster")
		if len(f["entries"].([]any)) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "claim still listed after its connection closed: %v", f["entries"])
	}
}

// The roster reply is built once per change of the claims and reused: a
// claim made after a reply was built is in the next reply, and a second
// emitter's claim on the same session shows the ambiguity.
func TestSocketRosterFollowsNewClaims(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	c := tr.consumer(t)
	c.send(t, map[string]any{"type": "roster", "id": "r-0"})
	assert.Empty(t, c.expect(t, "roster")["entries"], "no claim yet")

	sessions := func(id string) []string {
		c.send(t, map[string]any{"type": "roster", "id": id})
		var out []string
		for _, e := range c.expect(t, "roster")["entries"].([]any) {
			out = append(out, e.(map[string]any)["session"].(string))
		}
		return out
	}
	claim := func(session string) {
		em := tr.dial(t)
		em.send(t, hello("emitter"))
		em.expect(t, "hello")
		e := ev(t, "session.started", session, 0)
		em.send(t, e)
		// The event and the roster ask race on different sockets; this
		// event reaching a stream proves the claim was made.
		var head struct{ ID string }
		require.NoError(t, json.Unmarshal(e, &head))
		s := tr.stream(t, url.Values{"from": {"all"}, "filter": {`{"id":"` + head.ID + `"}`}}, nil)
		s.nextEvent(t)
	}
	claim("a")
	assert.Equal(t, []string{"a"}, sessions("r-1"))
	assert.Equal(t, []string{"a"}, sessions("r-2"), "unchanged claims, the same reply")
	claim("b")
	assert.Equal(t, []string{"a", "b"}, sessions("r-3"))
	claim("a")
	assert.Equal(t, []string{"a", "a", "b"}, sessions("r-4"), "two claimants of a: listed twice")
}
