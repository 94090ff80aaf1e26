package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/relay"
	"github.com/aepforms/aepforms/internal/sse"
)

const testToken = "test-token-agent"

// wait is the deadline of every wait in these tests.
const wait = 10 * time.Second

// testRelay is the embedded relay behind one httptest server whose handler
// can be swapped: restart shuts the running relay down (its sockets get
// closing, then close) and puts a fresh one, with an empty history, where
// the agent expects it.
type testRelay struct {
	t    *testing.T
	srv  *httptest.Server
	addr string
	mu   sync.Mutex
	r    *relay.Relay
	h    http.Handler
}

func startRelay(t *testing.T) *testRelay {
	t.Helper()
	tr := &testRelay{t: t}
	tr.swap()
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tr.mu.Lock()
		h := tr.h
		tr.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	tr.addr = tr.srv.Listener.Addr().String()
	t.Cleanup(func() {
		tr.shutdown(tr.swap())
		tr.srv.Close()
	})
	return tr
}

func (tr *testRelay) url() string { return tr.srv.URL }

// swap installs a fresh relay and returns the previous one (nil at first).
func (tr *testRelay) swap() *relay.Relay {
	cfg := relay.DefaultConfig()
	cfg.Token = testToken
	r := relay.New(cfg)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	old := tr.r
	tr.r, tr.h = r, r.Handler()
	return old
}

func (tr *testRelay) shutdown(r *relay.Relay) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(tr.t, r.Shutdown(ctx))
}

// restart replaces the relay by a fresh one and shuts the old one down.
func (tr *testRelay) restart() { tr.shutdown(tr.swap()) }

// history returns every event the relay holds (from=all, live=0).
func (tr *testRelay) history(t *testing.T) []*aep.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tr.url()+"/stream?from=all&live=0", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rd := sse.NewReader(resp.Body, 16<<20)
	var out []*aep.Event
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if it.IsComment {
			continue
		}
		ev, err := aep.Decode([]byte(it.Data))
		require.NoError(t, err)
		out = append(out, ev)
	}
}

// runAgent starts an agent on tr with short intervals; it stops at cleanup.
func runAgent(t *testing.T, tr *testRelay, scenarios []string, mod func(*Config)) *Agent {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RelayURL = tr.url()
	cfg.Token = testToken
	cfg.Scenarios = scenarios
	cfg.Every = 0
	cfg.Backoff = 20 * time.Millisecond
	cfg.BackoffMax = 100 * time.Millisecond
	cfg.DrainTimeout = 2 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	a := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent Run: %v", err)
			}
		case <-time.After(wait):
			t.Error("agent Run did not return after its ctx ended")
		}
	})
	return a
}

// sender is a control sender: a consumer WebSocket that subscribes to one
// session and sends commands.
type sender struct {
	t      *testing.T
	c      *websocket.Conn
	frames chan []byte
}

func newSender(t *testing.T, tr *testRelay, session string) *sender {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+tr.addr+"/socket?access_token="+url.QueryEscape(testToken), nil)
	require.NoError(t, err)
	c.SetReadLimit(16 << 20)
	s := &sender{t: t, c: c, frames: make(chan []byte, 1024)}
	s.write(map[string]any{"type": "hello", "versions": []string{"0.1"}, "role": "consumer",
		"identity": map[string]any{"agent": "test-sender", "instance": "t/1"}})
	_, b, err := c.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(b), `"hello"`)

	readCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, b, err := c.Read(readCtx)
			if err != nil {
				return
			}
			select {
			case s.frames <- b:
			default:
				t.Error("sender: frame buffer full")
				return
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		_ = c.CloseNow()
		<-done
	})
	s.write(map[string]any{"type": "subscribe", "id": "s1", "filter": map[string]any{"session": session}, "from": "all"})
	s.frame(func(f map[string]any) bool { return f["type"] == "subscribed" })
	return s
}

func (s *sender) write(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(s.t, err)
	s.writeRaw(b)
}

func (s *sender) writeRaw(b []byte) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(s.t, s.c.Write(ctx, websocket.MessageText, b))
}

// frame waits for a non-event frame matching pred.
func (s *sender) frame(pred func(map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case b := <-s.frames:
			var f map[string]any
			require.NoError(s.t, json.Unmarshal(b, &f))
			if typ, _ := f["type"].(string); !strings.Contains(typ, ".") && pred(f) {
				return f
			}
		case <-deadline:
			s.t.Fatal("sender: no matching frame")
		}
	}
}

// event waits for the next event of the subscription whose type is typ,
// skipping others.
func (s *sender) event(typ string) *aep.Event {
	s.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case b := <-s.frames:
			if !strings.Contains(string(b), `"aep"`) {
				s.failOnError(b)
				continue
			}
			ev, err := aep.Decode(b)
			require.NoError(s.t, err)
			if ev.Type() == typ {
				return ev
			}
		case <-deadline:
			s.t.Fatalf("sender: no %s event", typ)
			return nil
		}
	}
}

// failOnError fails the test on an error frame: a command the relay
// refused never reaches the agent, so waiting for its ack is pointless.
func (s *sender) failOnError(b []byte) {
	s.t.Helper()
	var f map[string]any
	if json.Unmarshal(b, &f) == nil && f["type"] == "error" {
		s.t.Fatalf("sender: relay error frame %s", b)
	}
}

// events collects the subscription's events until one of type last.
func (s *sender) eventsUntil(last string) []*aep.Event {
	s.t.Helper()
	var out []*aep.Event
	deadline := time.After(wait)
	for {
		select {
		case b := <-s.frames:
			if !strings.Contains(string(b), `"aep"`) {
				s.failOnError(b)
				continue
			}
			ev, err := aep.Decode(b)
			require.NoError(s.t, err)
			out = append(out, ev)
			if ev.Type() == last {
				return out
			}
		case <-deadline:
			s.t.Fatalf("sender: no %s event; got %v", last, types(out))
			return nil
		}
	}
}

// command builds a command from this sender.
func (s *sender) command(typ, session, subject, run string, data any) *aep.Event {
	s.t.Helper()
	env := aep.Envelope{
		ID: ulid.Make().String(), Type: typ, Subject: subject, Cause: subject,
		Time: time.Now().UTC().Format(timeLayout), Source: "aep://test/agent/test-sender",
		Agent: "test-sender", Session: session, Run: run, Capture: "full", Data: data,
	}
	ev, err := aep.Build(env)
	require.NoError(s.t, err)
	return ev
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}
