package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/agent"
)

// soakFor is how long BenchmarkSoak runs: go test ./e2e -run '^$' -bench
// BenchmarkSoak -soak 10m. 0 (the default) runs it for one minute, or a
// few seconds under -short.
var soakFor = flag.Duration("soak", 0, "how long BenchmarkSoak runs (0: 1 min, 3 s under -short)")

// BenchmarkSoak holds serve under steady load and reports its resident
// memory over time: every second a demo agent (a new one, in new sessions)
// asks soakRate deploy forms and the benchmark answers each through the
// UI as a browser does (GET the card, POST the form), then waits for the
// agent to have accepted every answer. serve is a subprocess built
// without -race on a relay in the benchmark's process.
//
// Metrics: rss-idle-MB (connected, nothing asked), rss-1m-MB,
// rss-5m-MB and rss-10m-MB (resident set after 1, 5 and 10 minutes, as
// far as the run goes), rss-end-MB and peak-MB (VmHWM) at the end, and
// q/s, the rate reached (soakRate unless the machine could not keep up).
// Memory is flat when rss-5m and rss-10m stay near rss-1m.
//
// Under -short serve runs in the benchmark's process for a few seconds and
// no RSS is reported.
func BenchmarkSoak(b *testing.B) {
	const soakRate = 20
	length := *soakFor
	bin := ""
	switch {
	case length == 0 && testing.Short():
		length = 3 * time.Second
	case length == 0:
		length = time.Minute
	}
	if !testing.Short() {
		bin = benchBuildServe(b)
	}
	s := benchStartStack(b, benchStackOptions{uiArgs: benchAllInFull})
	ui := benchPageLoadUI{url: s.uiURL}
	if bin != "" {
		s.stopUI()
		ui = benchServeProcess(b, bin, s, benchAllInFull...)
	}
	probe := &benchStack{uiURL: ui.url, origin: ui.url[:len(ui.url)-1], client: s.client, relayURL: s.relayURL, token: s.token, ctx: s.ctx}
	ctx, cancel := context.WithTimeout(context.Background(), length+5*time.Minute)
	defer cancel()
	changed := benchWatchPush(ctx, b, s, ui.url)
	for probe.benchMetric(b, "aepforms_feed_connected") < 1 {
		select {
		case <-changed:
		case <-ctx.Done():
			b.Fatal("serve never connected to the relay")
		}
	}
	idle := benchRSS(b, ui.pid)
	marks := []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute}
	at := map[time.Duration]int64{}
	prof := os.Getenv("AEPFORMS_SOAK_HEAPPROF") // in-process only: heap profiles at each mark
	b.ResetTimer()
	start := time.Now()
	asked := 0
	pace := time.NewTicker(time.Second) // the load's rate, not a wait for an outcome
	defer pace.Stop()
	for n := 0; time.Since(start) < length; n++ {
		if n > 0 {
			<-pace.C
		}
		scenarios := make([]string, soakRate)
		for i := range scenarios {
			scenarios[i] = agent.ScenarioDeploy
		}
		ag, stop := probe.benchStartAgent(b, scenarios)
		for i, a := range benchAskedAll(b, ag, soakRate) {
			id := string(benchCardID(a))
			probe.benchSoakAnswer(ctx, b, changed, id, fmt.Sprintf("svc-%d-%d", n, i))
		}
		if err := ag.Until(ctx, func() bool {
			for _, ss := range ag.Sessions() {
				for _, r := range ss.Requests {
					if r.State != agent.StateAnswered {
						return false
					}
				}
			}
			return true
		}); err != nil {
			b.Fatalf("second %d: the agent did not record every answer: %v", n, err)
		}
		stop()
		asked += soakRate
		for _, m := range marks {
			if _, ok := at[m]; !ok && time.Since(start) >= m {
				at[m] = benchRSS(b, ui.pid)
				if prof != "" {
					benchSoakProfile(b, fmt.Sprintf("%s-%s.prof", prof, m))
				}
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if prof != "" {
		benchSoakProfile(b, prof+"-end.prof")
	}
	b.ReportMetric(float64(asked)/elapsed.Seconds(), "q/s")
	if ui.pid != 0 {
		b.ReportMetric(float64(idle)/(1<<20), "rss-idle-MB")
		for _, m := range marks {
			if v, ok := at[m]; ok {
				b.ReportMetric(float64(v)/(1<<20), fmt.Sprintf("rss-%dm-MB", int(m.Minutes())))
			}
		}
		b.ReportMetric(float64(benchRSS(b, ui.pid))/(1<<20), "rss-end-MB")
		b.ReportMetric(float64(benchPeakRSS(b, ui.pid))/(1<<20), "peak-MB")
	}
}

// benchSoakAnswer answers card id's deploy form through the UI once the UI
// shows it (each push message is when to look again).
func (s *benchStack) benchSoakAnswer(ctx context.Context, b *testing.B, changed <-chan struct{}, id, name string) {
	b.Helper()
	for {
		resp, err := s.client.Get(s.uiURL + "cards/" + id)
		if err != nil {
			b.Fatalf("GET card %s: %v", id, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			b.Fatalf("card %s never reached the UI", id)
		}
	}
	action, form := s.benchDeployForm(b, id, name)
	if status := s.benchPostForm(b, action, form); status != http.StatusSeeOther {
		b.Fatalf("answer %s: status %d, want 303", id, status)
	}
}

// benchSoakProfile writes this process's heap profile (after a GC) to path.
func benchSoakProfile(b *testing.B, path string) {
	b.Helper()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
