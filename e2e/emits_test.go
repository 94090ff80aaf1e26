package e2e

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// emitRecorder is an HTTP proxy in front of the relay (streams and
// WebSocket upgrades pass through unchanged) that keeps the bytes of
// every event the UI posts to the relay's emit endpoint, by event id, so
// a test can hold what the relay forwards against what was posted.
type emitRecorder struct {
	mu     sync.Mutex
	posted map[string][]byte // event id -> the body as posted
}

// recordEmits starts the proxy and returns it with its URL (for
// stackOptions.uiRelay).
func recordEmits(t *testing.T, relayURL string) (*emitRecorder, string) {
	t.Helper()
	target, err := url.Parse(relayURL)
	require.NoError(t, err)
	rec := &emitRecorder{posted: map[string][]byte{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") &&
			strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "unreadable", http.StatusBadRequest)
				return
			}
			if ev, err := aep.Decode(body); err == nil {
				rec.mu.Lock()
				rec.posted[ev.ID()] = body
				rec.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

// body is what was posted under event id (nil when nothing was).
func (r *emitRecorder) body(id string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posted[id]
}

// ofType counts the distinct events of type typ posted.
func (r *emitRecorder) ofType(typ string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range r.posted {
		if ev, err := aep.Decode(b); err == nil && ev.Type() == typ {
			n++
		}
	}
	return n
}
