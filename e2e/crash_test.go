//go:build unix

package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/crashpoint"
)

// The crash tests run serve as a real process, built with -tags
// crashpoints, and let it kill itself (SIGKILL: no deferred close, no
// flush) at one named moment of an answer's way, reached by the answer
// itself rather than by a sleep. Then serve starts again on the same
// journal, without the crash point, and the demo agent's record says
// what the agent executed.

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

// crashRig is a relay and a demo agent in this process, and a journal
// file the serve processes share.
type crashRig struct {
	bin  string
	base *stack
	db   string
	home string
	// args are more serve flags for every process (the replica tests'
	// --lease).
	args []string
}

func newCrashRig(t *testing.T, bin string, relayArgs ...string) *crashRig {
	t.Helper()
	token := "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	env := map[string]string{"AEP_TOKEN": token}
	relayURL, _, stopRelay := runApp(t, "relay", append([]string{"relay", "--port", "0"}, relayArgs...), env, relayReady)
	home := t.TempDir()
	return &crashRig{
		bin:  bin,
		base: &stack{ctx: context.WithoutCancel(t.Context()), token: token, relayURL: relayURL, relayEnv: env, stopRelay: stopRelay},
		db:   filepath.Join(home, "journal", "aepforms.db"),
		home: home,
	}
}

// uiProcess is one serve process.
type uiProcess struct {
	cmd  *exec.Cmd
	logs *stackLog
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's, once done is closed
}

