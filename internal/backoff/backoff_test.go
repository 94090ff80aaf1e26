package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDelayDoublesCapsAndJitters(t *testing.T) {
	t.Parallel()
	low := Policy{Min: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return 0 }}
	high := low
	high.Rand = func() float64 { return 0.999999 }
	want := []time.Duration{100, 200, 400, 800, 1000, 1000} // ms, before jitter
	for n, d := range want {
		full := d * time.Millisecond
		assert.Equal(t, full/2, low.Delay(n), "attempt %d, lowest jitter: half the delay", n)
		assert.InDelta(t, float64(full), float64(high.Delay(n)), float64(time.Millisecond), "attempt %d, highest jitter: about the delay", n)
	}
	assert.Equal(t, 500*time.Millisecond, low.Delay(1000), "a huge attempt count stays at the cap")
}

func TestDelayWithDefaultRandStaysInRange(t *testing.T) {
	t.Parallel()
	p := Policy{Min: time.Second, Max: 8 * time.Second}
	for n := range 6 {
		d := p.Delay(n)
		full := min(time.Second<<n, 8*time.Second)
		assert.GreaterOrEqual(t, d, full/2)
		assert.Less(t, d, full)
	}
	assert.Equal(t, time.Duration(0), Policy{}.Delay(3), "a zero policy never waits")
}
