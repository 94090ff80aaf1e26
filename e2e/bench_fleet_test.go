package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/feed"
	"github.com/aepforms/aepforms/internal/sse"
)

// BenchmarkPushFleet is the push stream at fleet scale: 100, 500 and 2000
// browsers (10 under -short) follow the inbox while new cards arrive at
// most 20 a second (one per 50 ms tick). Each iteration posts one deploy
// form to the relay and waits until the bare relay reader (the hop: the
// relay's /stream with the UI feed's filter) and every browser (the UI's
// /push) read it; the next waits for the next tick. The readers run in
// the benchmark's process; serve is a subprocess built without -race
// (in-process under -short), so the readers' work is not serve's, and
// its memory is its own: mem-per-browser-KB is the growth of serve's
// resident set (VmRSS) from before the browsers connected to after the
// samples, divided by the browsers (no figure under -short).
//
// After serve's samples, the same run measures the floor beside them
// (benchFanOutFloor): a minimal Go server (e2e/benchfloor, also a
// subprocess) writes the frame a browser read for sample 0, with each
// sample's number, to as many loopback connections read the same way, as
// many samples at the same ticks: what the machine takes to carry one
// card to every browser, with no serve in it.
//
// Metrics: hop-p50/p99-ms, ui-p50/p99-ms (every browser's delivery),
// ui-last-p99-ms (the slowest browser of each sample), push-drops (must be
// 0), mem-per-browser-KB and serve-cpu-ms/card (serve's CPU time, user
// and system, over the samples, per card: its own cost, which the other
// load of a shared machine moves less than the latencies; not under
// -short), card-frame-bytes (one browser's frame of the card),
// floor-p50/p99-ms, floor-last-p99-ms and floor-cpu-ms/card (the floor
// runs under -short too, beside the 10 browsers, so it cannot rot).
//
// AEPFORMS_BENCH_FLOOR_WRITERS=N has the floor write each frame from N
// goroutines (default GOMAXPROCS; as many as browsers is a goroutine per
// browser, as serve has).
//
// AEPFORMS_BENCH_SERVE_CPUS=LIST runs serve and the floor on those CPUs
// (run the benchmark under `taskset -c OTHERS`);
// AEPFORMS_BENCH_SERVE_CPUPROFILE=FILE writes serve's CPU profile over
// the samples (not the connects) to FILE.
func BenchmarkPushFleet(b *testing.B) {
	fleets := []int{100, 500, 2000}
	bin := ""
	if testing.Short() {
		fleets = []int{10}
	} else {
		bin = benchBuildServe(b)
	}
	for _, n := range fleets {
		b.Run("browsers="+strconv.Itoa(n), func(b *testing.B) { benchPushFleet(b, bin, n) })
	}
}

func benchPushFleet(b *testing.B, bin string, browsers int) {
	conns := strconv.Itoa(2*browsers + 64)
	var (
		s     *benchStack
		uiURL string
		pid   int
	)
	s = benchStartStack(b, benchStackOptions{uiArgs: []string{"--max-conns", conns}})
	uiURL = s.uiURL
	if bin != "" {
		s.stopUI() // the in-process UI gives way to a subprocess on the same relay
		ui := benchServeProcess(b, bin, s, "--max-conns", conns)
		uiURL, pid = ui.url, ui.pid
	}
	ui := &benchStack{uiURL: uiURL, client: s.client}
	arrivals := make(chan benchArrival, 4*(browsers+1))
	q := "?filter=" + url.QueryEscape(feed.DefaultFilter)
	hdr := http.Header{"Authorization": {"Bearer " + s.token}}
	before := benchRSS(b, pid)
	taps := []*benchTap{benchOpenTap(b, s.client, s.relayURL+"/stream"+q, hdr, 0, "", map[string]bool{"attention.requested": true}, arrivals)}
	for i := 1; i <= browsers; i++ {
		taps = append(taps, benchOpenTap(b, s.client, uiURL+"push", nil, i, "status", map[string]bool{"card": true}, arrivals))
	}
	defer benchCloseAll(taps)

	em := newBenchEmitter("fleet-" + strconv.Itoa(browsers))
	ctx, cancel := context.WithTimeout(context.Background(), 10*benchWait)
	defer cancel()
	if err := s.benchPostEvents(ctx, em.event(b, "session.started", map[string]any{"label": "push fleet benchmark"})); err != nil {
		b.Fatal(err)
	}
	tick := time.NewTicker(50 * time.Millisecond) // at most 20 new cards a second
	defer tick.Stop()
	var hop, all, last benchLatencies
	var card sse.Message // a browser's copy of sample 0, for the floor
	benchProfileServe(b, pid, true)
	cpu0 := benchProcCPU(b, pid)
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		ev := em.event(b, "attention.requested", benchPushRequest(i))
		t0 := time.Now()
		if err := s.benchPostEvents(ctx, ev); err != nil {
			b.Fatal(err)
		}
		var slowest time.Duration
		benchAwaitSample(ctx, b, "sample", arrivals, browsers+1, i, func(a benchArrival) {
			d := a.at.Sub(t0)
			if a.tap == 0 {
				hop = append(hop, d)
				return
			}
			all = append(all, d)
			slowest = max(slowest, d)
			if i == 0 && card.Data == "" {
				card = a.msg
			}
		})
		last = append(last, slowest)
	}
	b.StopTimer()
	cpu := benchProcCPU(b, pid) - cpu0
	benchProfileServe(b, pid, false)
	benchReportLatency(b, "hop", hop)
	benchReportLatency(b, "ui", all)
	b.ReportMetric(benchMS(last.quantile(0.99)), "ui-last-p99-ms")
	b.ReportMetric(ui.benchMetric(b, "aepforms_push_drops_total"), "push-drops")
	if pid != 0 {
		b.ReportMetric(float64(benchRSS(b, pid)-before)/float64(browsers)/1024, "mem-per-browser-KB")
		b.ReportMetric(benchMS(cpu)/float64(b.N), "serve-cpu-ms/card")
	}
	frame, err := sse.AppendFrame(nil, card)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(frame)), "card-frame-bytes")
	benchCloseAll(taps) // serve's browsers leave before the floor's connect
	floor, floorLast, floorCPU := benchFanOutFloor(b, ctx, browsers, card, b.N)
	benchReportLatency(b, "floor", floor)
	b.ReportMetric(benchMS(floorLast.quantile(0.99)), "floor-last-p99-ms")
	b.ReportMetric(benchMS(floorCPU)/float64(b.N), "floor-cpu-ms/card")
}

