package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/sse"
)

// BenchmarkPageLoad loads the inbox in headless Chromium with 100, 1000
// and 10 000 pending requests (the golden deploy form each, in ten
// sessions; 100 only under -short), beside a baseline loaded in the same
// run by the same browser: a static HTML page with one line per request
// holding the same question text, no forms and no script. Each iteration
// opens a fresh tab and loads the page to its load event.
//
// Metrics (means over the iterations): fcp-ms (first contentful paint)
// and load-ms (the load event), from the tab's Performance API, relative
// to the navigation's start; dom-nodes; page-KB (the decoded HTML) and
// wire-KB (what crossed the network, compressed). For aepforms, serve-MB
// is the peak resident memory (VmHWM) of the serve process after the
// loads: a subprocess built without -race, except under -short, where
// serve runs in the benchmark's process and no memory figure is given.
//
// Targets at 10 000 pending: load event under 1 s and within 2x the
// baseline; page under 1 MB; serve under 256 MB.
func BenchmarkPageLoad(b *testing.B) {
	sizes := []int{100, 1000, 10000}
	bin := ""
	if testing.Short() {
		sizes = sizes[:1]
	} else {
		bin = benchBuildServe(b)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			ui := benchPageLoadStack(b, bin, n)
			static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = w.Write(benchStaticPage(n))
			}))
			b.Cleanup(static.Close)
			bctx := browsertest.New(b)
			b.Run("aepforms", func(b *testing.B) {
				benchLoadPage(b, bctx, ui.url)
				if ui.pid != 0 {
					b.ReportMetric(float64(benchPeakRSS(b, ui.pid))/(1<<20), "serve-MB")
				}
			})
			b.Run("static", func(b *testing.B) { benchLoadPage(b, bctx, static.URL) })
		})
	}
}

// benchPageTiming is what one load measured, read from the tab.
type benchPageTiming struct {
	FCP      float64 `json:"fcp"`
	Load     float64 `json:"load"`
	Nodes    float64 `json:"nodes"`
	Decoded  float64 `json:"decoded"`
	Transfer float64 `json:"transfer"`
}

// benchPageTimingJS reads the navigation's timing once its load event
// has ended (chromedp.Navigate waits for the event; loadEventEnd is set
// just after its handlers return, so it is polled for).
const benchPageTimingJS = `(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  if (!nav || !nav.loadEventEnd) return null;
  return {fcp: fcp ? fcp.startTime : 0, load: nav.loadEventEnd, nodes: document.getElementsByTagName('*').length,
    decoded: nav.decodedBodySize, transfer: nav.transferSize};
})()`

// benchLoadPage loads url b.N times, each in a fresh tab of the browser
// bctx, and reports the means. One load before the timer starts warms
// the browser and the server's caches (assets, fragments), as a person's
// second visit would find them.
func benchLoadPage(b *testing.B, bctx context.Context, url string) {
	var sum benchPageTiming
	benchLoadOnce(b, bctx, url)
	b.ResetTimer()
	for range b.N {
		t := benchLoadOnce(b, bctx, url)
		sum.FCP += t.FCP
		sum.Load += t.Load
		sum.Nodes += t.Nodes
		sum.Decoded += t.Decoded
		sum.Transfer += t.Transfer
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(sum.FCP/n, "fcp-ms")
	b.ReportMetric(sum.Load/n, "load-ms")
	b.ReportMetric(sum.Nodes/n, "dom-nodes")
	b.ReportMetric(sum.Decoded/n/1024, "page-KB")
	b.ReportMetric(sum.Transfer/n/1024, "wire-KB")
}

// benchLoadOnce loads url in a fresh tab and reads its timing. The
// first-contentful-paint entry may be recorded just after the load
// event: it is waited for a few polls (a page that paints nothing has none).
func benchLoadOnce(b *testing.B, bctx context.Context, url string) benchPageTiming {
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, 2*time.Minute)
	defer stop()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.Fatalf("loading %s: %v", url, err)
	}
	for polls := 0; ; polls++ {
		t, err := chromedp.Run(ctx, chromedp.Evaluate[*benchPageTiming](benchPageTimingJS))
		if err != nil {
			b.Fatalf("timing %s: %v", url, err)
		}
		if t != nil && (t.FCP > 0 || polls >= 50) {
			return *t
		}
	}
}

