package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/app"
	"github.com/stretchr/testify/require"
)

// confListenLine is the relay's startup log line naming its bound address.
var confListenLine = regexp.MustCompile(`relay listening on (http://[^\s"]+)`)

// confLog is the relay's stderr: it keeps the log and signals once the
// listening line appears.
type confLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addr  string
	ready chan string
}

func newConfLog() *confLog { return &confLog{ready: make(chan string, 1)} }

func (w *confLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.addr == "" {
		if m := confListenLine.FindSubmatch(w.buf.Bytes()); m != nil {
			w.addr = string(m[1])
			w.ready <- w.addr
		}
	}
	return len(p), nil
}

func (w *confLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startConfRelay runs `aepforms relay args...` in-process with env as its
// environment and returns its base URL and log. The relay is stopped, and
// required to exit cleanly, when the test ends.
func startConfRelay(t *testing.T, env map[string]string, args ...string) (string, *confLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := newConfLog()
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, append([]string{"relay", "--host", "127.0.0.1", "--port", "0"}, args...),
			func(k string) string { return env[k] }, nil, &bytes.Buffer{}, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "relay exit; log:\n%s", stderr)
		case <-time.After(10 * time.Second):
			t.Errorf("relay did not stop within 10 s after its context ended; log:\n%s", stderr)
		}
	})
	select {
	case base := <-stderr.ready:
		return base, stderr
	case err := <-done:
		t.Fatalf("relay exited before listening: %v; log:\n%s", err, stderr)
	case <-time.After(5 * time.Second):
		t.Fatalf("no %q line within 5 s; log:\n%s", "relay listening on", stderr)
	}
	return "", nil
}

// fixture reads a file of the protocol fixtures.
func confFixture(t *testing.T, rel string) []byte {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "aep", "fixtures", rel))
	require.NoError(t, err)
	return b
}

// awaitRelayHolds waits until the relay at base delivers the event id of
// session on /stream (from=all, so whether it is already held or arrives
// later), so a check that starts next sees what the agent emitted.
func awaitRelayHolds(t *testing.T, base, token, session, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q := url.Values{"from": {"all"}, "filter": {`{"session":` + strconv.Quote(session) + `}`}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/stream?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "GET /stream")
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	want := `"id":` + strconv.Quote(id)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), want) {
			return
		}
	}
	t.Fatalf("the relay never delivered event %s of session %s: %v", id, session, sc.Err())
}
