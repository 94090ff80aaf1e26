package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/sse"
)

// pushStream reads the UI's browser push (/push) as an EventSource does,
// reconnecting with Last-Event-ID when the server ends the stream (a
// dropped slow reader) if asked to.
type pushStream struct {
	items   chan sse.Item
	pending []sse.Item
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	cookie  string // the operator session's Cookie header, "" for none

	mu     sync.Mutex
	lastID string // the last event id received, across reconnects
	err    error  // why the stream ended, when it did not reconnect
}

// openPush connects to {ui}/push{query} (lastEventID "" = a first
// connect) and returns once the server has subscribed it (its first
// status event arrived). Events before that are kept for next.
func (s *stack) openPush(t *testing.T, query, lastEventID string, reconnect bool) *pushStream {
	t.Helper()
	ctx, cancel := context.WithCancel(s.ctx)
	p := &pushStream{items: make(chan sse.Item, 1024), cancel: cancel, lastID: lastEventID, cookie: s.cookie}
	first := make(chan error, 1)
	p.wg.Go(func() { p.run(ctx, s.resolve(t, nil, "push"+query).String(), reconnect, first) })
	t.Cleanup(p.close)
	select {
	case err := <-first:
		require.NoError(t, err, "GET /push")
	case <-time.After(stackWait):
		t.Fatalf("GET /push: no response within %v", stackWait)
	}
	deadline := time.After(stackWait)
	for {
		select {
		case it, ok := <-p.items:
			require.True(t, ok, "the push stream ended before its first status event: %v", p.endErr())
			p.pending = append(p.pending, it)
			if !it.IsComment && it.Event == "status" {
				return p
			}
		case <-deadline:
			t.Fatalf("no status event on /push within %v", stackWait)
		}
	}
}

func (p *pushStream) run(ctx context.Context, u string, reconnect bool, first chan<- error) {
	defer close(p.items)
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			req.Header.Set("Accept", "text/event-stream")
			if p.cookie != "" {
				req.Header.Set("Cookie", p.cookie)
			}
			if id := p.last(); id != "" {
				req.Header.Set("Last-Event-ID", id)
			}
		}
		var resp *http.Response
		if err == nil {
			resp, err = http.DefaultClient.Do(req)
		}
		if err == nil && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")) {
			err = errors.New("push answered " + resp.Status + " " + resp.Header.Get("Content-Type"))
			resp.Body.Close()
		}
		if attempt == 0 {
			first <- err
		}
		if err != nil {
			p.end(err)
			return
		}
		rd := sse.NewReader(resp.Body, 0)
		err = p.read(ctx, rd)
		resp.Body.Close()
		if ctx.Err() != nil || !reconnect {
			p.end(err)
			return
		}
		// Wait the stream's reconnection time, as EventSource does.
		wait := rd.Retry()
		if wait <= 0 {
			wait = pushRetry
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			p.end(ctx.Err())
			return
		}
	}
}

// pushRetry is the reconnection time of a push reader when the server
// set none (browsers use a few seconds; tests need less).
const pushRetry = 50 * time.Millisecond

func (p *pushStream) read(ctx context.Context, rd *sse.Reader) error {
	for {
		it, err := rd.Next()
		if err != nil {
			return err
		}
		switch {
		case !it.IsComment && it.Event == "reload":
			// Too far behind to catch up: the page reloads, and its
			// next stream starts afresh.
			p.mu.Lock()
			p.lastID = ""
			p.mu.Unlock()
		case !it.IsComment && it.ID != "":
			p.mu.Lock()
			p.lastID = it.ID
			p.mu.Unlock()
		}
		select {
		case p.items <- it:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *pushStream) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastID
}

func (p *pushStream) end(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

func (p *pushStream) endErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// close ends the stream and waits for its reader.
func (p *pushStream) close() {
	p.cancel()
	p.wg.Wait()
}

// next returns the next message (comments skipped), failing the test at
// deadline or when the stream ended.
func (p *pushStream) next(t *testing.T, deadline <-chan time.Time) sse.Item {
	t.Helper()
	it, ok := p.nextOr(t, deadline)
	if !ok {
		t.Fatalf("no push event within %v", stackWait)
	}
	return it
}

// nextOr is next, reporting false at deadline instead of failing.
func (p *pushStream) nextOr(t *testing.T, deadline <-chan time.Time) (sse.Item, bool) {
	t.Helper()
	for {
		if len(p.pending) > 0 {
			it := p.pending[0]
			p.pending = p.pending[1:]
			if !it.IsComment {
				return it, true
			}
			continue
		}
		select {
		case it, ok := <-p.items:
			if !ok {
				t.Fatalf("the push stream ended: %v", p.endErr())
			}
			if !it.IsComment {
				return it, true
			}
		case <-deadline:
			return sse.Item{}, false
		}
	}
}

// fragment parses a card event's data.
func fragment(t *testing.T, data string) *goquery.Selection {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(data))
	require.NoError(t, err)
	return doc.Selection
}
