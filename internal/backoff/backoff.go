// Package backoff computes reconnect delays for the parts of aepforms that
// hold a connection open (the feed, the respond path, the demo agent):
// exponential from Min, capped at Max, jittered so that many clients
// cut off together do not come back together.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy is a reconnect delay policy.
type Policy struct {
	// Min is the delay before the first retry (attempt 0).
	Min time.Duration
	// Max caps the delay.
	Max time.Duration
	// Rand returns a number in [0, 1) for the jitter; nil is math/rand/v2.
	Rand func() float64
}

// Delay returns the wait before retry attempt n (0-based): Min doubled n
// times, capped at Max, jittered into [d/2, d).
func (p Policy) Delay(n int) time.Duration {
	d := p.Min
	for range n {
		if d >= p.Max/2 {
			d = p.Max
			break
		}
		d *= 2
	}
	d = min(d, p.Max)
	if d <= 1 {
		return d
	}
	rnd := p.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	return d/2 + time.Duration(rnd()*float64(d/2))
}
