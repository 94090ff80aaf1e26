package aep

import (
	"encoding/json"
	"testing"
)

// The benchmarks cycle through the golden corpus one event per iteration,
// so ns/op and allocs/op read as ns/event and allocs/event. Run them with
// `make bench` or the command in docs/PERFORMANCE.md.

// BenchmarkBaselineMapDecode is the floor: encoding/json into map[string]any.
func BenchmarkBaselineMapDecode(b *testing.B) {
	lines := goldenLines(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var m map[string]any
		if err := json.Unmarshal(lines[i%len(lines)], &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvelope is the relay's per-event path: decode, validate the
// envelope, re-encode (the kept bytes, appended to an output buffer).
func BenchmarkEnvelope(b *testing.B) {
	lines := goldenLines(b)
	out := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, err := Decode(lines[i%len(lines)])
		if err != nil {
			b.Fatal(err)
		}
		if err := ValidateEnvelope(e); err != nil {
			b.Fatal(err)
		}
		out = append(out[:0], e.Raw()...)
	}
}

// BenchmarkFilterMatch is one attr-match filter applied to each event.
func BenchmarkFilterMatch(b *testing.B) {
	events := goldenEvents(b)
	f, err := ParseFilter([]byte(`{"type":["attention.*","control.*"],"severity":{"gte":"info"},"acmeregion":"eu-1"}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Match(events[i%len(events)])
	}
}

// BenchmarkDownlevelMetadata down-levels each event to a metadata ceiling
// (events already at or below it pass through untouched).
func BenchmarkDownlevelMetadata(b *testing.B) {
	events := goldenEvents(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Downlevel(events[i%len(events)], CaptureMetadata); err != nil {
			b.Fatal(err)
		}
	}
}

func goldenEvents(b *testing.B) []*Event {
	b.Helper()
	var out []*Event
	for _, line := range goldenLines(b) {
		e, err := Decode(line)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
