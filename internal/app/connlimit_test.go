package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At the cap a new connection waits in the kernel's queue until one of
// those held is closed; then it is taken.
func TestLimitListenerHoldsAtMostNConnections(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	full := make(chan struct{}, 1)
	ln := newLimitListener(inner, 2, func() {
		select {
		case full <- struct{}{}:
		default:
		}
	})
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	wait := func(what string) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not accepted", what)
			return nil
		}
	}
	dial()
	dial()
	first, _ := wait("first"), wait("second")
	select {
	case <-full:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not report the cap reached")
	}
	dial() // queued by the kernel, not taken
	select {
	case c := <-accepted:
		t.Fatalf("a third connection was taken at the cap: %v", c.RemoteAddr())
	default:
	}
	require.NoError(t, first.Close())
	third := wait("third, after one closed")
	assert.NotNil(t, third)
	_ = first.Close()
	assert.Len(t, ln.sem, 2, "closing twice gives back one slot only")

	require.NoError(t, ln.Close())
	for range accepted { // the accept loop ends with the listener
	}
}

// The attack run: a crowd of clients trickling sign-in bodies took every
// connection, and /healthz stopped answering. Now the crowd fills the cap
// (--max-conns), each is cut at the body deadline (--body-timeout) with
// 408, and /healthz, waiting its turn, is answered.
func TestServeCutsACrowdOfSlowBodiesAndAnswersAgain(t *testing.T) {
	t.Parallel()
	const crowd, deadline = 3, 300 * time.Millisecond
	stderr := newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--operator-token", "operator-secret-for-tests",
			"--max-conns", strconv.Itoa(crowd), "--body-timeout", deadline.String()},
			envMap(map[string]string{"HOME": t.TempDir()}), nil, stderr, stderr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	stderr.waitFor(t, "aepforms UI listening on http://")
	base := regexp.MustCompile(`aepforms UI listening on http://([^\s"/]+)`).FindStringSubmatch(stderr.String())[1]

	start := time.Now()
	cut := make(chan string, crowd)
	for range crowd {
		conn, err := net.Dial("tcp", base)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = fmt.Fprintf(conn, "POST /signin HTTP/1.1\r\nHost: %s\r\nOrigin: http://%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nt", base, base)
		require.NoError(t, err)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				cut <- err.Error()
				return
			}
			resp.Body.Close()
			cut <- resp.Status
		}()
	}
	stderr.waitFor(t, "connection cap reached")

	health := make(chan int, 1)
	go func() {
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get("http://" + base + "/healthz")
		if err != nil {
			health <- 0
			return
		}
		resp.Body.Close()
		health <- resp.StatusCode
	}()
	for range crowd {
		assert.Equal(t, "408 Request Timeout", <-cut, "each slow client is cut with 408")
	}
	assert.GreaterOrEqual(t, time.Since(start), deadline)
	assert.Equal(t, http.StatusOK, <-health, "/healthz is answered once the slow clients are cut")
}
