package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/feed"
)

// BenchmarkPushLatency measures, per iteration, one attention.requested
// posted to the relay's POST /events by an HTTP emitter until (a) it is
// read off the relay's /stream by a bare SSE reader using the UI feed's
// own filter (the bare hop) and (b) its card fragment is read off the
// UI's /push by every connected browser. Both are timed from the same
// moment (just before the POST) in the same iteration, so the difference
// is what the UI adds: its feed's hop, the inbox, rendering the card for
// each browser and the push write. Each browser's delivery is one UI
// sample (browsers x iterations in all); the bare hop has one reader, so
// one sample per iteration. Readers run in the same process and stamp a
// message when the SSE reader returns it.
//
// Metrics: hop-p50/p99-ms (bare relay hop), ui-p50/p99-ms (every
// browser's delivery), ui-last-p99-ms (the slowest browser of each
// iteration), target-ms (1.5 x hop p99 + 2 ms, the bound for
// ui-p99-ms) and push-drops (browsers the UI dropped; must be 0).
func BenchmarkPushLatency(b *testing.B) {
	for _, browsers := range []int{1, 100} {
		b.Run("browsers="+strconv.Itoa(browsers), func(b *testing.B) { benchPushLatency(b, browsers) })
	}
}

func benchPushLatency(b *testing.B, browsers int) {
	s := benchStartStack(b, benchStackOptions{})
	arrivals := make(chan benchArrival, 4*(browsers+1))

	// Tap 0 is the bare relay reader; taps 1..browsers are browsers.
	q := "?filter=" + url.QueryEscape(feed.DefaultFilter)
	hdr := http.Header{"Authorization": {"Bearer " + s.token}}
	taps := []*benchTap{benchOpenTap(b, s.client, s.relayURL+"/stream"+q, hdr, 0, "", map[string]bool{"attention.requested": true}, arrivals)}
	for i := 1; i <= browsers; i++ {
		taps = append(taps, benchOpenTap(b, s.client, s.uiURL+"push", nil, i, "status", map[string]bool{"card": true}, arrivals))
	}
	defer benchCloseAll(taps)

	em := newBenchEmitter("push-" + strconv.Itoa(browsers))
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	if err := s.benchPostEvents(ctx, em.event(b, "session.started", map[string]any{"label": "push latency benchmark"})); err != nil {
		b.Fatal(err)
	}
	// The session.started reaches the bare tap only through the filter's
	// session.* (not collected); the UI makes no card of it.

	var hop, ui, last benchLatencies
	b.ResetTimer()
	for i := range b.N {
		ev := em.event(b, "attention.requested", benchPushRequest(i))
		t0 := time.Now()
		if err := s.benchPostEvents(ctx, ev); err != nil {
			b.Fatal(err)
		}
		seen := make([]bool, browsers+1)
		var slowest time.Duration
		for got := 0; got < browsers+1; {
			select {
			case a := <-arrivals:
				if seen[a.tap] || benchSampleOf(a.msg.Data) != i {
					continue // an earlier sample's, or a repeat
				}
				seen[a.tap] = true
				got++
				d := a.at.Sub(t0)
				if a.tap == 0 {
					hop = append(hop, d)
				} else {
					ui = append(ui, d)
					slowest = max(slowest, d)
				}
			case <-ctx.Done():
				b.Fatalf("sample %d: %d of %d readers got it within %v", i, got, browsers+1, benchWait)
			}
		}
		last = append(last, slowest)
	}
	b.StopTimer()
	benchReportLatency(b, "hop", hop)
	benchReportLatency(b, "ui", ui)
	b.ReportMetric(benchMS(last.quantile(0.99)), "ui-last-p99-ms")
	b.ReportMetric(1.5*benchMS(hop.quantile(0.99))+2, "target-ms")
	b.ReportMetric(s.benchMetric(b, "aepforms_push_drops_total"), "push-drops")
}

// benchPushRequest is sample i's request: a deploy form (text, boolean,
// multi select, single select with Other) whose prompt carries the
// sample number for the readers.
func benchPushRequest(i int) aep.Request {
	r := samples.DeployForm()
	r.Prompt = fmt.Sprintf("Deploy the service? (benchmark sample #%d.)", i)
	return r
}

// benchSampleOf is the sample number in a message carrying
// "benchmark sample #N.", or -1.
func benchSampleOf(data string) int {
	const mark = "benchmark sample #"
	i := strings.Index(data, mark)
	if i < 0 {
		return -1
	}
	rest := data[i+len(mark):]
	j := strings.IndexByte(rest, '.')
	if j < 0 {
		return -1
	}
	n, err := strconv.Atoi(rest[:j])
	if err != nil {
		return -1
	}
	return n
}

// benchEmitter builds the events of one HTTP emitter's session, with
// increasing seq.
type benchEmitter struct {
	session, source string
	seq             int64
	n               int
}

func newBenchEmitter(name string) *benchEmitter {
	session := "bench-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	return &benchEmitter{session: session, source: "aep://bench.test/agent/bench-emitter/session/" + session}
}

// event builds the next event of the session.
func (e *benchEmitter) event(tb testing.TB, typ string, data any) *aep.Event {
	tb.Helper()
	e.n++
	ev, err := aep.Build(aep.Envelope{
		ID: fmt.Sprintf("%s-%06d", e.session, e.n), Type: typ,
		Time:   time.Now().UTC().Format(time.RFC3339Nano),
		Source: e.source, Agent: "bench-emitter", Session: e.session,
		Seq: aep.Int64(e.seq), Epoch: aep.Int64(0), Capture: "full", Data: data,
	})
	if err != nil {
		tb.Fatalf("build %s: %v", typ, err)
	}
	e.seq++
	return ev
}
