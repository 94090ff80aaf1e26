package feed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSilenceTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		set           func(*testRelay)
		wantConnected bool
	}{
		{"silent after the headers", func(tr *testRelay) { tr.silent = true }, true},
		{"no headers at all", func(tr *testRelay) { tr.stall = true }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRelay(t)
			tr.set(tc.set)
			cfg := testConfig(tr.URL())
			cfg.SilenceTimeout = 100 * time.Millisecond
			sink := newRecSink()
			startClient(t, cfg, sink)
			if tc.wantConnected {
				st := waitState(t, sink)
				require.True(t, st.connected, "got %+v, want connected first", st)
			}
			err := waitDisconnected(t, sink)
			require.ErrorIs(t, err, ErrSilent, "got %v", err)
			waitRequest(t, tr)
			waitRequest(t, tr) // the reconnect

			// Once the relay speaks again, the reconnected feed reads it.
			tr.set(func(tr *testRelay) { tr.silent, tr.stall = false, false })
			tr.restart()
			waitConnected(t, sink)
			tr.add(event(t, "s", 0, "session.started", "alive"))
			assert.Contains(t, waitApplied(t, sink, 1), "alive")
		})
	}
}

// TestPingsKeepTheConnection: pings more often than the silence timeout keep
// one connection open over many timeouts.
func TestPingsKeepTheConnection(t *testing.T) {
	t.Parallel()
	tr := newTestRelay(t)
	tr.set(func(tr *testRelay) { tr.ping = 5 * time.Millisecond })
	cfg := testConfig(tr.URL())
	cfg.SilenceTimeout = 250 * time.Millisecond // wide: a loaded machine delays pings
	sink := newRecSink()
	startClient(t, cfg, sink)
	waitConnected(t, sink)
	const pings = 120 // at least 600 ms of pings: over two silence timeouts
	for i := range pings {
		select {
		case <-tr.pings:
		case <-testTimeout():
			t.Fatalf("got %d pings, want %d", i, pings)
		}
	}
	assert.Equal(t, 1, tr.requestCount(), "one connection, never reconnected")
	select {
	case st := <-sink.states:
		t.Fatalf("got FeedState(%v, %v), want no change", st.connected, st.err)
	default:
	}
}