// benchFanOutFloor is the bare fan-out baseline of a fleet benchmark run:
// e2e/benchfloor (a minimal Go server, a subprocess as serve is, on
// AEPFORMS_BENCH_SERVE_CPUS when set) writes card's frame, with each
// sample's number, to browsers loopback connections read by the same
// readers as serve's /push, n samples at the same 50 ms ticks. It
// returns every reader's delivery time (from just before the frame is
// handed to the server's stdin), each sample's slowest, and the CPU time
// the floor's process used over the samples.
func benchFanOutFloor(b *testing.B, ctx context.Context, browsers int, card sse.Message, n int) (all, last benchLatencies, cpu time.Duration) {
	b.Helper()
	bin := benchBuild(b, "github.com/aepforms/aepforms/e2e/benchfloor")
	argv := []string{bin}
	if w := os.Getenv("AEPFORMS_BENCH_FLOOR_WRITERS"); w != "" {
		argv = append(argv, "-writers", w)
	}
	if cpus := os.Getenv("AEPFORMS_BENCH_SERVE_CPUS"); cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close() // the floor exits when its stdin ends
		if err := cmd.Wait(); err != nil {
			b.Errorf("benchfloor: %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		b.Fatalf("benchfloor said %q: %v", line, err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	arrivals := make(chan benchArrival, 4*browsers)
	taps := make([]*benchTap, 0, browsers)
	for i := range browsers {
		taps = append(taps, benchOpenTap(b, client, "http://"+addr+"/push", nil, i, "status", map[string]bool{"card": true}, arrivals))
	}
	defer benchCloseAll(taps)

	const mark = "benchmark sample #0."
	if !strings.Contains(card.Data, mark) {
		b.Fatalf("the card of sample 0 does not say %q", mark)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	cpu0 := benchProcCPU(b, cmd.Process.Pid)
	for i := range n {
		m := card
		m.Data = strings.Replace(card.Data, mark, fmt.Sprintf("benchmark sample #%d.", i), 1)
		frame, err := sse.AppendFrame(binary.BigEndian.AppendUint32(nil, 0), m)
		if err != nil {
			b.Fatal(err)
		}
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		<-tick.C
		t0 := time.Now()
		if _, err := stdin.Write(frame); err != nil {
			b.Fatalf("benchfloor: %v", err)
		}
		var slowest time.Duration
		benchAwaitSample(ctx, b, "floor sample", arrivals, browsers, i, func(a benchArrival) {
			d := a.at.Sub(t0)
			all = append(all, d)
			slowest = max(slowest, d)
		})
		last = append(last, slowest)
	}
	return all, last, benchProcCPU(b, cmd.Process.Pid) - cpu0
}

// benchAwaitSample waits until each of readers taps (numbered from 0) has
// read sample i, calling got once per tap with its first arrival of it;
// other arrivals (a sample read twice, an earlier one) are skipped.
func benchAwaitSample(ctx context.Context, b *testing.B, what string, arrivals <-chan benchArrival, readers, i int, got func(benchArrival)) {
	b.Helper()
	seen := make([]bool, readers)
	for n := 0; n < readers; {
		select {
		case a := <-arrivals:
			if seen[a.tap] || benchSampleOf(a.msg.Data) != i {
				continue
			}
			seen[a.tap] = true
			n++
			got(a)
		case <-ctx.Done():
			b.Fatalf("%s %d: %d of %d readers got it in time", what, i, n, readers)
		}
	}
}

// benchProcCPU is the CPU time (user and system) a process has used so far,
// from /proc/pid/stat (in clock ticks of 10 ms); 0 for pid 0.
func benchProcCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	if pid == 0 {
		return 0
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("reading a process's CPU time: %v", err)
	}
	// the fields after the command's closing parenthesis: state is the
	// first, utime and stime the 12th and 13th
	_, rest, ok := strings.Cut(string(st), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, st)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %q", pid, st)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// benchRSS is a process's resident set (VmRSS) in bytes; 0 for pid 0.
func benchRSS(b *testing.B, pid int) int64 {
	b.Helper()
	if pid == 0 {
		return 0
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("reading serve's memory: %v", err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/pid/status")
	return 0
}
