package inbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
)

// benchForm is the shared deploy form, due at noon.
func benchForm() aep.Request {
	r := samples.DeployForm()
	r.ExpiresAt = "2026-07-03T12:00:00Z"
	return r
}

// BenchmarkApply measures one request and its answered and resolved
// events through Apply (3 events per op), with a subscriber draining its
// queue. Events are built in chunks outside the timer so the heap stays
// the size of a running inbox.
func BenchmarkApply(b *testing.B) {
	clk := newClock()
	in := New(Options{Now: clk.Now})
	sub := in.Subscribe(4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range sub.C() {
		}
	}()
	defer func() { sub.Close(); <-done }()
	build := func(i int) [3]*aep.Event {
		id := fmt.Sprintf("r%d", i)
		return [3]*aep.Event{
			request(b, id, int64(3*i), benchForm()),
			lifecycle(b, "attention.answered", "a"+id, id, id, int64(3*i+1),
				map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x", "staged": true}}}),
			lifecycle(b, "attention.resolved", "z"+id, id, "a"+id, int64(3*i+2), map[string]any{"resolution": "answered"}),
		}
	}
	const chunk = 512
	events := make([][3]*aep.Event, chunk)
	b.ReportAllocs()
	b.ResetTimer()
	for start := 0; start < b.N; start += chunk {
		b.StopTimer()
		n := min(chunk, b.N-start)
		for j := range n {
			events[j] = build(start + j)
		}
		b.StartTimer()
		for j := range n {
			for _, e := range events[j] {
				in.Apply(e)
			}
		}
	}
	b.StopTimer()
	dropped := 0.0
	if sub.Dropped() {
		dropped = 1 // the drainer was starved of CPU; the numbers then omit fan-out
	}
	b.ReportMetric(dropped, "sub-dropped")
}

// BenchmarkCards1000Pending measures listing 1000 pending cards (sort and
// copy), what a full page render reads.
func BenchmarkCards1000Pending(b *testing.B) {
	clk := newClock()
	in := New(Options{Now: clk.Now})
	for i := range 1000 {
		d := benchForm()
		d.ExpiresAt = clk.Now().Add(time.Duration(1000-i) * time.Second).Format(time.RFC3339)
		in.Apply(request(b, fmt.Sprintf("r%d", i), int64(i), d))
	}
	if n := in.Status().Pending; n != 1000 {
		b.Fatalf("pending got %d want 1000", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if len(in.Cards(Query{})) != 1000 {
			b.Fatal("short list")
		}
	}
}
