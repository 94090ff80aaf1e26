package e2e

// Whole-stack benchmarks (docs/PERFORMANCE.md, sections "Inbox UI" and
// "Answering"). Each one starts the relay and the UI in-process through
// app.Run, as the tests do, and reports its figures with b.ReportMetric
// beside a baseline measured in the same run. They run only with -bench,
// each with its own sample count:
//
//	go test -run '^$' -bench PushLatency -benchtime=300x ./e2e
//	go test -run '^$' -bench BrowserMemory -benchtime=200x ./e2e
//	go test -run '^$' -bench AnswerLatency -benchtime=300x ./e2e
//	go test -run '^$' -bench Operators -benchtime=1x ./e2e
//
// An iteration is one sample (one request, one more browser, one answer
// pair), except in BenchmarkOperators, where it is one whole round.

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// benchWait bounds every wait of the benchmarks: generous, because the
// machine they run on may be loaded, but a stack that has not done what
// a benchmark waits for by then is broken.
const benchWait = 45 * time.Second

// benchLatencies is a set of latency samples.
type benchLatencies []time.Duration

// quantile is the nearest-rank q-quantile (0 < q <= 1) of the samples; 0
// when there are none.
func (l benchLatencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// benchMS is d in milliseconds.
func benchMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchReportLatency reports the p50 and p99 of l as {name}-p50-ms and
// {name}-p99-ms.
func benchReportLatency(b *testing.B, name string, l benchLatencies) {
	b.Helper()
	b.ReportMetric(benchMS(l.quantile(0.50)), name+"-p50-ms")
	b.ReportMetric(benchMS(l.quantile(0.99)), name+"-p99-ms")
}

func TestBenchQuantile(t *testing.T) {
	t.Parallel()
	ms := func(n ...int) benchLatencies {
		var l benchLatencies
		for _, v := range n {
			l = append(l, time.Duration(v)*time.Millisecond)
		}
		return l
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	for _, c := range []struct {
		name string
		l    benchLatencies
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one sample", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd", ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{"p50 of 100", ms(hundred...), 0.5, 50 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"max", ms(hundred...), 1, 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.l.quantile(c.q), "quantile(%v) of %v", c.q, c.l)
		})
	}
}
