package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// connected and the database answers within timeout and takes writes,
// 503 otherwise, naming which is down and, for the database, why in the
// operator's words ("reason"; the detail is logged): a load balancer
// sends no operator to a replica that cannot keep an answer.
func handleReadyz(up Upstream, db Database, timeout time.Duration, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		feed, respond, database := true, true, true
		reason := ""
		if up != nil {
			feed, respond = up.FeedConnected(), up.RespondConnected()
		}
		if db != nil {
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			if err := db.Ping(ctx); err != nil {
				database, reason = false, databaseWords(err)
				log.Warn("web: readyz: database not ready", "err", err)
			}
			cancel()
		}
		ok := feed && respond && database
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		why := ""
		if reason != "" {
			b, _ := json.Marshal(reason)
			why = `,"reason":` + string(b)
		}
		fmt.Fprintf(w, `{"ok":%t,"feed":%t,"respond":%t,"database":%t%s}`+"\n", ok, feed, respond, database, why)
	}
}

// databaseWords is a database error in the operator's words: its own
// Explain when it has one (the disk full), else that the database does
// not answer.
func databaseWords(err error) string {
	var e interface{ Explain() string }
	if errors.As(err, &e) {
		return e.Explain()
	}
	return "The answer journal's database does not answer."
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

// Metrics counts what the HTTP side does: browsers on the push stream,
// browsers dropped for reading too slowly, other connections cut for being
// slow (a trickled body, an unread response), and answer posts by what the
// handler did with them (sent: queued; not_sent: refused, 422 or 409;
// failed: could not be queued). What became of the commands afterwards is
// the respond path's count (Upstream.Outcomes); the feed counts its own
// reconnects. The exposition is written by hand: a dozen counters and
// gauges do not justify a client library and its dependency tree.
type Metrics struct {
	Browsers  atomic.Int64
	PushDrops atomic.Int64
	// SlowClients counts connections cut for sending a post's body
	// slower than Config.BodyTimeout or reading a response slower than
	// Config.ResponseTimeout (push stream drops are PushDrops).
	SlowClients atomic.Int64
	// WrongSecrets counts wrong operator secrets (sign-in and Bearer);
	// GuessRefusals the requests refused 429 by the guessing limits.
	WrongSecrets  atomic.Int64
	GuessRefusals atomic.Int64
	mu            sync.Mutex
	posts         map[string]int64
	// claims is the time-to-first-claim histogram (claimmetrics.go).
	claims claimTimes
}

// Answer counts one answer post: sent, not_sent or failed.
func (m *Metrics) Answer(result string) {
	m.mu.Lock()
	if m.posts == nil {
		m.posts = map[string]int64{}
	}
	m.posts[result]++
	m.mu.Unlock()
}

// handleMetrics writes the metrics in the Prometheus text format:
// pending cards, feed and respond connection (1 up, 0 down), feed
// reconnects, connected browsers, push drops, answers by outcome (the
// handler's own and the respond path's in one family) and the requests
// the inbox dropped, by agent (dropped.go).
func handleMetrics(in Inbox, up Upstream, m *Metrics, n Notifier, rs Rules, routed RoutingMetrics) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		st := in.Status()
		var b strings.Builder
		gauge := func(name, help string, v int64) {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
		}
		counter := func(name, help string, v int64) {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
		}
		bit := func(ok bool) int64 {
			if ok {
				return 1
			}
			return 0
		}
		gauge("aepforms_pending_cards", "Requests waiting for an answer.", int64(st.Pending))
		gauge("aepforms_feed_connected", "1 when the relay event feed is connected.", bit(st.FeedConnected))
		answers := map[string]int64{}
		var reconnects int64
		if up != nil {
			gauge("aepforms_respond_connected", "1 when the respond path to the relay is connected.", bit(up.RespondConnected()))
			reconnects = up.FeedReconnects()
			for state, n := range up.Outcomes() {
				answers[string(state)] += n
			}
		}
		counter("aepforms_feed_reconnects_total", "Times the relay event feed reconnected.", reconnects)
		gauge("aepforms_browsers_connected", "Browsers reading the push stream.", m.Browsers.Load())
		counter("aepforms_push_drops_total", "Browsers dropped for reading too slowly.", m.PushDrops.Load())
		counter("aepforms_slow_clients_total", "Connections cut for sending a body or reading a response too slowly.", m.SlowClients.Load())
		counter("aepforms_wrong_secrets_total", "Wrong operator secrets presented (sign-in and Bearer).", m.WrongSecrets.Load())
		counter("aepforms_guess_refusals_total", "Requests refused (429) by the guessing limits.", m.GuessRefusals.Load())
		if n != nil {
			sent, failed, gone := n.PushCounts()
			fmt.Fprintf(&b, "# HELP aepforms_web_push_total Web Push notifications by outcome (gone: the device's subscription ended and was removed).\n# TYPE aepforms_web_push_total counter\n")
			fmt.Fprintf(&b, "aepforms_web_push_total{outcome=\"sent\"} %d\naepforms_web_push_total{outcome=\"failed\"} %d\naepforms_web_push_total{outcome=\"gone\"} %d\n", sent, failed, gone)
		}
		counter("aepforms_invalid_events_total", "Feed events that broke the AEP envelope rules (an invalid request is shown malformed; the rest change no card).", int64(st.Invalid))
		m.mu.Lock()
		for result, n := range m.posts {
			answers[result] += n
		}
		m.mu.Unlock()
		fmt.Fprintf(&b, "# HELP aepforms_answers_total Answers by outcome.\n# TYPE aepforms_answers_total counter\n")
		for _, k := range slices.Sorted(maps.Keys(answers)) {
			fmt.Fprintf(&b, "aepforms_answers_total{outcome=%q} %d\n", k, answers[k])
		}
		writeDropped(&b, st)
		writeRuleAnswers(&b, rs)
		if routed != nil {
			routed.Write(&b)
		}
		writeClaimTimes(&b, m)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	}
}
