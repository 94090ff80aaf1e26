package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServeForCrowd runs `aepforms serve` with args and env on loopback
// and returns the UI's and the embedded relay's host:port.
func startServeForCrowd(t *testing.T, env map[string]string, args ...string) (ui, relayAddr string) {
	t.Helper()
	stderr := newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	env["HOME"] = t.TempDir()
	go func() {
		done <- Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--operator-token", "operator-secret-for-tests"}, args...),
			envMap(env), nil, stderr, stderr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	// The soft open-files limit is raised to the hard one and both logged.
	stderr.waitFor(t, "aepforms UI listening on http://", "relay listening on http://", "open files limit", "soft=", "hard=")
	ui = regexp.MustCompile(`aepforms UI listening on http://([^\s"/]+)`).FindStringSubmatch(stderr.String())[1]
	relayAddr = listening.FindStringSubmatch(stderr.String())[1]
	return ui, relayAddr
}

// healthzWithin asserts that GET /healthz on addr is answered 200 within
// limit.
func healthzWithin(t *testing.T, addr string, limit time.Duration) {
	t.Helper()
	start := time.Now()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + addr + "/healthz")
	took := time.Since(start)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Less(t, took, limit, "/healthz took %v (loaded, shared machine)", took)
	t.Logf("/healthz answered in %v", took)
}

// The attack run: 600 clients trickling bodies to any route made a normal
// GET /healthz wait 57 s. With the defaults (--max-conns 512,
// --body-timeout 30s), it is answered within 2 s: a new connection takes
// the place of the slow client that has waited longest.
func TestServeAnswersHealthzThrough600TricklingClients(t *testing.T) {
	t.Parallel()
	const crowd = 600
	ui, _ := startServeForCrowd(t, map[string]string{})
	routes := []string{"POST /healthz", "GET /healthz", "POST /static/app.css", "PUT /", "POST /no/such/path", "POST /signin", "GET /push"}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	sent := make(chan error, crowd)
	for i := range crowd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", ui)
			if err != nil {
				sent <- err
				return
			}
			defer conn.Close()
			_, err = fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\nx", routes[i%len(routes)], ui)
			sent <- err
			// A byte a second, 60 at most: the loop stops by itself.
			tk := time.NewTicker(time.Second)
			defer tk.Stop()
			for range 60 {
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
	}
	for range crowd {
		require.NoError(t, <-sent)
	}
	healthzWithin(t, ui, 2*time.Second)
}

// The attack run: 20 400 idle keep-alive connections to the embedded
// relay's port used all of serve's descriptors, and the UI's /healthz
// timed out. The relay now has its own cap (AEP_MAX_CONNS, 1024 by
// default; scaled down here to 50 under 200 connections, the same
// mechanism): it holds at most its cap, the idle ones shed for new ones,
// and the UI, on its own budget, answers.
func TestRelayCrowdCannotStarveTheUI(t *testing.T) {
	t.Parallel()
	const relayCap, crowd = 50, 200
	ui, relayAddr := startServeForCrowd(t, map[string]string{"AEP_MAX_CONNS": strconv.Itoa(relayCap)})

	conns := make([]net.Conn, 0, crowd)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range crowd {
		c, err := net.Dial("tcp", relayAddr)
		require.NoError(t, err)
		conns = append(conns, c)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", relayAddr)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err, "the relay answers a new connection at its cap")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// Kept alive, idle, from now on.
	}
	// Every connection the relay has closed reads EOF at once; the ones
	// it holds read nothing until this probe's deadline.
	var closed int
	for _, c := range conns {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			closed++
		}
	}
	assert.GreaterOrEqual(t, closed, crowd-relayCap, "the relay holds at most its cap of connections: %d of %d closed", closed, crowd)
	healthzWithin(t, ui, 2*time.Second)
}
