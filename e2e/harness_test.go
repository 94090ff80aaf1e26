// Package e2e holds black-box tests of the whole aepforms stack: the
// relay, the UI (serve --relay) and the demo agent run in-process on port
// 0 through app.Run, and the UI is driven only over HTTP, as a browser
// would drive it. What the demo agent recorded receiving is the truth the
// tests assert on.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/app"
	"github.com/aepforms/aepforms/internal/sse"
)

// stackWait bounds every wait of the suite: a stack that has not done what
// a test waits for by then is broken, not slow.
const stackWait = 15 * time.Second

// stackStartWait bounds a part's start (until it logs that it is
// ready): a start opens its journal and listeners, which on a machine
// busy with the suite's parallel packages can take longer than a step;
// it only ends a hang.
const stackStartWait = time.Minute

// stackAckWindow is the UI's ack window (--ack-window): short, so the
// timeout path takes a few seconds, long enough for an agent acking at
// once under -race on two cores.
const stackAckWindow = "300ms"

// stack is one running relay and UI, and the agents a test starts on it.
type stack struct {
	ctx      context.Context // the UI's: ends when the test does
	token    string          // the relay's AEP_TOKEN
	relayURL string          // http://127.0.0.1:PORT
	uiURL    string          // http://127.0.0.1:PORT/
	origin   string          // the UI's origin, as a browser sends it in Origin

	relayEnv  map[string]string
	stopRelay func()
	stopUI    func() // stops the UI (its Run returns); the agents on s.ctx end with it

	// cookie is the operator session's Cookie header ("" when the UI has
	// no operator secret): every page, post and push request sends it.
	cookie string
}

// stackOptions changes how a stack starts.
type stackOptions struct {
	// uiRelay returns the relay URL the UI is pointed at, given the
	// relay's own (a proxy in front of it); nil points it at the relay.
	// What it starts is stopped after the UI, before the relay.
	uiRelay func(t *testing.T, relayURL string) string
	// relayEnv adds AEP_* settings to the relay's environment.
	relayEnv map[string]string
	// uiEnv adds settings to the UI's environment.
	uiEnv map[string]string
}

// startStack starts a relay and a UI against it, and stops both (waiting
// for their Run to return) when the test ends.
func startStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	s := &stack{token: "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36), relayEnv: map[string]string{}}
	for k, v := range opts.relayEnv {
		s.relayEnv[k] = v
	}
	s.relayEnv["AEP_TOKEN"] = s.token
	s.relayURL, _, s.stopRelay = runApp(t, "relay", []string{"relay", "--port", "0"}, s.relayEnv, relayReady)
	uiRelay := s.relayURL
	if opts.uiRelay != nil {
		uiRelay = opts.uiRelay(t, s.relayURL)
	}
	uiEnv := map[string]string{"AEP_TOKEN": s.token, "HOME": t.TempDir()}
	for k, v := range opts.uiEnv {
		uiEnv[k] = v
	}
	s.uiURL, s.ctx, s.stopUI = runApp(t, "ui", []string{"serve", "--relay", uiRelay, "--addr", "127.0.0.1:0", "--ack-window", stackAckWindow},
		uiEnv, `aepforms UI listening on (http://[^\s"]+)`)
	u, err := url.Parse(s.uiURL)
	require.NoError(t, err)
	s.origin = u.Scheme + "://" + u.Host
	return s
}

const relayReady = `relay listening on (http://[^\s"]+)`

// restartRelay stops the relay (it drains: streams and sockets are told
// it is shutting down) and starts a new one, empty, on the same port;
// between, when not nil, runs while no relay is listening.
func (s *stack) restartRelay(t *testing.T, between func()) {
	t.Helper()
	u, err := url.Parse(s.relayURL)
	require.NoError(t, err)
	s.stopRelay()
	if between != nil {
		between()
	}
	got, _, stop := runApp(t, "relay (restarted)", []string{"relay", "--port", u.Port()}, s.relayEnv, relayReady)
	require.Equal(t, s.relayURL, got, "the restarted relay's address")
	s.stopRelay = stop
}

// stackEnv is env[k], the undo window 0 unless env or a flag sets it: the
// tests of the answer's way (and its benchmarks) wait on the send, not on
// Undo's hold; undo_test.go sets one.
func stackEnv(env map[string]string, k string) string {
	if v, ok := env[k]; ok {
		return v
	}
	if k == undoWindowEnv {
		return "0"
	}
	return ""
}

// undoWindowEnv is --undo-window's variable.
const undoWindowEnv = "AEPFORMS_UNDO_WINDOW"

