package web

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// claimBuckets are the upper bounds, in seconds, of the time-to-first-
// claim histogram: from a question's arrival to its first "I'm on it".
var claimBuckets = []float64{5, 15, 30, 60, 120, 300, 600, 1800, 3600}

// claimTimes is the time-to-first-claim histogram.
type claimTimes struct {
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

// FirstClaim counts one question's first claim, d after it arrived.
func (m *Metrics) FirstClaim(d time.Duration) {
	h := &m.claims
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = make([]uint64, len(claimBuckets)+1)
	}
	s := max(d.Seconds(), 0)
	i := 0
	for i < len(claimBuckets) && s > claimBuckets[i] {
		i++
	}
	h.counts[i]++
	h.sum += s
	h.n++
}

// writeClaimTimes writes the time-to-first-claim histogram.
func writeClaimTimes(b *strings.Builder, m *Metrics) {
	h := &m.claims
	h.mu.Lock()
	defer h.mu.Unlock()
	const name = "aepforms_time_to_first_claim_seconds"
	fmt.Fprintf(b, "# HELP %s Time from a question's arrival to its first claim (\"I'm on it\").\n# TYPE %s histogram\n", name, name)
	var cum uint64
	for i, le := range claimBuckets {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(b, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(le, 'f', -1, 64), cum)
	}
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", name, h.n, name, strconv.FormatFloat(h.sum, 'f', -1, 64), name, h.n)
}
