package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trickle sends a request line and headers announcing a 100-byte body,
// then the body a byte every tick (at most 99 bytes, so it stops by
// itself), and returns the server's answer as its status line and how
// long it took ("" and the error when the server hung up without one).
func trickle(t *testing.T, addr, method, path string, tick time.Duration) (status string, took time.Duration, err error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	// The safety net for a server that never cuts: the test fails at this
	// read deadline instead of hanging.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	start := time.Now()
	_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\nx", method, path, addr)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for range 98 {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				if _, err := conn.Write([]byte{'x'}); err != nil {
					return
				}
			}
		}
	}()
	defer func() { cancel(); <-stopped }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", time.Since(start), err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Status, time.Since(start), nil
}

// The attack run held connections for minutes by trickling a body to
// routes the body deadline did not cover. Every route now reads a body,
// if one is sent, under the body deadline: the trickler is cut with 408.
func TestTrickledBodyIsCutOnEveryRoute(t *testing.T) {
	t.Parallel()
	const deadline = 300 * time.Millisecond
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BodyTimeout = deadline }))
	addr := h.srv.Listener.Addr().String()
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/healthz"},
		{http.MethodGet, "/healthz"},
		{http.MethodPost, "/static/app.css"},
		{http.MethodGet, "/static/app.css"},
		{http.MethodPost, "/no/such/path"},
		{http.MethodPut, "/"},
		{http.MethodGet, "/push"},
		{http.MethodDelete, "/subscriptions"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			status, took, err := trickle(t, addr, tc.method, tc.path, deadline/10)
			require.NoError(t, err, "the trickling client must be answered, not held")
			assert.Equal(t, "408 Request Timeout", status)
			assert.GreaterOrEqual(t, took, deadline, "cut at the deadline, not before")
		})
	}
}

// The attack run got a 408 for only 22 of 511 bodies cut at 30 s: the
// response's write deadline (30 s) ran out with the body's (30 s), so the
// 408 could not be written. It is now written under a fresh deadline.
func TestTrickledBodyGets408WhenTheResponseDeadlineRunsOutToo(t *testing.T) {
	t.Parallel()
	const deadline = 300 * time.Millisecond
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BodyTimeout, c.ResponseTimeout = deadline, deadline }))
	addr := h.srv.Listener.Addr().String()
	for i := range 3 {
		status, _, err := trickle(t, addr, http.MethodPost, "/signin", deadline/10)
		require.NoError(t, err, "attempt %d: the trickling client got no answer", i)
		assert.Equal(t, "408 Request Timeout", status, "attempt %d", i)
	}
}
