package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The serve graph wires the feed's reconnect to the respond path's wake:
// the relay's WebSocket stays refused, its stream comes back, and the
// respond path's reconnect wait is cut short at once (it logs so); left to
// its own backoff it never says that.
func TestServeGraphFeedReconnectWakesTheRespondPath(t *testing.T) {
	t.Parallel()
	relayURL, _, _ := startRelayCommand(t, map[string]string{"AEP_TOKEN": "tok"}, "--port", "0")
	target, err := url.Parse(relayURL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	// The relay as the UI sees it: its stream away until streamUp, its
	// socket away throughout (so the respond path keeps backing off).
	var streamUp atomic.Bool
	var socketTries atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/socket") {
			socketTries.Add(1)
			http.Error(w, "relay away", http.StatusServiceUnavailable)
			return
		}
		if !streamUp.Load() {
			http.Error(w, "relay away", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	db := filepath.Join(t.TempDir(), "j", "aepforms.db")
	cfg, err := parseServe([]string{"--relay", proxy.URL, "--db", db}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	logs := newNotifyBuffer()
	logger := slog.New(slog.NewTextHandler(logs, nil))
	jr, err := openJournal(t.Context(), db, leaseConfig{lease: time.Minute}, logger)
	require.NoError(t, err)
	g := newServeGraph(cfg, proxy.URL, "tok", jr, logger)
	require.NotNil(t, g.respond)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	g.start(ctx, func(_ string, f func() error) { wg.Go(func() { _ = f() }) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = jr.Close()
	})

	require.Eventually(t, func() bool { return socketTries.Load() >= 1 }, 10*time.Second, time.Millisecond,
		"the respond path never tried the relay")
	assert.NotContains(t, logs.String(), "reconnect wait cut short", "no wake before the feed gets through")
	streamUp.Store(true)
	logs.waitFor(t, "reconnect wait cut short")
	assert.True(t, g.in.Status().FeedConnected, "woken by the feed's reconnect")
}
