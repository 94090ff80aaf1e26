package feed

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/sse"
)

func TestBackoffSequence(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name string
		rand float64
		want []time.Duration
	}{
		{"no jitter draw: half of each step", 0, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 500 * ms, 500 * ms}},
		{"mid draw", 0.5, []time.Duration{75 * ms, 150 * ms, 300 * ms, 600 * ms, 750 * ms, 750 * ms}},
		{"top draw stays under the cap", 0.999, []time.Duration{99950 * time.Microsecond, 199900 * time.Microsecond, 399800 * time.Microsecond, 799600 * time.Microsecond, 999500 * time.Microsecond, 999500 * time.Microsecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{BackoffMin: 100 * ms, BackoffMax: time.Second, Rand: func() float64 { return tc.rand }}.withDefaults()
			var got []time.Duration
			for n := range len(tc.want) {
				got = append(got, cfg.backoff(n))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	huge := Config{BackoffMin: time.Second, BackoffMax: time.Hour, Rand: func() float64 { return 0 }}.withDefaults()
	assert.Equal(t, 30*time.Minute, huge.backoff(1000), "no overflow after many attempts")
}

// waits runs a Client against h and returns the backoff waits it logged
// for its first n disconnects.
func waits(t *testing.T, h http.HandlerFunc, n int, now func() time.Time) []string {
	t.Helper()
	logs := &logRecorder{}
	var draws atomic.Int32
	cfg := testConfig(newHandlerServer(t, h))
	cfg.BackoffMin, cfg.BackoffMax = 2*time.Millisecond, 16*time.Millisecond
	cfg.Rand = func() float64 { draws.Add(1); return 0 }
	cfg.Logger = slog.New(logs)
	cfg.Now = now
	sink := newRecSink()
	startClient(t, cfg, sink)
	for range n + 1 {
		waitDisconnected(t, sink)
	}
	var out []string
	for _, l := range logs.all() {
		if strings.HasPrefix(l, "feed: disconnected") {
			_, w, _ := strings.Cut(l, " wait=")
			w, _, _ = strings.Cut(w, " ")
			out = append(out, w)
		}
	}
	assert.GreaterOrEqual(t, int(draws.Load()), n, "one jitter draw per wait")
	return out[:n]
}

func TestBackoffEscalatesAndCaps(t *testing.T) {
	t.Parallel()
	down := func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }
	assert.Equal(t, []string{"1ms", "2ms", "4ms", "8ms", "8ms", "8ms"}, waits(t, down, 6, nil))
}

// TestBackoffResetsAfterAStableConnection: a stream that stayed open for
// BackoffMax resets the backoff; a flapping one escalates.
func TestBackoffResetsAfterAStableConnection(t *testing.T) {
	t.Parallel()
	endsAtOnce := func(w http.ResponseWriter, r *http.Request) {
		if sw, err := sse.NewWriter(w, 0); err == nil {
			_ = sw.Ping()
		}
	}
	base := time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)
	frozen := func() time.Time { return base } // every stream lived 0
	assert.Equal(t, []string{"1ms", "2ms", "4ms", "8ms"}, waits(t, endsAtOnce, 4, frozen), "flapping escalates")

	var clock atomic.Int64
	stable := func() time.Time { // every reading is one BackoffMax later
		return base.Add(time.Duration(clock.Add(int64(16 * time.Millisecond))))
	}
	assert.Equal(t, []string{"1ms", "1ms", "1ms", "1ms"}, waits(t, endsAtOnce, 4, stable), "each stream lived BackoffMax")
}
