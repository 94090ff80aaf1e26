package feed

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/sse"
)

func TestFirstRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, token string
		wantAuth    string
	}{
		{"with token", "s3cret-token", "Bearer s3cret-token"},
		{"without token", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRelay(t)
			cfg := testConfig(tr.URL())
			cfg.Token = tc.token
			sink := newRecSink()
			startClient(t, cfg, sink)
			req := waitRequest(t, tr)
			assert.Equal(t, "all", req.q("from"), "first connect asks from=all")
			assert.JSONEq(t, DefaultFilter, req.q("filter"), "the production filter")
			_, hasCapture := req.query["capture"]
			assert.False(t, hasCapture, "no capture ceiling is requested")
			assert.Equal(t, tc.wantAuth, http.Header(req.header).Get("Authorization"))
			assert.Equal(t, "text/event-stream", http.Header(req.header).Get("Accept"))
			waitConnected(t, sink)
		})
	}
}

func TestDefaultFilterPullsWhatTheInboxNeeds(t *testing.T) {
	t.Parallel()
	var f struct {
		Type []string `json:"type"`
	}
	require.NoError(t, json.Unmarshal([]byte(DefaultFilter), &f))
	assert.ElementsMatch(t, []string{"attention.*", "control.*", "session.*", "run.*", "agent.*", "tool.requested"}, f.Type)
}

func TestAppliesLiveEventsOnce(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	sink := newRecSink()
	startClient(t, testConfig(tr.URL()), sink)
	waitConnected(t, sink)
	a := event(t, "s1", 0, "session.started", "A")
	b := event(t, "s1", 1, "attention.requested", "B")
	tr.add(a, b, a) // a live redelivery of A
	tr.add(event(t, "s1", 2, "run.started", "C"))
	assert.Equal(t, []string{"A", "B", "C"}, waitApplied(t, sink, 3))
	assert.Empty(t, sink.duplicates())
}

// TestResumeAfterRestart: the relay restarts (keeping its history) after an
// outage during which a known session went on and a new session asked a
// request. Everything reaches the sink once, nothing twice.
func TestResumeAfterRestart(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	sink := newRecSink()
	startClient(t, testConfig(tr.URL()), sink)
	tr.add(event(t, "s1", 0, "session.started", "s1-0"), event(t, "s1", 1, "attention.requested", "s1-1"))
	waitConnected(t, sink)
	assert.Equal(t, []string{"s1-0", "s1-1"}, waitApplied(t, sink, 2))
	waitRequest(t, tr)

	tr.set(func(tr *testRelay) { tr.status = http.StatusServiceUnavailable })
	tr.restart()
	require.ErrorIs(t, waitDisconnected(t, sink), ErrStreamEnded)
	require.ErrorIs(t, waitDisconnected(t, sink), ErrStatus, "the outage is reported")
	// Asked while the feed was away: in the known session and in one that began meanwhile.
	tr.add(event(t, "s1", 2, "attention.requested", "s1-2"),
		event(t, "s2", 0, "session.started", "s2-0"), event(t, "s2", 1, "attention.requested", "s2-1"))
	tr.set(func(tr *testRelay) { tr.status = 0 })
	waitConnected(t, sink)

	assert.Equal(t, []string{"s1-2", "s2-0", "s2-1"}, waitApplied(t, sink, 3), "only what was missed")
	tr.add(event(t, "s1", 3, "attention.resolved", "sentinel"))
	assert.Equal(t, []string{"sentinel"}, waitApplied(t, sink, 1), "nothing replayed ahead of the live event")
	assert.Empty(t, sink.duplicates(), "no event applied twice")
	select {
	case ex := <-sink.exhausted:
		t.Fatalf("got ReplayExhausted(%q), want none: the relay held every position", ex.session)
	default:
	}
	var froms []string
	for range 8 {
		select {
		case r := <-tr.requestSeen:
			froms = append(froms, r.URL.Query().Get("from"))
		default:
		}
	}
	for _, f := range froms {
		assert.Equal(t, "all", f, "every reconnect asks from=all, so new sessions are caught")
	}
}

