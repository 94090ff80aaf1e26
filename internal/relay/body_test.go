package relay_test

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

// A body trickled to any of the relay's routes (the attack run's POST
// /healthz, a GET with a body, an unknown path, as well as POST /events)
// is cut at the body deadline with 408, not held for as long as the
// client likes.
func TestTrickledBodyIsCutOnEveryRelayRoute(t *testing.T) {
	t.Parallel()
	const deadline = 300 * time.Millisecond
	c := cfg()
	c.ReadTimeout = deadline
	tr := startRelay(t, c)
	addr := tr.srv.Listener.Addr().String()
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/healthz"},
		{http.MethodGet, "/healthz"},
		{http.MethodPost, "/events"},
		{http.MethodGet, "/stream"},
		{http.MethodPut, "/no/such/path"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			start := time.Now()
			_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAEP-Version: 0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", tc.method, tc.path, addr, testToken)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			t.Cleanup(func() { cancel(); <-stopped })
			go func() { // a byte a tick, 98 at most: it stops by itself
				defer close(stopped)
				tk := time.NewTicker(deadline / 10)
				defer tk.Stop()
				for range 98 {
					select {
					case <-ctx.Done():
						return
					case <-tk.C:
						if _, err := conn.Write([]byte{' '}); err != nil {
							return
						}
					}
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err, "the trickling client must be answered, not held")
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
			assert.GreaterOrEqual(t, time.Since(start), deadline, "cut at the deadline, not before")
			assert.True(t, resp.Close, "the connection is closed after the 408")
		})
	}
}
