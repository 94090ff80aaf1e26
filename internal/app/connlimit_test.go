package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At the cap a new connection takes the place of the one that has waited
// longest for its request; when every connection serves a request, the
// new one waits in the kernel's queue until one is closed.
func TestLimitListenerShedsTheLongestWaitingAndHoldsTheServing(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	full, shed := make(chan struct{}, 1), make(chan struct{}, 8)
	ln := newLimitListener(inner, 2, func() {
		select {
		case full <- struct{}{}:
		default:
		}
	}, func() { shed <- struct{}{} })
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan *limitConn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c.(*limitConn)
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		return c
	}
	wait := func(what string) *limitConn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not accepted", what)
			return nil
		}
	}
	// Two connections waiting for their request; a third sheds the first.
	oldest := dial()
	first := wait("first")
	dial()
	second := wait("second")
	dial()
	third := wait("third, in the place of the oldest waiting")
	<-shed
	_, err = oldest.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the oldest waiting connection is closed")
	_ = first

	// Both now serve a request: a fourth waits for one to close.
	ln.serving(second)
	ln.serving(third)
	dial()
	select {
	case <-full:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not report the cap reached")
	}
	select {
	case c := <-accepted:
		t.Fatalf("a connection serving a request was shed for a new one: %v", c.RemoteAddr())
	default:
	}
	require.NoError(t, second.Close())
	fourth := wait("fourth, after one closed")
	assert.NotNil(t, fourth)
	_ = second.Close()
	ln.mu.Lock()
	assert.Equal(t, 2, ln.open, "closing twice gives back one slot only")
	ln.mu.Unlock()

	require.NoError(t, ln.Close())
	for range accepted { // the accept loop ends with the listener
	}
}

// The attack run: a crowd of clients trickling sign-in bodies took every
// connection, and /healthz stopped answering. Now /healthz takes the place
// of the slow client that has waited longest, at once; the rest of the
// crowd is cut at the body deadline (--body-timeout) with 408.
func TestServeCutsACrowdOfSlowBodiesAndAnswersAgain(t *testing.T) {
	t.Parallel()
	const crowd, deadline = 3, 2 * time.Second
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
				cut <- "closed"
				return
			}
			resp.Body.Close()
			cut <- resp.Status
		}()
	}

	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Less(t, time.Since(start), deadline, "/healthz is answered before the slow clients' deadline")
	stderr.waitFor(t, "UI connection cap reached: the connections that waited longest")

	got := map[string]int{}
	for range crowd {
		got[<-cut]++
	}
	assert.Equal(t, map[string]int{"closed": 1, "408 Request Timeout": crowd - 1}, got, "the one shed for /healthz is closed, the others cut with 408")
}
