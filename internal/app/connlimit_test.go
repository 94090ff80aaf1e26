package app

import (
	"net"
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
