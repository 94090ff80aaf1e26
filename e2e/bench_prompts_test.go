package e2e

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aepforms/aepforms/e2e/samples"
)

// BenchmarkPromptMemory measures what big prompts cost serve: 120
// requests with 8 MB prompts (one POST each, in twelve sessions, one
// agent, each once serve has counted the one before) are posted to a relay, and serve (a subprocess built without
// -race, on that relay: an external relay from serve's side) reads them
// all; the inbox keeps what --max-inbox-bytes allows and drops the rest.
//
// Metrics: idle-MB is serve's resident set once it is connected, before
// anything is posted (the baseline, same run); peak-MB its peak resident
// set (VmHWM) through the flood, held to the 300 MB target; after-MB its
// resident set once every request is kept or dropped. relay-heap-MB is
// the live heap (after GC) of the benchmark's own process, which holds
// the relay: what its replay buffers keep (the relay's --buffer-bytes
// bound, 64 MiB by default) plus the test's own.
//
// Under -short the flood is 12 prompts of 1 MB and serve runs in the
// benchmark's process (no RSS figures; relay-heap-MB then includes serve).
func BenchmarkPromptMemory(b *testing.B) {
	n, size := 120, 8_000_000
	bin := ""
	if testing.Short() {
		n, size = 12, 1_000_000
	} else {
		bin = benchBuildServe(b)
	}
	s := benchStartStack(b, benchStackOptions{})
	ui := benchPageLoadUI{url: s.uiURL}
	if bin != "" {
		s.stopUI()
		ui = benchServeProcess(b, bin, s)
	}
	probe := &benchStack{uiURL: ui.url, client: s.client}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	changed := benchWatchPush(ctx, b, s, ui.url)
	for probe.benchMetric(b, "aepforms_feed_connected") < 1 {
		select {
		case <-changed:
		case <-ctx.Done():
			b.Fatal("serve never connected to the relay")
		}
	}
	idle := benchRSS(b, ui.pid) // 0 in-process
	prompt := benchBigPrompt(size)
	b.ResetTimer()
	for it := range b.N {
		for i := range n {
			req := samples.DeployForm()
			req.Prompt = prompt
			ev := samples.Requested(fmt.Sprintf("big-%d-%d", it, i), fmt.Sprintf("big-%d-%d", it, i%12), int64(it*n+i+1), req)
			if err := benchPostNDJSON(ctx, s, ev); err != nil {
				b.Fatal(err)
			}
			// One at a time: serve reads each before the next is posted,
			// so the relay never drops its feed for falling behind (its
			// queue toward a subscriber is bounded at 64 MiB).
			want := float64(it*n + i + 1)
			for probe.benchMetric(b, "aepforms_pending_cards")+benchDroppedTotal(b, probe) < want {
				select {
				case <-changed:
				case <-ctx.Done():
					b.Fatalf("serve holds %v pending and dropped %v, want %v in all", probe.benchMetric(b, "aepforms_pending_cards"), benchDroppedTotal(b, probe), want)
				}
			}
		}
	}
	b.StopTimer()
	if ui.pid != 0 {
		b.ReportMetric(float64(idle)/(1<<20), "idle-MB")
		b.ReportMetric(float64(benchPeakRSS(b, ui.pid))/(1<<20), "peak-MB")
		b.ReportMetric(float64(benchRSS(b, ui.pid))/(1<<20), "after-MB")
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "relay-heap-MB")
}

// benchBigPrompt is about size bytes of Markdown: numbered lines of text.
func benchBigPrompt(size int) string {
	var sb strings.Builder
	sb.Grow(size + 64)
	for i := 0; sb.Len() < size; i++ {
		fmt.Fprintf(&sb, "Line %d of a long report the agent attached, with *some* emphasis.\n", i)
	}
	return sb.String()
}

// benchDroppedTotal sums aepforms_dropped_requests_total over its agents.
func benchDroppedTotal(b *testing.B, s *benchStack) float64 {
	b.Helper()
	resp, err := s.client.Get(s.uiURL + "metrics")
	if err != nil {
		b.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	var sum float64
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatalf("GET /metrics: %v", err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "aepforms_dropped_requests_total{") {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			b.Fatalf("/metrics %q: %v", line, err)
		}
		sum += f
	}
	return sum
}
