package feed

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// waitFor is how long a test waits for something the feed should do.
const waitFor = 10 * time.Second

type feedState struct {
	connected bool
	err       error
}

type exhaustion struct {
	session  string
	earliest aep.Position
}

// recSink records what the feed hands it, on channels tests wait on.
type recSink struct {
	mu        sync.Mutex
	counts    map[aep.Key]int
	applied   chan *aep.Event
	states    chan feedState
	exhausted chan exhaustion
}

func newRecSink() *recSink {
	return &recSink{
		counts:    make(map[aep.Key]int),
		applied:   make(chan *aep.Event, 4096),
		states:    make(chan feedState, 4096),
		exhausted: make(chan exhaustion, 64),
	}
}

func (s *recSink) Apply(e *aep.Event) {
	s.mu.Lock()
	s.counts[e.Key()]++
	s.mu.Unlock()
	s.applied <- e
}

func (s *recSink) FeedState(connected bool, err error) { s.states <- feedState{connected, err} }

func (s *recSink) ReplayExhausted(session string, earliest aep.Position) {
	s.exhausted <- exhaustion{session, earliest}
}

// count returns how many times the event (source, id) was applied.
func (s *recSink) count(k aep.Key) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[k]
}

// duplicates lists the keys applied more than once.
func (s *recSink) duplicates() []aep.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []aep.Key
	for k, n := range s.counts {
		if n > 1 {
			out = append(out, k)
		}
	}
	return out
}

// waitApplied returns the ids of the next n applied events.
func waitApplied(t *testing.T, s *recSink, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	deadline := time.After(waitFor)
	for len(ids) < n {
		select {
		case e := <-s.applied:
			ids = append(ids, e.ID())
		case <-deadline:
			t.Fatalf("got %d applied events %v, want %d", len(ids), ids, n)
		}
	}
	return ids
}

// waitState returns the next FeedState report.
func waitState(t *testing.T, s *recSink) feedState {
	t.Helper()
	select {
	case st := <-s.states:
		return st
	case <-time.After(waitFor):
		t.Fatal("no FeedState report")
	}
	return feedState{}
}

// waitConnected skips failure reports until a (true, nil) one.
func waitConnected(t *testing.T, s *recSink) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case st := <-s.states:
			if st.connected {
				require.NoError(t, st.err, "a connected report carries no error")
				return
			}
		case <-deadline:
			t.Fatal("the feed never reported connected")
		}
	}
}

// waitDisconnected returns the error of the next (false, err) report.
func waitDisconnected(t *testing.T, s *recSink) error {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case st := <-s.states:
			if !st.connected {
				return st.err
			}
		case <-deadline:
			t.Fatal("the feed never reported a disconnect")
		}
	}
}

// waitRequest returns the next request the test relay received.
func waitRequest(t *testing.T, tr *testRelay) *httptestRequest {
	t.Helper()
	select {
	case r := <-tr.requestSeen:
		return &httptestRequest{query: r.URL.Query(), header: r.Header.Clone()}
	case <-time.After(waitFor):
		t.Fatal("the relay received no request")
	}
	return nil
}

type httptestRequest struct {
	query  map[string][]string
	header map[string][]string
}

func (r *httptestRequest) q(name string) string {
	if v := r.query[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// testConfig is a Config with short intervals for tests.
func testConfig(url string) Config {
	return Config{
		RelayURL:       url,
		SilenceTimeout: 5 * time.Second,
		BackoffMin:     time.Millisecond,
		BackoffMax:     4 * time.Millisecond,
	}
}

// startClient runs a Client until the test ends and checks that Run
// returns nil promptly when its context ends.
func startClient(t *testing.T, cfg Config, sink Sink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil when ctx ends", err)
			}
		case <-time.After(waitFor):
			t.Error("Run did not return after its context ended")
		}
	})
}

// logRecorder is a slog handler that keeps every record's text.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logView{l, as}
}
func (l *logRecorder) WithGroup(string) slog.Handler { return l }

func (l *logRecorder) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// logView is a logRecorder with attributes added by Logger.With.
type logView struct {
	l     *logRecorder
	attrs []slog.Attr
}

func (v *logView) Enabled(context.Context, slog.Level) bool { return true }
func (v *logView) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(v.attrs...)
	return v.l.Handle(ctx, r)
}
func (v *logView) WithAttrs(as []slog.Attr) slog.Handler {
	return &logView{v.l, append(append([]slog.Attr(nil), v.attrs...), as...)}
}
func (v *logView) WithGroup(string) slog.Handler { return v }
