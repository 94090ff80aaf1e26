//go:build unix

package e2e

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/crashpoint"
)

// The restart and kill tests run serve and relay as real processes, so
// that SIGKILL ends them as a crash does (no deferred close, no flush);
// serve built with -tags crashpoints can kill itself at one named moment
// of an answer's way, reached by the answer itself rather than by a
// sleep. Then serve starts again on the same journal, and the demo
// agent's record (the agent runs in this process) says what the agent
// executed.

// uiReady is the log line serve writes once it listens; its submatch is
// the UI's URL.
const uiReady = `aepforms UI listening on (http://[^\s"]+)`

// buildCrashBinary builds cmd/aepforms with the crash points compiled in,
// into dir. The build cache makes every build after the first a link.
func buildCrashBinary(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go") // go test puts its own go first on PATH
	require.NoError(t, err, "the crash tests build the aepforms binary and need the go command")
	bin := filepath.Join(dir, "aepforms")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-tags", "crashpoints", "-o", bin,
		"github.com/aepforms/aepforms/cmd/aepforms").CombinedOutput()
	require.NoError(t, err, "go build -tags crashpoints: %s", out)
	return bin
}

// process is one aepforms process (serve or relay).
type process struct {
	name string // in its logs and failures
	cmd  *exec.Cmd
	logs *stackLog
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's, once done is closed
}

// startProcess starts bin with args and exactly env (nothing inherited),
// logging as name, and stops it when the test ends if it still runs. It
// does not wait for anything; ready is the log line whose submatch
// listening returns.
func startProcess(t *testing.T, name, bin string, args, env []string, ready string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	// The undo window is 0 unless env sets it (stackEnv).
	cmd.Env = append([]string{undoWindowEnv + "=0"}, env...)
	p := &process{name: name, cmd: cmd, logs: newStackLog(regexp.MustCompile(ready)), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	dumpOnFailure(t, name, p.logs)
	require.NoError(t, cmd.Start())
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// listening waits for the process's ready line and returns its submatch
// (the URL it listens on); the process exiting first fails the test.
func (p *process) listening(t *testing.T) string {
	t.Helper()
	select {
	case u := <-p.logs.found:
		return u
	case <-p.done:
		t.Fatalf("%s exited before it listened: %v", p.name, p.err)
	case <-time.After(stackWait):
		t.Fatalf("%s did not listen within %v", p.name, stackWait)
	}
	return ""
}

// runRelayProcess starts `aepforms relay` as a process with args after
// "relay" (--port at least) and waits until it listens.
func runRelayProcess(t *testing.T, bin, name, token string, args ...string) (string, *process) {
	t.Helper()
	p := startProcess(t, name, bin, append([]string{"relay"}, args...),
		[]string{"AEP_TOKEN=" + token, "HOME=" + t.TempDir()}, relayReady)
	return p.listening(t), p
}

// stop ends a process still running: SIGTERM, then SIGKILL if it does not
// exit in time.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stackWait):
		t.Errorf("%s did not stop within %v of SIGTERM", p.name, stackWait)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// killed kills the process with SIGKILL and waits for it to end.
func (p *process) killed(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
}

// awaitKilled waits for the process to die of SIGKILL: its crash point.
func (p *process) awaitKilled(t *testing.T, point string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(stackWait):
		t.Fatalf("serve did not reach crash point %q within %v", point, stackWait)
	}
	var exit *exec.ExitError
	require.True(t, errors.As(p.err, &exit), "serve ended with %v, want killed at %q", p.err, point)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "serve ended with %v, want SIGKILL at crash point %q", p.err, point)
}

// awaitExit waits for the process to exit by itself with status code.
func (p *process) awaitExit(t *testing.T, code int) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(stackWait):
		t.Fatalf("serve still runs after %v, want it to exit with status %d", stackWait, code)
	}
	var exit *exec.ExitError
	require.True(t, errors.As(p.err, &exit), "serve ended with %v, want exit status %d", p.err, code)
	assert.Equal(t, code, exit.ExitCode())
}

// rig is what the serve processes of one test share: the binary, a
// journal, a home, the relay token and the flags naming the relay.
type rig struct {
	bin, db, home string
	// base is the stack every serve's own is a copy of (token, relay).
	base stack
	// relay is serve's flags for the relay: --relay URL, or the embedded
	// relay's --relay-port.
	relay []string
	// args are more serve flags for every process (the replica tests'
	// --lease).
	args []string
}

func newRig(t *testing.T, bin string) *rig {
	home := t.TempDir()
	return &rig{bin: bin, db: filepath.Join(home, "journal", "aepforms.db"), home: home,
		base: stack{ctx: context.WithoutCancel(t.Context()), token: "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36)}}
}

// newCrashRig is a rig whose serve processes share a relay (started with
// relayArgs) in this process, answering with a 5 minute ack window.
func newCrashRig(t *testing.T, bin string, relayArgs ...string) *rig {
	t.Helper()
	r := newRig(t, bin)
	r.base.relayEnv = map[string]string{"AEP_TOKEN": r.base.token}
	r.base.relayURL, _, r.base.stopRelay = runApp(t, "relay", append([]string{"relay", "--port", "0"}, relayArgs...), r.base.relayEnv, relayReady)
	r.relay = []string{"--relay", r.base.relayURL, "--ack-window", "5m"}
	return r
}

// newEmbeddedRig is a rig whose serve processes run their embedded relay,
// each in turn on the same port.
func newEmbeddedRig(t *testing.T, bin string) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	r := newRig(t, bin)
	r.base.relayURL = "http://127.0.0.1:" + port
	r.relay = []string{"--relay-port", port}
	return r
}

// exec starts serve on the rig's journal and relay with crash point
// point armed ("" = none); args come after the rig's flags. It does not
// wait for anything.
func (r *rig) exec(t *testing.T, name, point string, args ...string) *process {
	t.Helper()
	argv := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", r.db}, r.relay...)
	argv = append(append(argv, r.args...), args...)
	env := []string{"AEP_TOKEN=" + r.base.token, "HOME=" + r.home}
	if point != "" {
		env = append(env, crashpoint.Env+"="+point)
	}
	return startProcess(t, name, r.bin, argv, env, uiReady)
}

// serve starts serve (see exec) and waits until it listens.
func (r *rig) serve(t *testing.T, name, point string, args ...string) (*stack, *process) {
	t.Helper()
	p := r.exec(t, name, point, args...)
	s := r.base
	s.uiURL = p.listening(t)
	s.origin = originOf(t, s.uiURL)
	return &s, p
}

// originOf is a URL's origin, as a browser sends it in Origin.
func originOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	return p.Scheme + "://" + p.Host
}

// runServe runs serve in this process against relayURL, with a journal
// of its own and a 1 s ack window, and waits until it listens.
func runServe(t *testing.T, name, token, relayURL string) *stack {
	t.Helper()
	home := t.TempDir()
	s := &stack{token: token, relayURL: relayURL}
	s.uiURL, s.ctx, _ = runApp(t, name, []string{"serve", "--relay", relayURL, "--addr", "127.0.0.1:0",
		"--ack-window", "1s", "--db", filepath.Join(home, "journal", "aepforms.db")},
		map[string]string{"AEP_TOKEN": token, "HOME": home}, uiReady)
	s.origin = originOf(t, s.uiURL)
	return s
}
