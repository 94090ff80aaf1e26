package respond

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// fakeRelay is a scriptable AEP relay endpoint for the client's tests: it
// speaks just enough of AEP-0003 (hello, subscribe with a simple
// session/type/cause match and replay from its history, unsubscribe,
// roster, ping/pong) and hands every command to the test's script.
type fakeRelay struct {
	t     *testing.T
	srv   *httptest.Server
	token string // required bearer token; "" accepts any

	// Set before the first connection.
	caps      map[string]any                                // the hello's capabilities
	onCommand func(fc *fakeConn, cmd *aep.Event, nth int)   // nth: 1-based count of this id
	onHello   func(fc *fakeConn, hello map[string]any) bool // false: do not answer hello
	// replayFirst sends replayed events before `subscribed`.
	replayFirst bool
	// hold ignores subscribe frames (never confirmed).
	hold bool
	// mute leaves pings unanswered.
	mute bool
	// down refuses every connection (503) while set, counting them in
	// refused: a relay that is away.
	down    atomic.Bool
	refused atomic.Int64

	mu      sync.Mutex
	log     []received // every frame received, in order
	history []*aep.Event
	seen    map[string]int
	roster  []RosterEntry
	nconns  int
	seq     int64
	changed chan struct{}
}

// received is one frame the fake relay read.
type received struct {
	conn  int
	typ   string
	raw   []byte
	frame map[string]any
}

// fakeConn is one client connection to the fake relay.
type fakeConn struct {
	fr   *fakeRelay
	ws   *websocket.Conn
	n    int
	mu   sync.Mutex
	subs map[string]map[string]any // active subscription id -> filter
}

func newFakeRelay(t *testing.T) *fakeRelay {
	t.Helper()
	fr := &fakeRelay{
		t:       t,
		caps:    map[string]any{"roster": map[string]any{}},
		seen:    make(map[string]int),
		changed: make(chan struct{}),
	}
	fr.srv = httptest.NewServer(http.HandlerFunc(fr.serve))
	t.Cleanup(fr.srv.Close)
	return fr
}

func (fr *fakeRelay) url() string { return fr.srv.URL }

func (fr *fakeRelay) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/socket" {
		http.NotFound(w, r)
		return
	}
	if fr.down.Load() {
		fr.refused.Add(1)
		http.Error(w, "relay away", http.StatusServiceUnavailable)
		return
	}
	if fr.token != "" && r.Header.Get("Authorization") != "Bearer "+fr.token {
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if r.URL.Query().Has("access_token") {
		fr.t.Errorf("token sent in the URL; want the Authorization header")
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	ctx := r.Context()
	fr.mu.Lock()
	fr.nconns++
	fc := &fakeConn{fr: fr, ws: ws, n: fr.nconns, subs: make(map[string]map[string]any)}
	fr.mu.Unlock()

	first := true
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			fr.t.Errorf("client sent a frame that is not a JSON object: %s", b)
			return
		}
		typ, _ := f["type"].(string)
		fr.record(received{conn: fc.n, typ: typ, raw: b, frame: f})
		if first {
			first = false
			if typ != "hello" {
				fr.t.Errorf("first frame is %q, want hello", typ)
				return
			}
			if fr.onHello != nil && !fr.onHello(fc, f) {
				continue
			}
			fc.send(map[string]any{"type": "hello", "versions": []string{"0.1"}, "role": "both",
				"identity": map[string]any{"agent": "fake-relay"}, "capabilities": fr.caps})
			continue
		}
		fc.handle(typ, f, b)
	}
}

func (fc *fakeConn) handle(typ string, f map[string]any, b []byte) {
	fr := fc.fr
	switch typ {
	case "subscribe":
		if fr.hold {
			return
		}
		id, _ := f["id"].(string)
		filter, _ := f["filter"].(map[string]any)
		fc.mu.Lock()
		fc.subs[id] = filter
		fc.mu.Unlock()
		var replay []*aep.Event
		if _, ok := f["from"]; ok {
			fr.mu.Lock()
			for _, ev := range fr.history {
				if matches(filter, ev) {
					replay = append(replay, ev)
				}
			}
			fr.mu.Unlock()
		}
		if !fr.replayFirst {
			fc.send(map[string]any{"type": "subscribed", "id": id})
		}
		for _, ev := range replay {
			fc.sendRaw(ev.Raw())
		}
		if fr.replayFirst {
			fc.send(map[string]any{"type": "subscribed", "id": id})
		}
	case "unsubscribe":
		id, _ := f["id"].(string)
		fc.mu.Lock()
		delete(fc.subs, id)
		fc.mu.Unlock()
		fc.send(map[string]any{"type": "unsubscribed", "id": id})
	case "roster":
		if _, ok := fr.caps["roster"]; !ok {
			return
		}
		fr.mu.Lock()
		entries := slices.Clone(fr.roster)
		fr.mu.Unlock()
		if entries == nil {
			entries = []RosterEntry{}
		}
		fc.send(map[string]any{"type": "roster", "id": f["id"], "entries": entries})
	case "ping":
		if !fr.mute {
			fc.send(map[string]any{"type": "pong", "t": f["t"]})
		}
	case typeRespond:
		ev, err := aep.Decode(b)
		if err != nil {
			fr.t.Errorf("command does not decode: %v", err)
			return
		}
		fr.mu.Lock()
		fr.seen[ev.ID()]++
		nth := fr.seen[ev.ID()]
		fr.mu.Unlock()
		if fr.onCommand != nil {
			fr.onCommand(fc, ev, nth)
		}
	}
}

