package feed

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/sse"
)

// testRelay is a small AEP SSE endpoint built on sse.Writer for the feed's
// tests (not the real relay): it keeps a history, serves from=all,
// from=[...] (exclusive positions, named sessions only) and live delivery,
// and can be made to fail, go silent, refuse from=all, or drop every open
// stream (a restart).
type testRelay struct {
	srv *httptest.Server

	mu          sync.Mutex
	history     []sse.Message
	grew        chan struct{} // closed and replaced on every append
	kill        chan struct{} // closed and replaced by restart
	status      int           // when set, every request is answered with it
	token       string        // when set, required as Bearer
	refuseAll   bool          // answer from=all with 400
	silent      bool          // send headers, then nothing
	stall       bool          // send nothing, not even headers
	preamble    []string      // comments written at the start of each stream
	ping        time.Duration // heartbeat interval, 0 = none
	pings       chan struct{} // one value per ping written
	requests    []*http.Request
	requestSeen chan *http.Request
}

func newTestRelay(t *testing.T) *testRelay {
	t.Helper()
	tr := &testRelay{
		grew:        make(chan struct{}),
		kill:        make(chan struct{}),
		pings:       make(chan struct{}, 1024),
		requestSeen: make(chan *http.Request, 1024),
	}
	tr.srv = httptest.NewServer(http.HandlerFunc(tr.serve))
	t.Cleanup(func() {
		tr.restart()
		tr.srv.Close()
	})
	return tr
}

func (tr *testRelay) URL() string { return tr.srv.URL }

// set changes the relay's behaviour under its lock.
func (tr *testRelay) set(f func(tr *testRelay)) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	f(tr)
}

// add appends events to the history and wakes live streams.
func (tr *testRelay) add(events ...*aep.Event) {
	for _, e := range events {
		m := sse.Message{Event: e.Type(), Data: string(e.Raw())}
		if p, ok := e.Position(); ok {
			m.ID = aep.FormatSSEID(e.Session(), p)
		}
		tr.addMessage(m)
	}
}

func (tr *testRelay) addMessage(m sse.Message) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.history = append(tr.history, m)
	close(tr.grew)
	tr.grew = make(chan struct{})
}

// restart ends every open stream; the history is kept unless the test
// changes it.
func (tr *testRelay) restart() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	close(tr.kill)
	tr.kill = make(chan struct{})
}

// requestCount is how many stream requests arrived.
func (tr *testRelay) requestCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.requests)
}

func (tr *testRelay) serve(rw http.ResponseWriter, req *http.Request) {
	tr.mu.Lock()
	tr.requests = append(tr.requests, req)
	status, token, refuseAll, silent, stall := tr.status, tr.token, tr.refuseAll, tr.silent, tr.stall
	preamble, ping, kill := tr.preamble, tr.ping, tr.kill
	tr.mu.Unlock()
	select {
	case tr.requestSeen <- req:
	default: // a test that does not read requests (fast retries) must not block the relay
	}

	switch {
	case req.URL.Path != "/stream":
		http.NotFound(rw, req)
		return
	case status != 0:
		http.Error(rw, "test relay down", status)
		return
	case token != "" && req.Header.Get("Authorization") != "Bearer "+token:
		http.Error(rw, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	case refuseAll && req.URL.Query().Get("from") == "all":
		http.Error(rw, `{"error":"invalid-from"}`, http.StatusBadRequest)
		return
	case stall:
		select {
		case <-req.Context().Done():
		case <-kill:
		}
		return
	}
	// Subscribe before the headers go out, as a relay must: whatever is
	// added once the client sees the stream open is delivered live.
	tr.mu.Lock()
	snapshot := append([]sse.Message(nil), tr.history...)
	next := len(tr.history)
	tr.mu.Unlock()
	w, err := sse.NewWriter(rw, time.Second)
	if err != nil {
		return
	}
	if silent {
		select {
		case <-req.Context().Done():
		case <-kill:
		}
		return
	}
	for _, c := range preamble {
		if w.Comment(c) != nil {
			return
		}
	}
	from := req.URL.Query().Get("from")
	var named map[string]aep.Position
	if from != "" && from != "all" {
		var ps []fromPosition
		if json.Unmarshal([]byte(from), &ps) != nil {
			return
		}
		named = make(map[string]aep.Position)
		for _, p := range ps {
			named[p.Session] = aep.Position{Epoch: p.Epoch, Seq: p.Seq}
		}
	}
	for _, m := range snapshot {
		if from == "all" || replayAfter(m, named) {
			if w.Event(m) != nil {
				return
			}
		}
	}
	var tick <-chan time.Time
	if ping > 0 {
		t := time.NewTicker(ping)
		defer t.Stop()
		tick = t.C
	}
	for {
		live, grew := tr.since(&next)
		for _, m := range live {
			if w.Event(m) != nil {
				return
			}
		}
		select {
		case <-grew:
		case <-tick:
			if w.Ping() != nil {
				return
			}
			tr.pings <- struct{}{}
		case <-kill:
			return
		case <-req.Context().Done():
			return
		}
	}
}

// since returns the history added after *next (advancing it) and the
// channel closed on the next append. A test that rewrote the history to a
// shorter one restarts its streams; until then they see nothing new.
func (tr *testRelay) since(next *int) ([]sse.Message, chan struct{}) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if *next > len(tr.history) {
		*next = len(tr.history)
	}
	live := append([]sse.Message(nil), tr.history[*next:]...)
	*next = len(tr.history)
	return live, tr.grew
}

// replayAfter reports whether m is in a named session strictly after its
// from position.
func replayAfter(m sse.Message, named map[string]aep.Position) bool {
	if m.ID == "" {
		return false
	}
	s, p, err := aep.ParseSSEID(m.ID)
	if err != nil {
		return false
	}
	from, ok := named[s]
	return ok && from.Less(p)
}

// event builds a sequenced event of session s from source aep://test/{s}.
func event(t *testing.T, s string, seq int64, typ, id string) *aep.Event {
	t.Helper()
	e, err := aep.Build(aep.Envelope{
		ID: id, Type: typ, Time: "2026-07-03T10:15:05.000Z",
		Source: "aep://test/agent/a/session/" + strings.ReplaceAll(s, " ", "_"), Agent: "a",
		Session: s, Seq: aep.Int64(seq), Data: map[string]any{},
	})
	if err != nil {
		t.Fatalf("build event: %v", err)
	}
	return e
}

// newHandlerServer serves h on a port-0 listener until the test ends.
func newHandlerServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// testTimeout is the deadline channel for a single wait.
func testTimeout() <-chan time.Time { return time.After(waitFor) }
