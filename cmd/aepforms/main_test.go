package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mainArgsEnv, when set in a child of this test binary, makes it run
// main with these arguments (a JSON list): the real binary, signals and
// exit status included, without a separate build.
const mainArgsEnv = "AEPFORMS_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(mainArgsEnv); args != "" {
		var list []string
		if err := json.Unmarshal([]byte(args), &list); err != nil {
			panic(err)
		}
		os.Args = append([]string{"aepforms"}, list...)
		main()
		return
	}
	os.Exit(m.Run())
}

// logLines collects a child's stderr line by line and tells waiters when
// a line containing a string arrives.
type logLines struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func (l *logLines) read(r *bufio.Scanner) {
	for r.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, r.Text())
		close(l.added)
		l.added = make(chan struct{})
		l.mu.Unlock()
	}
}

// waitFor waits, with a deadline, for a line containing s and returns how
// many lines were read up to and including it.
func (l *logLines) waitFor(t *testing.T, s string, within time.Duration) int {
	t.Helper()
	deadline := time.After(within)
	for {
		l.mu.Lock()
		for i, line := range l.lines {
			if strings.Contains(line, s) {
				l.mu.Unlock()
				return i + 1
			}
		}
		ch := l.added
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no log line with %q within %v; log:\n%s", s, within, l.String())
		}
	}
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// SIGTERM to `serve --demo` is an orderly stop: the demo agent, then the
// UI, then the embedded relay, each saying once that it stopped, and no
// warning on the way (it printed three "relay connection lost"
// warnings and "undelivered events=28").
func TestSIGTERMStopsServeDemoQuietly(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: runs serve --demo as a process")
	}
	home := t.TempDir()
	args, err := json.Marshal([]string{"serve", "--demo", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", filepath.Join(home, "db.sqlite")})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(args), "HOME="+home)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	logs := &logLines{added: make(chan struct{})}
	read := make(chan struct{})
	go func() { defer close(read); logs.read(bufio.NewScanner(stderr)) }()

	started := logs.waitFor(t, "in your browser", 30*time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	logs.waitFor(t, "aepforms stopped", 30*time.Second)
	<-read
	require.NoError(t, cmd.Wait(), "exit status after SIGTERM; log:\n%s", logs)

	logs.mu.Lock()
	after := append([]string(nil), logs.lines[started:]...)
	logs.mu.Unlock()
	count := func(s string) int {
		n := 0
		for _, line := range after {
			if strings.Contains(line, s) {
				n++
			}
		}
		return n
	}
	for _, line := range after {
		assert.NotContains(t, line, "level=WARN", "a warning while stopping")
		assert.NotContains(t, line, "level=ERROR", "an error while stopping")
	}
	for _, stop := range []string{"demo agent stopped", "relay drained", "aepforms stopped"} {
		assert.Equal(t, 1, count(stop), "one %q line", stop)
	}
	assert.LessOrEqual(t, len(after), 3, "a few lines, one per part:\n%s", strings.Join(after, "\n"))
}