// matches is the fake's attr-match subset: scalar equality and any-of
// arrays on session, type and cause.
func matches(filter map[string]any, ev *aep.Event) bool {
	for k, want := range filter {
		var got string
		switch k {
		case "session":
			got = ev.Session()
		case "type":
			got = ev.Type()
		case "cause":
			got = ev.Cause()
		default:
			return false
		}
		switch w := want.(type) {
		case string:
			if w != got {
				return false
			}
		case []any:
			if !slices.ContainsFunc(w, func(x any) bool { return x == got }) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (fr *fakeRelay) record(r received) {
	fr.mu.Lock()
	fr.log = append(fr.log, r)
	close(fr.changed)
	fr.changed = make(chan struct{})
	fr.mu.Unlock()
}

// await waits until cond holds over the frames received so far.
func (fr *fakeRelay) await(what string, cond func(log []received) bool) []received {
	fr.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		fr.mu.Lock()
		log := slices.Clone(fr.log)
		ch := fr.changed
		fr.mu.Unlock()
		if cond(log) {
			return log
		}
		select {
		case <-ch:
		case <-deadline:
			fr.t.Fatalf("fake relay: gave up waiting for %s", what)
		}
	}
}

// frames returns the received frames of type typ.
func (fr *fakeRelay) frames(typ string) []received {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	var out []received
	for _, r := range fr.log {
		if r.typ == typ {
			out = append(out, r)
		}
	}
	return out
}

func (fr *fakeRelay) setRoster(entries []RosterEntry) {
	fr.mu.Lock()
	fr.roster = entries
	fr.mu.Unlock()
}

// ack builds the target's ack of cmd, stores it in the session history and
// returns it; the caller decides whether to deliver it.
func (fr *fakeRelay) ack(cmd *aep.Event, typ string, data any) *aep.Event {
	fr.mu.Lock()
	fr.seq++
	seq := fr.seq
	fr.mu.Unlock()
	env := aep.Envelope{
		ID: "ack-" + cmd.ID(), Type: typ, Time: "2026-07-03T10:00:00.000Z",
		Source: "aep://test/agent/demo", Agent: "demo", Session: cmd.Session(),
		Seq: aep.Int64(seq), Cause: cmd.ID(), Subject: cmd.Subject(), Data: data,
	}
	if typ == typeRejected {
		env.Capture = "redacted"
	}
	ev, err := aep.Build(env)
	require.NoError(fr.t, err)
	fr.mu.Lock()
	fr.history = append(fr.history, ev)
	fr.mu.Unlock()
	return ev
}

// deliver sends ev to the subscriptions on fc it matches (once).
func (fc *fakeConn) deliver(ev *aep.Event) {
	fc.mu.Lock()
	hit := false
	for _, f := range fc.subs {
		if matches(f, ev) {
			hit = true
		}
	}
	fc.mu.Unlock()
	if hit {
		fc.sendRaw(ev.Raw())
	}
}

// accept acks cmd as accepted through fc's subscriptions.
func (fc *fakeConn) accept(cmd *aep.Event) {
	fc.deliver(fc.fr.ack(cmd, typeAccepted, map[string]any{}))
}

// reject nacks cmd through fc's subscriptions.
func (fc *fakeConn) reject(cmd *aep.Event, reason, detail string) {
	fc.deliver(fc.fr.ack(cmd, typeRejected, aep.Rejected{Reason: reason, Detail: detail}))
}

func (fc *fakeConn) send(v any) {
	b, err := json.Marshal(v)
	require.NoError(fc.fr.t, err)
	fc.sendRaw(b)
}

func (fc *fakeConn) sendRaw(b []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = fc.ws.Write(ctx, websocket.MessageText, b) // the client may be gone
}

// drop ends the connection without a close handshake.
func (fc *fakeConn) drop() { fc.ws.CloseNow() }
