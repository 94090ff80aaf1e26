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

	"github.com/stretchr/testify/require"
)

// The relay is restarted mid-test behind a stable address, and stays away
// long enough for the feed's own backoff to grow past 2 s (its third
// refused try waits 2 to 4 s). Once the new relay is up, the respond path
// (its backoff capped at 300 ms here) reaches it and wakes the feed, which
// is connected again well within the README's 2 s; left to its own backoff
// it would take at least 2 s from its last try.
func TestServeGraphFeedFollowsTheRelaysReturn(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AEP_TOKEN": "tok"}
	relay1, _, stop1 := startRelayCommand(t, env, "--port", "0")

	// upstream is the relay behind the proxy; nil while it is away.
	var upstream atomic.Pointer[httputil.ReverseProxy]
	var streamTries atomic.Int64
	tried := make(chan struct{}, 1)
	upstream.Store(reverseProxy(t, relay1))
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp := upstream.Load()
		if rp == nil {
			if strings.HasSuffix(r.URL.Path, "/stream") {
				streamTries.Add(1)
				select {
				case tried <- struct{}{}:
				default:
				}
			}
			http.Error(w, "relay away", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	db := filepath.Join(t.TempDir(), "j", "aepforms.db")
	cfg, err := parseServe([]string{"--relay", proxy.URL, "--db", db, "--respond-backoff-max", "300ms"}, func(string) string { return "" }, io.Discard)
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
	logs.waitCount(t, "feed: connected", 1)
	logs.waitCount(t, "relay connected", 1)

	// The relay goes away: both paths lose it, and the feed is refused
	// three times (its next wait is 2 to 4 s).
	upstream.Store(nil)
	require.NoError(t, stop1())
	deadline := time.After(20 * time.Second)
	for streamTries.Load() < 3 {
		select {
		case <-tried:
		case <-deadline:
			t.Fatalf("the feed tried the away relay %d times in 20 s, want 3", streamTries.Load())
		}
	}

	// A new relay comes up at the same address.
	relay2, _, _ := startRelayCommand(t, env, "--port", "0")
	upstream.Store(reverseProxy(t, relay2))
	back := time.Now()
	logs.waitCount(t, "feed: connected", 2)
	took := time.Since(back)
	require.Less(t, took, 1500*time.Millisecond,
		"the feed reconnected %v after the relay's return; want it woken by the respond path (300 ms backoff), not its own 2-4 s wait", took)
	require.Contains(t, logs.String(), "feed: reconnect wait cut short")
}

// reverseProxy forwards to the relay at base, streaming as it goes.
func reverseProxy(t *testing.T, base string) *httputil.ReverseProxy {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	return rp
}

// waitCount waits until the buffer holds sub at least n times.
func (b *notifyBuffer) waitCount(t *testing.T, sub string, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for strings.Count(b.String(), sub) < n {
		select {
		case <-b.wrote:
		case <-deadline:
			t.Fatalf("output held %q %d times in 20 s, want %d; got:\n%s", sub, strings.Count(b.String(), sub), n, b.String())
		}
	}
}
