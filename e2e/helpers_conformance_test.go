package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	"github.com/stretchr/testify/assert"
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

// confRelay is one in-process `aepforms relay`.
type confRelay struct {
	base   string
	log    *confLog
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// stop ends the relay's context (as SIGTERM does) and waits for Run to
// return; it returns Run's error, or one saying it did not return in time.
func (r *confRelay) stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(10 * time.Second):
			r.err = errors.New("relay did not stop within 10 s after its context ended")
		}
	})
	return r.err
}

// startConfRelay runs `aepforms relay args...` in-process with env as its
// environment, and learns its address from the listening log line. The
// relay is stopped, and required to exit cleanly, when the test ends.
func startConfRelay(t *testing.T, env map[string]string, args ...string) *confRelay {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &confRelay{log: newConfLog(), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- app.Run(ctx, append([]string{"relay", "--host", "127.0.0.1", "--port", "0"}, args...),
			func(k string) string { return env[k] }, nil, &bytes.Buffer{}, r.log)
	}()
	t.Cleanup(func() { assert.NoError(t, r.stop(), "relay exit; log:\n%s", r.log) })
	select {
	case r.base = <-r.log.ready:
		return r
	case err := <-r.done:
		r.done <- err
		t.Fatalf("relay exited before listening: %v; log:\n%s", err, r.log)
	case <-time.After(5 * time.Second):
		t.Fatalf("no %q line within 5 s; log:\n%s", "relay listening on", r.log)
	}
	return nil
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