// runApp runs app.Run(args) and returns the first submatch of the log
// line matching ready, waiting for it with a deadline, the context Run
// runs under, and stop, which cancels it and checks that Run returns nil
// in time. stop runs when the test ends, if not before.
func runApp(t *testing.T, name string, args []string, env map[string]string, ready string) (string, context.Context, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := newStackLog(regexp.MustCompile(ready))
	dumpOnFailure(t, name, logs)
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, args, func(k string) string { return stackEnv(env, k) }, strings.NewReader(""), io.Discard, logs)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: Run returned %v, want nil after its context ended", name, err)
				}
			case <-time.After(stackWait):
				t.Errorf("%s: Run did not return within %v of its context ending", name, stackWait)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case m := <-logs.found:
		return m, ctx, stop
	case err := <-done:
		done <- err
		t.Fatalf("%s: Run returned %v before it logged %q", name, err, ready)
	case <-time.After(stackStartWait):
		t.Fatalf("%s: no log line %q within %v", name, ready, stackStartWait)
	}
	return "", nil, nil
}

// agentOptions are the demo agent settings a test changes.
type agentOptions struct {
	scenarios []string
	relayURL  string // "" = the stack's relay
	neverAck  bool
	expiresIn time.Duration
	reask     bool   // ask the expiring form again each time it times out
	agent     string // the agent attribute; "" = the demo agent's
	// reconnectAfter, when set, is how long the agent waits before each
	// reconnect attempt, exactly (no jitter): an agent that comes back
	// late after its relay went away. Zero: 20-200 ms.
	reconnectAfter time.Duration
	// gate, when set, decides when the agent handles each command.
	gate *commandGate
	// prompts are the permission scenario's prompts, in turn (nil: its
	// own); instance the hello's instance ("" = the demo agent's).
	prompts  []string
	instance string
}

// startAgent runs a demo agent (internal/agent, so its record can be read)
// against the stack's relay until the test ends.
func (s *stack) startAgent(t *testing.T, o agentOptions) *agent.Agent {
	t.Helper()
	ag, _ := s.startStoppableAgent(t, o)
	return ag
}

// startStoppableAgent is startAgent with stop, which ends the agent's
// run (its connection closes, as when its process exits) and returns
// once it has.
func (s *stack) startStoppableAgent(t *testing.T, o agentOptions) (ag *agent.Agent, stop func()) {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.RelayURL, cfg.Token = s.relayURL, s.token
	if o.relayURL != "" {
		cfg.RelayURL = o.relayURL
	}
	cfg.Scenarios = o.scenarios
	cfg.Host = "e2e.test"
	cfg.Every = 0
	cfg.Backoff, cfg.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	if o.reconnectAfter > 0 {
		// The jitter puts a delay d in [d/2, d); at its low end, 2d is
		// reconnectAfter on every attempt.
		cfg.Backoff, cfg.BackoffMax = 2*o.reconnectAfter, 2*o.reconnectAfter
		cfg.Rand = func() float64 { return 0 }
	}
	cfg.DrainTimeout = -1
	cfg.NeverAck = o.neverAck
	if o.gate != nil {
		cfg.Commands = o.gate.deliver
	}
	cfg.ReaskExpired = o.reask
	if o.agent != "" {
		cfg.Agent = o.agent
	}
	if o.expiresIn > 0 {
		cfg.ExpiresIn = o.expiresIn
	}
	cfg.PermissionPrompts = o.prompts
	if o.instance != "" {
		cfg.Instance = o.instance
	}
	return runStoppableAgent(t, s, "agent", cfg)
}

// runAgent runs a demo agent with cfg against the stack until the test
// ends; its log is shown when the test fails.
func runAgent(t *testing.T, s *stack, name string, cfg agent.Config) *agent.Agent {
	t.Helper()
	ag, _ := runStoppableAgent(t, s, name, cfg)
	return ag
}

// runStoppableAgent is runAgent with stop, which ends the run early
// and returns once it has (at most once; the test's end calls it too).
func runStoppableAgent(t *testing.T, s *stack, name string, cfg agent.Config) (*agent.Agent, func()) {
	t.Helper()
	logs := newStackLog(nil)
	dumpOnFailure(t, name, logs)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	ag := agent.New(cfg)
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan error, 1)
	go func() { done <- ag.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: Run returned %v, want nil", name, err)
				}
			case <-time.After(stackWait):
				t.Errorf("%s: Run did not return within %v", name, stackWait)
			}
		})
	}
	t.Cleanup(stop)
	return ag, stop
}

