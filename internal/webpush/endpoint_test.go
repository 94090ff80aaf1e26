package webpush

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// An IPv4-compatible IPv6 address (::a.b.c.d, deprecated) carries an IPv4
// address, loopback or private maybe: refused like the address it holds,
// as are the other IPv6 forms that embed one.
func TestEmbeddedIPv4EndpointsAreRefused(t *testing.T) {
	t.Parallel()
	for _, e := range []string{"https://[::127.0.0.1]/x", "https://[::10.0.0.1]/x", "https://[::8.8.8.8]/x", "https://[::ffff:0:127.0.0.1]/x", "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x"} {
		assert.ErrorIs(t, CheckEndpoint(e, false), ErrEndpoint, e)
	}
	assert.ErrorIs(t, dialControl(false)("tcp", "[::127.0.0.1]:443", nil), ErrEndpoint)
	assert.NoError(t, CheckEndpoint("https://[2606:4700::1111]/x", false), "a public IPv6 address is accepted")
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A push endpoint's path is the push service's capability token: a push
// that fails is logged with the endpoint's origin only.
func TestPushFailuresLogTheOriginNotThePath(t *testing.T) {
	t.Parallel()
	const token = "capability-token-never-logged"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cut/"+token {
			hj, ok := w.(http.Hijacker)
			require.True(t, ok)
			c, _, err := hj.Hijack()
			require.NoError(t, err)
			c.Close() // no response at all: a network failure
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "state", "j.db"), sqlite.Options{Host: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	logs := &lockedBuffer{}
	p, err := New(Config{Subject: "mailto:ops@example.com", AllowLoopback: true, Timeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}, j)
	require.NoError(t, err)
	ps := &pushService{srv: srv}
	for _, path := range []string{"/cut/" + token, "/status/" + token} {
		d := newDevice(t, ps, path, "alice")
		assert.Equal(t, Failed, p.Send(context.Background(), d.sub, Message{Title: "t"}, time.Minute, false), path)
	}
	out := logs.String()
	assert.Contains(t, out, "push: not delivered")
	assert.Contains(t, out, "push: refused")
	assert.Contains(t, out, srv.URL, "the endpoint's origin is logged")
	assert.NotContains(t, out, token, "the endpoint's path (a capability token) is never logged")
}
