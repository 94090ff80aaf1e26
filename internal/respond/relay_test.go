package respond

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/relay"
)

// The respond path against the embedded relay and a small emitter that
// claims a session and acks commands as a control-capable target must.

// startRelay serves a relay with token on a port-0 listener.
func startRelay(t testing.TB, token string) string {
	t.Helper()
	cfg := relay.DefaultConfig()
	cfg.Token = token
	r := relay.New(cfg)
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
		srv.Close()
	})
	return srv.URL
}

// target is a control-capable emitter: it claims session with a
// sequenced event, then acks each command with decide's verdict, and
// re-emits the recorded ack byte-identically on redelivery (AEP-0004 §3).
type target struct {
	t       testing.TB
	ws      *websocket.Conn
	session string
	decide  func(cmd *aep.Event, nth int) (ackType string, data any, send bool)

	mu   sync.Mutex
	got  map[string][][]byte // command id -> every transmission received
	acks map[string][]byte   // command id -> the recorded ack
	seq  int64
}

func startTarget(t testing.TB, base, token, session string, windowMS int64,
	decide func(cmd *aep.Event, nth int) (string, any, bool)) *target {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := http.Header{"Authorization": {"Bearer " + token}}
	ws, _, err := websocket.Dial(ctx, base+"/socket", &websocket.DialOptions{HTTPHeader: h})
	require.NoError(t, err)
	tg := &target{t: t, ws: ws, session: session, decide: decide,
		got: make(map[string][][]byte), acks: make(map[string][]byte)}
	tg.write(ctx, map[string]any{"type": "hello", "versions": []string{"0.1"}, "role": "emitter",
		"identity": map[string]any{"agent": "demo", "instance": "t1"},
		"capabilities": map[string]any{"control": map[string]any{
			"accepts": []string{typeRespond}, "ack_window_ms": windowMS}}})
	_, b, err := ws.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(b), `"hello"`, "the relay's hello")
	tg.write(ctx, tg.event("session.started", "", map[string]any{}))

	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			tg.handle(ctx, b)
		}
	}()
	t.Cleanup(func() {
		cancel()
		ws.CloseNow()
		<-done
	})
	return tg
}

func (tg *target) write(ctx context.Context, v any) {
	b, ok := v.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(v)
		require.NoError(tg.t, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = tg.ws.Write(wctx, websocket.MessageText, b)
}

// event builds the target's next sequenced event.
func (tg *target) event(typ, cause string, data any) []byte {
	tg.mu.Lock()
	tg.seq++
	seq := tg.seq
	tg.mu.Unlock()
	env := aep.Envelope{ID: "t-" + strconv.FormatInt(seq, 10), Type: typ, Time: "2026-07-03T10:00:00.000Z",
		Source: "aep://test/agent/demo/session/" + tg.session, Agent: "demo", Session: tg.session,
		Seq: aep.Int64(seq), Cause: cause, Data: data}
	if typ == typeRejected {
		env.Capture = "redacted"
	}
	ev, err := aep.Build(env)
	require.NoError(tg.t, err)
	return ev.Raw()
}

func (tg *target) handle(ctx context.Context, b []byte) {
	var head struct{ Type string }
	if json.Unmarshal(b, &head) != nil {
		return
	}
	switch head.Type {
	case "ping":
		var p struct{ T json.RawMessage }
		_ = json.Unmarshal(b, &p)
		tg.write(ctx, map[string]any{"type": "pong", "t": p.T})
		return
	case typeRespond:
	default:
		return
	}
	cmd, err := aep.Decode(b)
	require.NoError(tg.t, err)
	tg.mu.Lock()
	tg.got[cmd.ID()] = append(tg.got[cmd.ID()], b)
	nth := len(tg.got[cmd.ID()])
	recorded := tg.acks[cmd.ID()]
	tg.mu.Unlock()
	if recorded != nil {
		tg.write(ctx, recorded)
		return
	}
	typ, data, send := tg.decide(cmd, nth)
	if !send {
		return
	}
	ack := tg.event(typ, cmd.ID(), data)
	tg.mu.Lock()
	tg.acks[cmd.ID()] = ack
	tg.mu.Unlock()
	tg.write(ctx, ack)
}

func (tg *target) received(id string) [][]byte {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.got[id]
}

// startAgainst runs a client against base and waits until the roster shows
// session claimed by one control-capable target.
func startAgainst(t testing.TB, base, token, session string, cfg Config) (*Client, *reports) {
	t.Helper()
	cfg.RelayURL, cfg.Token = base, token
	notify, ch := notifier()
	cfg.Notify = notify
	c, rep := start(t, cfg)
	deadline := time.After(5 * time.Second)
	for c.Reach(session) != inbox.ReachConnected {
		c.Refresh()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the roster never showed %q connected (reach %s)", session, c.Reach(session))
		}
	}
	return c, rep
}