// exec starts serve on the rig's journal with env point set as the armed
// crash point ("" = none). It does not wait for anything.
func (r *crashRig) exec(t *testing.T, name, point string) *uiProcess {
	t.Helper()
	cmd := exec.Command(r.bin, "serve", "--relay", r.base.relayURL, "--addr", "127.0.0.1:0",
		"--ack-window", "5m", "--db", r.db)
	cmd.Args = append(cmd.Args, r.args...)
	cmd.Env = []string{"AEP_TOKEN=" + r.base.token, "HOME=" + r.home}
	if point != "" {
		cmd.Env = append(cmd.Env, crashpoint.Env+"="+point)
	}
	p := &uiProcess{cmd: cmd, logs: newStackLog(regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`)), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	dumpOnFailure(t, name, p.logs)
	require.NoError(t, cmd.Start())
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t, name) })
	return p
}

// serve starts serve (see exec) and waits until it listens.
func (r *crashRig) serve(t *testing.T, name, point string) (*stack, *uiProcess) {
	t.Helper()
	p := r.exec(t, name, point)
	var uiURL string
	select {
	case uiURL = <-p.logs.found:
	case <-p.done:
		t.Fatalf("%s exited before it listened: %v", name, p.err)
	case <-time.After(stackWait):
		t.Fatalf("%s did not listen within %v", name, stackWait)
	}
	s := *r.base
	s.uiURL = uiURL
	u, err := url.Parse(uiURL)
	require.NoError(t, err)
	s.origin = u.Scheme + "://" + u.Host
	return &s, p
}

// stop ends a process still running: SIGTERM, then SIGKILL if it does not
// exit in time.
func (p *uiProcess) stop(t *testing.T, name string) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stackWait):
		t.Errorf("%s did not stop within %v of SIGTERM", name, stackWait)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// awaitKilled waits for the process to die of SIGKILL: its crash point.
func (p *uiProcess) awaitKilled(t *testing.T, point string) {
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
func (p *uiProcess) awaitExit(t *testing.T, code int) {
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

// post sends the form as submit does, but a connection that ends without
// a response (the process died first) is an outcome, not a test failure:
// it returns the status, or 0 with the error.
func (s *stack) post(t *testing.T, f *htmlForm, submitter *formControl) (int, error) {
	t.Helper()
	u := s.resolve(t, f.page.url, f.action)
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(encodePairs(f.entries(submitter))))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Referer", f.page.url.String())
	req.Header.Set("Accept", "text/html")
	resp, err := uiClient().Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close() // the 303 may be cut short by the kill right after it
	return resp.StatusCode, nil
}

// Killed at each window of an answer's way (after the journal write and
// before the 303 and the send; the command let go and not yet written,
// the 303 beside it; between the send and the ack; the command written
// and the 303 held back; after the ack, before its outcome is
// journaled), then started again on the same journal: the agent executes
// the answer once, under one command id, and the restarted UI shows it
// as its own. A post that got no response is posted again to the
// restarted UI, as an operator resubmits it: the same 303, nothing sent
// twice. Run
// against a relay that keeps the commands in its history and one that
// keeps none (the restarted UI then sees its command only in its
// journal). While the restarted UI runs, a second serve on the same
// journal is refused and names --db.
//
// Also, as a process: a damaged journal stops serve (exit status 1)
// with a message naming the file and the way out, and the file is left
// as it was.
func TestServeProcessCrashesAndJournal(t *testing.T) {
	t.Parallel()
	bin := buildCrashBinary(t, t.TempDir())
	t.Run("damaged journal", func(t *testing.T) {
		t.Parallel()
		r := newCrashRig(t, bin)
		require.NoError(t, os.MkdirAll(filepath.Dir(r.db), 0o700))
		garbage := append([]byte("this is not a database, but it is someone's file\n"), make([]byte, 4096)...)
		require.NoError(t, os.WriteFile(r.db, garbage, 0o600))
		p := r.exec(t, "ui (damaged journal)", "")
		p.awaitExit(t, 1)
		logs := p.logs.String()
		assert.Contains(t, logs, r.db, "names the journal")
		assert.Contains(t, logs, "move it aside", "names the way out")
		assert.NotContains(t, logs, "listening", "nothing started")
		b, err := os.ReadFile(r.db)
		require.NoError(t, err)
		assert.Equal(t, garbage, b, "never replaced")
	})
	windows := []struct {
		point string
		// before checks, after the kill and before the restart, that the
		// process died in the window it names.
		before func(t *testing.T, ag *agent.Agent, session string, status int, postErr error)
	}{
		{crashpoint.Recorded, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			assert.Error(t, postErr, "killed before the 303: the post gets no response (got %d)", status)
			assert.Empty(t, commandsTo(ag, session), "nothing was sent before the kill")
		}},
		{crashpoint.Unsent, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			// The 303 is written beside the command's release: it may
			// or may not have left before the kill.
			if postErr == nil {
				assert.Equal(t, http.StatusSeeOther, status)
			}
			assert.Empty(t, commandsTo(ag, session), "nothing was sent before the kill")
		}},
		{crashpoint.Sent, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			if postErr == nil {
				assert.Equal(t, http.StatusSeeOther, status)
			}
			got := awaitCommands(t, ag, session, 1, nil)
			assert.Len(t, got, 1, "the command written before the kill reached the agent")
		}},
		{crashpoint.SentNo303, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			assert.Error(t, postErr, "the 303 was held until the kill: the post gets no response (got %d)", status)
			got := awaitCommands(t, ag, session, 1, nil)
			assert.Len(t, got, 1, "the command went out before the 303: it reached the agent")
		}},
		{crashpoint.Acked, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			// The 303 is written beside the command's release, not
			// after the ack: a quick agent's ack can beat its last
			// byte out, and the kill then leaves the post unanswered.
			if postErr == nil {
				assert.Equal(t, http.StatusSeeOther, status)
			}
			got := commandsTo(ag, session)
			require.Len(t, got, 1, "the agent acked the command before the kill")
			assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome)
		}},
	}
	relays := []struct {
		name string
		args []string
	}{
		{"relay keeps commands", nil},
		{"relay keeps no commands", []string{"--keep-no-commands"}},
	}
	for _, rl := range relays {
		for _, w := range windows {
			t.Run("crash/"+rl.name+"/"+w.point, func(t *testing.T) {
				t.Parallel()
				r := newCrashRig(t, bin, rl.args...)
				ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
				sess, req := askedRequest(t, ag, agent.ScenarioPermission)

				first, proc := r.serve(t, "ui (armed: "+w.point+")", w.point)
				_, _, f := first.openForm(t, sess.ID)
				status, postErr := first.post(t, f, f.button(t, "Deny"))
				proc.awaitKilled(t, w.point)
				w.before(t, ag, sess.ID, status, postErr)

				second, _ := r.serve(t, "ui (restarted)", "")
				if postErr != nil {
					// No response: the browser posts the same form again
					// (the operator resubmits), now to the restarted UI,
					// once it shows the card. Its form token finds the
					// kept answer: the same 303, nothing sent again.
					second.awaitCard(t, sess.ID, "the card back after the restart", func(*goquery.Selection) bool { return true })
					status, err := second.postAs(t, f, f.button(t, "Deny"))
					require.NoError(t, err)
					assert.Equal(t, http.StatusSeeOther, status, "the retried post finds its kept answer")
				}
				card := second.awaitCard(t, sess.ID, "the answer recorded by the agent", func(c *goquery.Selection) bool {
					return c.AttrOr("data-state", "") == "answered"
				})
				assert.NotContains(t, card.Find(`[data-testid="state-text"]`).Text(), "elsewhere", "the answer is this UI's own")

				got := commandsTo(ag, sess.ID)
				require.Len(t, got, 1, "one command id for the request, never a second: %+v", got)
				assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "executed: %+v", got[0].Decision)
				assert.Equal(t, req.ID, got[0].Subject)
				assert.Equal(t, 0, got[0].Differing, "every transmission is the journaled bytes")
				assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw), "the answer posted before the kill")
				// History is honest after the restart: the command the
				// agent ran is accepted and recorded, never "not sent".
				awaitHistory(t, second, func(rows []historyRow) bool {
					return len(rows) == 1 && rows[0].Recorded
				})
				rows := historyRows(t, second)
				require.Len(t, rows, 1, "one History entry: %+v", rows)
				assert.Equal(t, got[0].ID, rows[0].CommandID)
				assert.Equal(t, "accepted", rows[0].State, "%+v", rows[0])

				// The restarted UI holds the journal: another serve on it is refused.
				other := r.exec(t, "ui (second on the same journal)", "")
				other.awaitExit(t, 1)
				logs := other.logs.String()
				assert.Contains(t, logs, "--db", "names the way to another journal")
				assert.Contains(t, logs, r.db, "names the journal")
				assert.NotContains(t, logs, "listening", "nothing started")
			})
		}
	}
}