// benchStaticPage is the baseline: one line per pending request holding
// the deploy form's question text, as plain HTML.
func benchStaticPage(n int) []byte {
	prompt := html.EscapeString(samples.DeployForm().Prompt)
	var buf bytes.Buffer
	buf.WriteString("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>baseline</title></head><body><main>\n")
	for i := range n {
		fmt.Fprintf(&buf, "<p>deployer · session s%d · %s</p>\n", i%10, prompt)
	}
	buf.WriteString("</main></body></html>\n")
	return buf.Bytes()
}

// benchPageLoadUI is a UI with n pending requests: its page URL and, when
// serve runs as a subprocess, its process id.
type benchPageLoadUI struct {
	url string
	pid int
}

// benchPageLoadStack starts a relay, a UI against it (a subprocess of
// bin, built without -race; in-process when bin is "") and posts n
// deploy forms to the relay in ten sessions, then waits until the UI
// counts n pending.
func benchPageLoadStack(b *testing.B, bin string, n int) benchPageLoadUI {
	b.Helper()
	maxPending := strconv.Itoa(max(n, 5000))
	var (
		s  *benchStack
		ui benchPageLoadUI
	)
	s = benchStartStack(b, benchStackOptions{uiArgs: []string{"--max-pending", maxPending}})
	ui.url = s.uiURL
	if bin != "" {
		s.stopUI() // the in-process UI gives way to a subprocess on the same relay
		ui = benchServeProcess(b, bin, s, "--max-pending", maxPending)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The UI's push stream, opened before the requests are posted: each
	// of its messages (a card, a status, a heartbeat) is when to read the
	// UI's pending count again; nothing waits on a clock.
	changed := benchWatchPush(ctx, b, s, ui.url)
	const sessions, batch = 10, 500
	req := samples.DeployForm()
	seq := make([]int64, sessions)
	var body bytes.Buffer
	post := func() {
		if body.Len() == 0 {
			return
		}
		if err := benchPostNDJSON(ctx, s, body.Bytes()); err != nil {
			b.Fatal(err)
		}
		body.Reset()
	}
	for i := range n {
		sess := i % sessions
		seq[sess]++
		body.Write(samples.Requested(fmt.Sprintf("load-%d", i), fmt.Sprintf("s%d", sess), seq[sess], req))
		body.WriteByte('\n')
		if (i+1)%batch == 0 {
			post()
		}
	}
	post()
	probe := &benchStack{uiURL: ui.url, client: s.client}
	for probe.benchMetric(b, "aepforms_pending_cards") < float64(n) {
		select {
		case <-changed:
		case <-ctx.Done():
			b.Fatalf("the UI counts %v pending, want %d", probe.benchMetric(b, "aepforms_pending_cards"), n)
		}
	}
	return ui
}

// benchWatchPush reads the UI's /push stream until ctx ends and signals
// on the channel it returns after each message (heartbeats included),
// and each time the stream ends (a flood of cards can overflow a
// browser's queue, and the server drops it): it opens it again.
func benchWatchPush(ctx context.Context, b *testing.B, s *benchStack, uiURL string) <-chan struct{} {
	b.Helper()
	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	open := func() (io.ReadCloser, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, uiURL+"push", nil)
		if err != nil {
			return nil, err
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("GET /push: %s", resp.Status)
		}
		return resp.Body, nil
	}
	body, err := open() // before anything is posted: no change is missed
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			rd := sse.NewReader(body, 0)
			for {
				if _, err := rd.Next(); err != nil {
					break
				}
				signal()
			}
			body.Close()
			signal() // the stream ended: read the count again
			if body, err = open(); err != nil {
				return // ctx ended (or the UI is gone: the caller's deadline says so)
			}
		}
	}()
	return changed
}