// TestInferredReplayExhausted: after a reconnect the relay no longer holds a
// session's last position (evicted); the feed reports the gap.
func TestInferredReplayExhausted(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	sink := newRecSink()
	startClient(t, testConfig(tr.URL()), sink)
	evicted := []*aep.Event{event(t, "old s:1", 0, "session.started", "o0"), event(t, "old s:1", 1, "attention.requested", "o1")}
	held := []*aep.Event{event(t, "kept", 0, "session.started", "k0"), event(t, "kept", 1, "attention.requested", "k1")}
	tr.add(append(evicted, held...)...)
	waitApplied(t, sink, 4)

	later := event(t, "old s:1", 7, "attention.requested", "o7")
	tr.set(func(tr *testRelay) {
		// The buffer of "old s:1" now starts at seq 7; "kept" is intact.
		tr.history = tr.history[2:]
		m := sse.Message{ID: aep.FormatSSEID("old s:1", aep.Position{Seq: 7}), Event: later.Type(), Data: string(later.Raw())}
		tr.history = append(tr.history, m)
	})
	tr.restart()
	waitConnected(t, sink)
	waitConnected(t, sink)
	assert.Equal(t, []string{"o7"}, waitApplied(t, sink, 1))
	select {
	case ex := <-sink.exhausted:
		assert.Equal(t, exhaustion{"old s:1", aep.Position{Seq: 7}}, ex)
	case <-testTimeout():
		t.Fatal("no ReplayExhausted for the evicted session")
	}
	tr.add(event(t, "kept", 2, "attention.resolved", "k2"))
	assert.Equal(t, []string{"k2"}, waitApplied(t, sink, 1))
	select {
	case ex := <-sink.exhausted:
		t.Fatalf("got ReplayExhausted(%q), want it only for the evicted session", ex.session)
	default:
	}
}

func TestReplayExhaustedComment(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	tr.set(func(tr *testRelay) {
		tr.preamble = []string{"replay-exhausted my s:1 2:15", "replay-exhausted garbage", "shutting-down"}
	})
	sink := newRecSink()
	startClient(t, testConfig(tr.URL()), sink)
	select {
	case ex := <-sink.exhausted:
		assert.Equal(t, exhaustion{"my s:1", aep.Position{Epoch: 2, Seq: 15}}, ex, "session parsed from the right")
	case <-testTimeout():
		t.Fatal("the replay-exhausted comment did not reach the sink")
	}
	tr.add(event(t, "s", 0, "session.started", "after"))
	assert.Equal(t, []string{"after"}, waitApplied(t, sink, 1), "a malformed comment is skipped")
	assert.Empty(t, sink.exhausted)
}

// TestFromAllRefused: a relay without replay-all gets from=[...] positions.
func TestFromAllRefused(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	tr.set(func(tr *testRelay) { tr.refuseAll = true })
	tr.add(event(t, "s1", 0, "session.started", "before-start"))
	sink := newRecSink()
	startClient(t, testConfig(tr.URL()), sink)
	assert.Equal(t, "all", waitRequest(t, tr).q("from"))
	assert.Equal(t, "", waitRequest(t, tr).q("from"), "no positions yet: live only")
	waitConnected(t, sink)
	tr.add(event(t, "s1", 4, "attention.requested", "s1-4"), event(t, "my s:2", 9, "attention.requested", "s2-9"))
	assert.Equal(t, []string{"s1-4", "s2-9"}, waitApplied(t, sink, 2))

	tr.set(func(tr *testRelay) { tr.status = http.StatusServiceUnavailable })
	tr.restart()
	waitRequest(t, tr)
	tr.add(event(t, "s1", 5, "attention.requested", "s1-5"))
	tr.set(func(tr *testRelay) { tr.status = 0 })
	var from string
	for from == "" || from == "all" {
		from = waitRequest(t, tr).q("from")
	}
	assert.JSONEq(t, `[{"session":"my s:2","epoch":0,"seq":9},{"session":"s1","epoch":0,"seq":4}]`, from)
	assert.Equal(t, []string{"s1-5"}, waitApplied(t, sink, 1))
	assert.Empty(t, sink.duplicates())
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	const token = "wrong-token-4f1c"
	tr := newTestRelay(t)
	tr.set(func(tr *testRelay) { tr.token = "right-token" })
	logs := &logRecorder{}
	cfg := testConfig(tr.URL())
	cfg.Token = token
	cfg.Logger = slog.New(logs)
	sink := newRecSink()
	startClient(t, cfg, sink)
	err := waitDisconnected(t, sink)
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Contains(t, err.Error(), "401")
	require.ErrorIs(t, waitDisconnected(t, sink), ErrUnauthorized, "it keeps retrying")

	tr.set(func(tr *testRelay) { tr.token = token })
	waitConnected(t, sink)
	for _, l := range logs.all() {
		assert.NotContains(t, l, token, "the token is never logged")
	}
}

func TestBadResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    error
	}{
		{"server error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }, ErrStatus},
		{"forbidden", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 403) }, ErrUnauthorized},
		{"not an event stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, "{}")
		}, ErrNotEventStream},
		{"stream ends", func(w http.ResponseWriter, r *http.Request) {
			if sw, err := sse.NewWriter(w, 0); err == nil {
				_ = sw.Ping()
			}
		}, ErrStreamEnded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newHandlerServer(t, tc.handler)
			sink := newRecSink()
			startClient(t, testConfig(srv), sink)
			assert.ErrorIs(t, waitDisconnected(t, sink), tc.want)
			assert.ErrorIs(t, waitDisconnected(t, sink), tc.want, "and again on the retry")
		})
	}
}

func TestMalformedEventsSkipped(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	logs := &logRecorder{}
	cfg := testConfig(tr.URL())
	cfg.Logger = slog.New(logs)
	sink := newRecSink()
	startClient(t, cfg, sink)
	waitConnected(t, sink)
	tr.addMessage(sse.Message{ID: "s:0:0", Event: "attention.requested", Data: "not json"})
	tr.addMessage(sse.Message{Event: "attention.requested", Data: `["an array"]`})
	tr.addMessage(sse.Message{Event: "attention.requested", Data: `{"type":"attention.requested","source":"aep://x"}`})
	tr.addMessage(sse.Message{ID: "garbage id", Event: "x", Data: string(event(t, "s", 3, "attention.requested", "good").Raw())})
	assert.Equal(t, []string{"good"}, waitApplied(t, sink, 1), "malformed events skipped, the stream goes on")
	assert.Equal(t, 1, tr.requestCount(), "no reconnect for malformed events")
	skipped := 0
	for _, l := range logs.all() {
		if strings.HasPrefix(l, "feed: skipped") {
			skipped++
		}
	}
	assert.Equal(t, 3, skipped, "each skip is logged")
}

func TestOversizeEvent(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	logs := &logRecorder{}
	cfg := testConfig(tr.URL())
	cfg.MaxEventBytes = 4096
	cfg.Logger = slog.New(logs)
	sink := newRecSink()
	startClient(t, cfg, sink)
	waitConnected(t, sink)

	build := func(id string, promptBytes int) *aep.Event {
		e, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Time: "2026-07-03T10:15:05.000Z",
			Source: "aep://test/s", Agent: "a", Session: "s", Seq: aep.Int64(1),
			Data: map[string]any{"kind": "input", "prompt": strings.Repeat("p", promptBytes)}})
		require.NoError(t, err)
		return e
	}
	near := build("near", 3500)
	require.Less(t, len(near.Raw()), 4096)
	tr.add(build("too-big", 5000), near)
	assert.Equal(t, []string{"near"}, waitApplied(t, sink, 1), "an event within the limit applies; the larger one is skipped")
	assert.Equal(t, 1, tr.requestCount(), "no reconnect")
	assert.Condition(t, func() bool {
		for _, l := range logs.all() {
			if strings.Contains(l, "over the size limit") {
				return true
			}
		}
		return false
	}, "the skip is logged")
}

