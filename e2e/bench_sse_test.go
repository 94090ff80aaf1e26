package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/sse"
)

// benchArrival is one message a tap read, stamped when the reader
// returned it, before anything else was done with it.
type benchArrival struct {
	tap int       // which tap read it
	at  time.Time // when Next returned it
	msg sse.Message
}

// benchTap reads one event stream (the relay's /stream or the UI's
// /push) and sends every message whose event type is in want to out.
// Comments and other types are read and dropped.
type benchTap struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// benchOpenTap connects to u with header and starts reading. It returns
// once the server answered 200 with an event stream and, when ready is
// not "", once a message of type ready arrived (the UI's first `status`
// says the browser is subscribed; the relay subscribes before its
// headers).
func benchOpenTap(tb testing.TB, client *http.Client, u string, header http.Header, id int, ready string, want map[string]bool, out chan<- benchArrival) *benchTap {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		tb.Fatalf("tap %s: %v", u, err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		tb.Fatalf("tap %s: %v", u, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		cancel()
		tb.Fatalf("tap %s: %s %s, want 200 text/event-stream", u, resp.Status, resp.Header.Get("Content-Type"))
	}
	t := &benchTap{cancel: cancel, done: make(chan struct{})}
	subscribed := make(chan error, 1)
	if ready == "" {
		subscribed <- nil
	}
	go func() {
		defer close(t.done)
		defer resp.Body.Close()
		rd := sse.NewReader(resp.Body, 0)
		seen := ready == ""
		for {
			it, err := rd.Next()
			at := time.Now()
			if err != nil {
				if !seen {
					subscribed <- fmt.Errorf("stream ended before its first %s event: %w", ready, err)
				}
				return
			}
			if it.IsComment {
				continue
			}
			if !seen && it.Event == ready {
				seen = true
				subscribed <- nil
			}
			if !want[it.Event] {
				continue
			}
			select {
			case out <- benchArrival{tap: id, at: at, msg: it.Message}:
			case <-ctx.Done():
				return
			}
		}
	}()
	tb.Cleanup(t.close)
	select {
	case err := <-subscribed:
		if err != nil {
			tb.Fatalf("tap %s: %v", u, err)
		}
	case <-time.After(benchWait):
		tb.Fatalf("tap %s: not subscribed within %v", u, benchWait)
	}
	return t
}

// close ends the tap and waits for its reader.
func (t *benchTap) close() {
	t.cancel()
	<-t.done
}

// benchCloseAll closes taps in parallel (a hundred sequential closes
// would each wait for a server to notice).
func benchCloseAll(taps []*benchTap) {
	var wg sync.WaitGroup
	for _, t := range taps {
		wg.Go(t.close)
	}
	wg.Wait()
}