// benchPostNDJSON posts an NDJSON batch of events to the relay.
func benchPostNDJSON(ctx context.Context, s *benchStack, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.relayURL+"/events", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("AEP-Version", "0.1")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /events: %s %s", resp.Status, msg)
	}
	return nil
}

// benchBuildServe builds cmd/aepforms without -race into b's temporary
// directory (removed when b ends; the Go build cache makes a second build
// a link).
// With AEPFORMS_BENCH_SERVE_CPUPROFILE set it builds e2e/benchserve
// instead (cmd/aepforms that profiles between SIGUSR1 and SIGUSR2 into
// that file, see benchProfileServe).
func benchBuildServe(b *testing.B) string {
	b.Helper()
	if os.Getenv("AEPFORMS_BENCH_SERVE_CPUPROFILE") != "" {
		return benchBuild(b, "github.com/aepforms/aepforms/e2e/benchserve")
	}
	return benchBuild(b, "github.com/aepforms/aepforms/cmd/aepforms")
}

// benchProfileServe starts (on) or stops serve's CPU profile when
// AEPFORMS_BENCH_SERVE_CPUPROFILE is set (serve is then e2e/benchserve).
func benchProfileServe(b *testing.B, pid int, on bool) {
	b.Helper()
	if pid == 0 || os.Getenv("AEPFORMS_BENCH_SERVE_CPUPROFILE") == "" {
		return
	}
	sig := syscall.SIGUSR2
	if on {
		sig = syscall.SIGUSR1
	}
	if err := syscall.Kill(pid, sig); err != nil {
		b.Fatalf("serve's profile: %v", err)
	}
}

// benchBuild builds the command pkg without -race into b's temporary
// directory.
func benchBuild(b *testing.B, pkg string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), path.Base(pkg))
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var benchServeListening = regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`)

// benchServeProcess runs bin's `serve` as a subprocess against s's relay
// until the benchmark ends.
func benchServeProcess(b *testing.B, bin string, s *benchStack, args ...string) benchPageLoadUI {
	b.Helper()
	home := b.TempDir()
	argv := append([]string{bin, "serve", "--relay", s.relayURL, "--addr", "127.0.0.1:0"}, args...)
	if cpus := os.Getenv("AEPFORMS_BENCH_SERVE_CPUS"); cpus != "" {
		// serve on these CPUs only (taskset execs it: the pid is serve's);
		// run the benchmark itself under `taskset -c OTHERS` so the
		// readers' work stays off serve's cores.
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"AEP_TOKEN=" + s.token, "HOME=" + home, "PATH=" + os.Getenv("PATH"), undoWindowEnv + "=0"}
	if p := os.Getenv("AEPFORMS_BENCH_SERVE_CPUPROFILE"); p != "" {
		cmd.Env = append(cmd.Env, "AEPFORMS_BENCH_SERVE_CPUPROFILE="+p)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	found := make(chan string, 1)
	var logMu sync.Mutex
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			logMu.Lock()
			if logs.Len() < 64<<10 {
				logs.WriteString(sc.Text() + "\n")
			}
			logMu.Unlock()
			if m := benchServeListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(benchWait):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case u := <-found:
		return benchPageLoadUI{url: u, pid: cmd.Process.Pid}
	case <-time.After(benchWait):
		logMu.Lock()
		defer logMu.Unlock()
		b.Fatalf("serve did not log its address within %v:\n%s", benchWait, logs.String())
	}
	return benchPageLoadUI{}
}

// benchPeakRSS is a process's peak resident set (VmHWM), in bytes.
func benchPeakRSS(b *testing.B, pid int) int64 {
	b.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("reading serve's memory: %v", err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/pid/status")
	return 0
}