func TestDefaultsAcceptRelayBodyLimit(t *testing.T) {
	t.Parallel()
	c := New(Config{RelayURL: "http://127.0.0.1:1"})
	assert.Equal(t, 16<<20, c.cfg.MaxEventBytes, "events up to the relay's 16 MiB body limit")
	assert.Equal(t, DefaultSilenceTimeout, c.cfg.SilenceTimeout)
	assert.Equal(t, 60_000_000_000, int(c.cfg.SilenceTimeout), "twice the 30 s ping interval")
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		sink Sink
	}{
		{"no URL", Config{}, newRecSink()},
		{"not http", Config{RelayURL: "ws://127.0.0.1:8787"}, newRecSink()},
		{"filter not JSON", Config{RelayURL: "http://127.0.0.1:8787", Filter: json.RawMessage("{")}, newRecSink()},
		{"nil sink", Config{RelayURL: "http://127.0.0.1:8787"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.ErrorIs(t, New(tc.cfg).Run(t.Context(), tc.sink), ErrConfig)
		})
	}
}

func TestStreamURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:8787":      "http://127.0.0.1:8787/stream",
		"http://127.0.0.1:8787/":     "http://127.0.0.1:8787/stream",
		"https://relay.example/aep/": "https://relay.example/aep/stream",
		"http://h/base?x=1#frag":     "http://h/base/stream?x=1",
	} {
		u, err := New(Config{RelayURL: in}).streamURL()
		require.NoError(t, err, in)
		assert.Equal(t, want, u.String(), in)
	}
}

func TestParseReplayExhausted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		session string
		pos     aep.Position
		ok      bool
	}{
		{"s_8f2c 0:5", "s_8f2c", aep.Position{Seq: 5}, true},
		{"my session:x 3:0", "my session:x", aep.Position{Epoch: 3}, true},
		{"s 0:-1", "", aep.Position{}, false},
		{"s 05", "", aep.Position{}, false},
		{" 0:5", "", aep.Position{}, false},
		{"0:5", "", aep.Position{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			s, p, err := parseReplayExhausted(tc.in)
			if !tc.ok {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.session, s)
			assert.Equal(t, tc.pos, p)
		})
	}
}

// OnEvent sees every event the sink took, after the sink (the app re-reads
// the roster on session lifecycle and agent liveness events).
func TestOnEventFollowsTheSink(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	sink := newRecSink()
	seen := make(chan string, 16)
	cfg := testConfig(tr.URL())
	cfg.OnEvent = func(e *aep.Event) {
		if sink.count(e.Key()) != 1 {
			t.Errorf("OnEvent(%s) before the sink took it", e.ID())
		}
		seen <- e.Type()
	}
	startClient(t, cfg, sink)
	waitConnected(t, sink)
	a := event(t, "s1", 0, "session.started", "A")
	tr.add(a, event(t, "s1", 1, "attention.requested", "B"), a)
	waitApplied(t, sink, 2)
	for _, want := range []string{"session.started", "attention.requested"} {
		select {
		case got := <-seen:
			assert.Equal(t, want, got)
		case <-time.After(5 * time.Second):
			t.Fatalf("OnEvent not called for %s", want)
		}
	}
	select {
	case got := <-seen:
		t.Errorf("OnEvent called again (%s) for a redelivery", got)
	default:
	}
}

// OnRedelivery sees what the feed drops as already seen: an agent that
// reclaims its session on a restarted relay re-sends its request, which
// is the app's cue to re-read the roster.
func TestOnRedeliverySeesTheDuplicate(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	sink := newRecSink()
	again := make(chan string, 16)
	cfg := testConfig(tr.URL())
	cfg.OnRedelivery = func(e *aep.Event) { again <- e.ID() }
	startClient(t, cfg, sink)
	waitConnected(t, sink)
	a := event(t, "s1", 0, "session.started", "A")
	b := event(t, "s1", 1, "attention.requested", "B")
	tr.add(a, b, b)
	waitApplied(t, sink, 2)
	select {
	case got := <-again:
		assert.Equal(t, b.ID(), got)
	case <-time.After(5 * time.Second):
		t.Fatal("OnRedelivery not called for the re-sent request")
	}
	assert.Equal(t, 1, sink.count(b.Key()), "the sink took it once")
}