// askedRequest waits until the agent's scenario has a request that
// reached the relay and returns its session and request.
func askedRequest(t *testing.T, ag *agent.Agent, scenario string) (agent.SessionInfo, agent.RequestInfo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stackWait)
	defer cancel()
	s, r, err := ag.WaitRequest(ctx, scenario)
	require.NoError(t, err, "the agent did not ask its %s request", scenario)
	return s, r
}

// commandsTo is what the agent recorded for session, in arrival order.
func commandsTo(ag *agent.Agent, session string) []agent.Received {
	var out []agent.Received
	for _, r := range ag.Record() {
		if r.Session == session {
			out = append(out, r)
		}
	}
	return out
}

// awaitCommands waits until the agent holds n commands for session that
// satisfy done (nil: any decision made), and returns them all.
func awaitCommands(t *testing.T, ag *agent.Agent, session string, n int, done func(agent.Received) bool) []agent.Received {
	t.Helper()
	if done == nil {
		done = func(r agent.Received) bool { return r.Decision.Outcome != "" }
	}
	ctx, cancel := context.WithTimeout(context.Background(), stackWait)
	defer cancel()
	var got []agent.Received
	err := ag.Until(ctx, func() bool {
		got = commandsTo(ag, session)
		ready := 0
		for _, r := range got {
			if done(r) {
				ready++
			}
		}
		return ready >= n
	})
	require.NoError(t, err, "the agent holds %d commands for session %s, want %d: %+v", len(got), session, n, got)
	return got
}

// stackLog collects a part's log (the last logKeep bytes, for a failing
// test's report) and signals found with the first submatch of the first
// line matching re.
type stackLog struct {
	re    *regexp.Regexp
	found chan string

	mu      sync.Mutex
	kept    []byte
	partial []byte
	matched bool
}

const logKeep = 64 << 10

func newStackLog(re *regexp.Regexp) *stackLog {
	return &stackLog{re: re, found: make(chan string, 1)}
}

func (w *stackLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kept = append(w.kept, p...)
	if over := len(w.kept) - logKeep; over > 0 {
		w.kept = append(w.kept[:0], w.kept[over:]...)
	}
	if w.re == nil || w.matched {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		if m := w.re.FindSubmatch(line); m != nil {
			w.matched = true
			w.found <- string(m[len(m)-1])
			w.partial = nil
			break
		}
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func (w *stackLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.kept)
}

// dumpOnFailure logs a part's log when the test fails.
func dumpOnFailure(t *testing.T, name string, w *stackLog) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log (last %d KiB):\n%s", name, logKeep>>10, w.String())
		}
	})
}

// relayHistory returns the events the relay holds for session, read from
// its SSE stream's replay (from=all, live=0).
func (s *stack) relayHistory(t *testing.T, session string) []*aep.Event {
	t.Helper()
	filter, err := json.Marshal(map[string]string{"session": session})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	resp := s.relayStream(t, ctx, url.Values{"from": {"all"}, "live": {"0"}, "filter": {string(filter)}})
	defer resp.Body.Close()
	var out []*aep.Event
	rd := sse.NewReader(resp.Body, 0)
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if it.IsComment {
			continue
		}
		ev, err := aep.Decode([]byte(it.Data))
		require.NoError(t, err, "relay event %q", it.Data)
		out = append(out, ev)
	}
}

// awaitRelayEvent reads the relay's stream for session, history then live,
// until an event of typ about subject arrives, and returns it; it fails
// the test at stackWait. Unlike relayHistory it waits for events still on
// their way (an agent emits its outcome events after it records the ack).
func (s *stack) awaitRelayEvent(t *testing.T, session, typ, subject string) *aep.Event {
	t.Helper()
	filter, err := json.Marshal(map[string]string{"session": session, "type": typ})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	resp := s.relayStream(t, ctx, url.Values{"from": {"all"}, "filter": {string(filter)}})
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body, 0)
	for {
		it, err := rd.Next()
		require.NoError(t, err, "waiting %v for %s about %s in session %s", stackWait, typ, subject, session)
		if it.IsComment {
			continue
		}
		ev, err := aep.Decode([]byte(it.Data))
		require.NoError(t, err, "relay event %q", it.Data)
		if ev.Type() == typ && ev.Subject() == subject {
			return ev
		}
	}
}

// relayStream opens the relay's /stream with q and the stack's token.
func (s *stack) relayStream(t *testing.T, ctx context.Context, q url.Values) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.relayURL+"/stream?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "relay /stream status")
	return resp
}
