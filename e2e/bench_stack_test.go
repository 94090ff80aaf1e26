package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/app"
)

// benchStack is a relay and a UI (serve --relay) started in-process on
// port 0 through app.Run for one benchmark. Its own helpers, not the
// tests' harness, so the two can change apart.
type benchStack struct {
	ctx      context.Context // the relay's; agents run under it
	token    string          // the relay's AEP_TOKEN
	relayURL string          // http://127.0.0.1:PORT
	uiURL    string          // http://127.0.0.1:PORT/
	origin   string          // the UI's origin, as a browser sends it in Origin
	client   *http.Client    // for the UI and the relay; never follows redirects

	stopUI func() // ends the UI and waits for its Run; idempotent
	stop   func() // ends the UI, then the relay, waiting for both; idempotent
}

// benchStackOptions changes how a stack starts.
type benchStackOptions struct {
	relayEnv map[string]string // extra AEP_* settings for the relay
	uiArgs   []string          // extra serve flags
}

// benchAllInFull are the serve flags that show every waiting request as
// a card (no rows): the benchmarks that follow cards through the page and
// the push stream (benchBrowser) measure answers and pushes, not the page.
var benchAllInFull = []string{"--page-cards", "1000000"}

// benchStartStack starts a relay and a UI against it; both stop (their
// Run waited for) when the benchmark ends, the UI first.
func benchStartStack(tb testing.TB, o benchStackOptions) *benchStack {
	tb.Helper()
	relayCtx, stopRelay := context.WithCancel(context.Background())
	uiCtx, cancelUI := context.WithCancel(relayCtx)
	s := &benchStack{ctx: relayCtx, token: "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	tr := &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	s.client = &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	relayEnv := map[string]string{"AEP_TOKEN": s.token}
	maps.Copy(relayEnv, o.relayEnv)
	relayAddr, waitRelay := benchRunApp(tb, relayCtx, "relay", []string{"relay", "--port", "0"},
		relayEnv, `relay listening on (http://[^\s"]+)`)
	s.relayURL = relayAddr

	args := append([]string{"serve", "--relay", s.relayURL, "--addr", "127.0.0.1:0"}, o.uiArgs...)
	uiAddr, waitUI := benchRunApp(tb, uiCtx, "ui", args,
		map[string]string{"AEP_TOKEN": s.token, "HOME": tb.TempDir()}, `aepforms UI listening on (http://[^\s"]+)`)
	s.uiURL = uiAddr
	u, err := url.Parse(uiAddr)
	if err != nil {
		tb.Fatalf("UI address %q: %v", uiAddr, err)
	}
	s.origin = u.Scheme + "://" + u.Host

	var uiOnce, once sync.Once
	s.stopUI = func() { uiOnce.Do(func() { cancelUI(); waitUI() }) }
	s.stop = func() {
		once.Do(func() {
			s.stopUI()
			stopRelay()
			waitRelay()
			tr.CloseIdleConnections()
		})
	}
	tb.Cleanup(s.stop)
	return s
}

// benchRunApp runs app.Run(args) until ctx ends and returns the first
// submatch of the log line matching ready, waiting for it with a
// deadline; wait waits for Run to return.
func benchRunApp(tb testing.TB, ctx context.Context, name string, args []string, env map[string]string, ready string) (string, func()) {
	tb.Helper()
	logs := newStackLog(regexp.MustCompile(ready))
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, args, func(k string) string { return stackEnv(env, k) }, strings.NewReader(""), io.Discard, logs)
	}()
	var err error
	wait := func() {
		select {
		case err = <-done:
		case <-time.After(benchWait):
			tb.Errorf("%s: Run did not return within %v of its context ending", name, benchWait)
			return
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			tb.Errorf("%s: Run returned %v, want nil after its context ended; log:\n%s", name, err, logs.String())
		}
	}
	select {
	case m := <-logs.found:
		return m, wait
	case err = <-done:
		tb.Fatalf("%s: Run returned %v before it logged %q; log:\n%s", name, err, ready, logs.String())
	case <-time.After(benchWait):
		tb.Fatalf("%s: no log line %q within %v; log:\n%s", name, ready, benchWait, logs.String())
	}
	return "", nil
}

// benchStartAgent runs a demo agent (internal/agent, so its record can
// be read) asking the given scenarios once each; stop ends it and waits
// for its Run. Its events carry source host bench.test.
func (s *benchStack) benchStartAgent(tb testing.TB, scenarios []string) (ag *agent.Agent, stop func()) {
	tb.Helper()
	cfg := agent.DefaultConfig()
	cfg.RelayURL, cfg.Token = s.relayURL, s.token
	cfg.Scenarios = scenarios
	cfg.Host = "bench.test"
	cfg.Every = 0
	cfg.Backoff, cfg.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	cfg.DrainTimeout = -1
	cfg.MaxSessions = len(scenarios) + 16
	cfg.MaxCommands = 4*len(scenarios) + 16
	cfg.Logger = slog.New(slog.DiscardHandler)
	ag = agent.New(cfg)
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan error, 1)
	go func() { done <- ag.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("agent: Run returned %v, want nil", err)
				}
			case <-time.After(benchWait):
				tb.Errorf("agent: Run did not return within %v", benchWait)
			}
		})
	}
	tb.Cleanup(stop)
	return ag, stop
}

// benchAskedAll waits until the agent has n pending requests delivered to
// the relay and returns them with their sessions, in session order.
func benchAskedAll(tb testing.TB, ag *agent.Agent, n int) []benchAsked {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	var out []benchAsked
	err := ag.Until(ctx, func() bool {
		out = out[:0]
		for _, ss := range ag.Sessions() {
			for _, r := range ss.Requests {
				if r.State == agent.StatePending && r.Delivered {
					out = append(out, benchAsked{session: ss, request: r})
				}
			}
		}
		return len(out) >= n
	})
	if err != nil {
		tb.Fatalf("the agent has %d requests delivered, want %d: %v", len(out), n, err)
	}
	return out
}

// benchAsked is one request the demo agent asked.
type benchAsked struct {
	session agent.SessionInfo
	request agent.RequestInfo
}

// benchPostEvents posts events to the relay's POST /events as one NDJSON
// batch (or one JSON event) and checks it was taken.
func (s *benchStack) benchPostEvents(ctx context.Context, evs ...*aep.Event) error {
	var body bytes.Buffer
	for _, ev := range evs {
		body.Write(ev.Raw())
		body.WriteByte('\n')
	}
	ct := "application/json"
	if len(evs) > 1 {
		ct = "application/x-ndjson"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.relayURL+"/events", &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("AEP-Version", aep.Version)
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

// benchMetric reads one value from the UI's /metrics (0 when absent).
func (s *benchStack) benchMetric(tb testing.TB, name string) float64 {
	tb.Helper()
	resp, err := s.client.Get(s.uiURL + "metrics")
	if err != nil {
		tb.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("GET /metrics: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				tb.Fatalf("/metrics %s: %q is not a number", name, v)
			}
			return f
		}
	}
	return 0
}
