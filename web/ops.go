package web

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aepforms/aepforms/static"
)

// handleHealthz answers whether the process is up: a bare answer, no auth.
func handleHealthz() http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	}
}

// handleReadyz answers 200 when the feed and the respond path are
// connected, 503 otherwise, naming which is down.
func handleReadyz(ready Readiness) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		feed, respond := true, true
		if ready != nil {
			feed, respond = ready.FeedConnected(), ready.RespondConnected()
		}
		w.Header().Set("Content-Type", "application/json")
		if !feed || !respond {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, `{"ok":%t,"feed":%t,"respond":%t}`+"\n", feed && respond, feed, respond)
	}
}

// handleStatic serves the embedded CSS, JS and icons. Asset URLs carry a
// content version, so they may be cached for long.
func handleStatic() http.Handler {
	files := http.StripPrefix("/static/", http.FileServerFS(static.FS))
	version := static.Hash()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		// Only the current version may be kept for good: an old or
		// made-up ?v= must not pin today's file under that URL.
		if r.URL.Query().Get("v") == version {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}

// Metrics counts what the UI does, exposed in the Prometheus text format.
// The exposition is written by hand: five counters and gauges do not
// justify a client library and its dependency tree.
type Metrics struct {
	FeedReconnects  atomic.Int64
	Browsers        atomic.Int64
	PushDrops       atomic.Int64
	mu              sync.Mutex
	answersByResult map[string]int64
}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics { return &Metrics{answersByResult: map[string]int64{}} }

// Answer counts one answer outcome: sent (queued), accepted, rejected or
// failed (the respond path), not_sent (a post the UI refused: 422, 409).
func (m *Metrics) Answer(outcome string) {
	m.mu.Lock()
	m.answersByResult[outcome]++
	m.mu.Unlock()
}

// handleMetrics writes the metrics in the Prometheus text format:
// pending cards, feed and respond connection (1 up, 0 down), feed
// reconnects, connected browsers, push drops and answers by outcome.
func handleMetrics(m *Metrics, in Inbox, ready Readiness) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		st := in.Status()
		var b strings.Builder
		gauge := func(name, help string, v int64) {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
		}
		counter := func(name, help string, v int64) {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
		}
		gauge("aepforms_pending_cards", "Requests waiting for an answer.", int64(st.Pending))
		feedUp := int64(0)
		if st.FeedConnected {
			feedUp = 1
		}
		gauge("aepforms_feed_connected", "1 when the relay event feed is connected.", feedUp)
		if ready != nil {
			respondUp := int64(0)
			if ready.RespondConnected() {
				respondUp = 1
			}
			gauge("aepforms_respond_connected", "1 when the respond path to the relay is connected.", respondUp)
		}
		counter("aepforms_feed_reconnects_total", "Times the relay event feed reconnected.", m.FeedReconnects.Load())
		gauge("aepforms_browsers_connected", "Browsers reading the push stream.", m.Browsers.Load())
		counter("aepforms_push_drops_total", "Browsers dropped for reading too slowly.", m.PushDrops.Load())
		fmt.Fprintf(&b, "# HELP aepforms_answers_total Answers by outcome.\n# TYPE aepforms_answers_total counter\n")
		m.mu.Lock()
		keys := make([]string, 0, len(m.answersByResult))
		for k := range m.answersByResult {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "aepforms_answers_total{outcome=%q} %d\n", k, m.answersByResult[k])
		}
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	}
}
