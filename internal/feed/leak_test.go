package feed

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunLeaksNoGoroutine goes through connect, events, a silence
// reconnect and a relay restart, ends the context, and checks that every
// goroutine the feed started has ended. It is not parallel: it counts the
// process's goroutines.
func TestRunLeaksNoGoroutine(t *testing.T) {
	tr := newTestRelay(t)
	base := runtime.NumGoroutine()

	cfg := testConfig(tr.URL())
	cfg.SilenceTimeout = 100 * time.Millisecond
	tr.set(func(tr *testRelay) { tr.ping = 20 * time.Millisecond })
	sink := newRecSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).Run(ctx, sink) }()

	waitConnected(t, sink)
	tr.add(event(t, "s", 0, "session.started", "a"))
	waitApplied(t, sink, 1)
	tr.set(func(tr *testRelay) { tr.silent, tr.ping = true, 0 })
	tr.restart()
	require.ErrorIs(t, waitDisconnected(t, sink), ErrStreamEnded)
	waitConnected(t, sink)
	require.ErrorIs(t, waitDisconnected(t, sink), ErrSilent)
	tr.set(func(tr *testRelay) { tr.silent = false })
	waitConnected(t, sink)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return after its context ended")
	}
	tr.restart() // end the test relay's handlers too

	deadline := time.After(waitFor)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > base {
		select {
		case <-tick.C:
		case <-deadline:
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("got %d goroutines, want at most %d as before Run:\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
	}
}