func TestRelayRoundTrip(t *testing.T) {
	t.Parallel()
	base := startRelay(t, "tok")
	tg := startTarget(t, base, "tok", "s1", 3000, func(*aep.Event, int) (string, any, bool) {
		return typeAccepted, map[string]any{}, true
	})
	cfg := testConfig(base)
	cfg.AckWindow = 0
	c, rep := startAgainst(t, base, "tok", "s1", cfg)
	assert.Equal(t, 3*time.Second, c.AckWindow("s1"), "the target's declared window, from the roster")

	s := submission("s1", "card-1")
	s.By = "alice"
	s.CommandID = c.newCommandID()
	want, err := c.build(s)
	require.NoError(t, err)
	require.NoError(t, c.Submit(t.Context(), s))
	o := rep.next(t)
	assert.Equal(t, settlement{Card: "card-1", CommandID: s.CommandID, State: inbox.SubmissionAccepted}, o)
	got := tg.received(s.CommandID)
	require.Len(t, got, 1, "the target received the command once")
	assert.Equal(t, string(want.raw), string(got[0]), "the relay forwards the command byte-identically")
}

func TestRelayRetryReachesTargetWithSameID(t *testing.T) {
	t.Parallel()
	base := startRelay(t, "tok")
	tg := startTarget(t, base, "tok", "s1", 10000, func(_ *aep.Event, nth int) (string, any, bool) {
		return typeAccepted, map[string]any{}, nth == 2 // the first ack is "lost"
	})
	cfg := testConfig(base)
	cfg.AckWindow = 150 * time.Millisecond
	c, rep := startAgainst(t, base, "tok", "s1", cfg)
	s := submission("s1", "card-1")
	s.CommandID = c.newCommandID()
	require.NoError(t, c.Submit(t.Context(), s))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	got := tg.received(s.CommandID)
	require.Len(t, got, 2, "the retry reached the target")
	assert.Equal(t, string(got[0]), string(got[1]), "identical bytes on retry")
}

func TestRelayRejectionAndRefusals(t *testing.T) {
	t.Parallel()
	base := startRelay(t, "tok")
	startTarget(t, base, "tok", "s1", 10000, func(*aep.Event, int) (string, any, bool) {
		return typeRejected, aep.Rejected{Reason: aep.ReasonInvalid, Detail: "n: required"}, true
	})
	c, rep := startAgainst(t, base, "tok", "s1", testConfig(base))

	require.NoError(t, c.Submit(t.Context(), submission("s1", "nacked")))
	o := rep.next(t)
	assert.Equal(t, settlement{Card: "nacked", CommandID: o.CommandID, State: inbox.SubmissionRejected,
		Reason: aep.ReasonInvalid, Detail: "n: required"}, o)

	require.NoError(t, c.Submit(t.Context(), submission("nobody", "unrouted")))
	o = rep.nextQueued(t)
	assert.Equal(t, inbox.ReasonNoRoute, o.Reason, "no route: waiting for its agent, %+v", o)
	assert.Equal(t, inbox.ReachNotConnected, c.Reach("nobody"))
}

func TestRelayWatchOnlyRefusesCommands(t *testing.T) {
	t.Parallel()
	base := startRelay(t, "") // no token: watch-only
	cfg := testConfig(base)
	c, rep := start(t, cfg)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionFailed, o.State)
	assert.Equal(t, CodeUnauthorized, o.Reason, "%+v", o)
}

func TestRelayWrongToken(t *testing.T) {
	t.Parallel()
	base := startRelay(t, "tok")
	cfg := testConfig(base)
	cfg.Token = "nope"
	cfg.ConnectWait = 200 * time.Millisecond
	c, rep := start(t, cfg)
	// Wait for the relay's refusal before submitting: a submission made
	// before the first attempt ended can only say "unreachable".
	require.Eventually(t, func() bool { return errors.Is(c.Err(), ErrUnauthorized) }, 10*time.Second, 5*time.Millisecond,
		"the relay's refusal of the token never came")
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card")))
	o := rep.next(t)
	assert.Equal(t, CodeUnauthorized, o.Reason, "%+v", o)
}

// BenchmarkRelaySubmitToAccepted measures one command's path from Submit to
// the accepted outcome: through the embedded relay to a target and back.
func BenchmarkRelaySubmitToAccepted(b *testing.B) {
	base := startRelay(b, "tok")
	startTarget(b, base, "tok", "s1", 10000, func(*aep.Event, int) (string, any, bool) {
		return typeAccepted, map[string]any{}, true
	})
	c, rep := startAgainst(b, base, "tok", "s1", testConfig(base))
	i := 0
	for b.Loop() {
		i++
		if err := c.Submit(b.Context(), submission("s1", strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
		if o := rep.next(b); o.State != inbox.SubmissionAccepted {
			b.Fatalf("outcome %+v, want accepted", o)
		}
	}
}
