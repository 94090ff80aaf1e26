package sqlite

import (
	"slices"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// BenchmarkJournalRecord is the journal write on the post path (one
// Record: a committed, fsynced transaction), beside the in-memory
// journal it replaces as the baseline; p99-ns is the 99th percentile of
// one Record. Run: go test -run='^$'
// -bench=JournalRecord -benchmem ./internal/journal/sqlite
func BenchmarkJournalRecord(b *testing.B) {
	for _, bc := range []struct {
		name string
		open func(b *testing.B) inbox.Journal
	}{
		{"memory", func(*testing.B) inbox.Journal { return inbox.NewMemoryJournal() }},
		{"sqlite", func(b *testing.B) inbox.Journal { return openAt(b, tempPath(b), Options{}) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			j := bc.open(b)
			var took []time.Duration
			for b.Loop() {
				s := submission(cmdID(len(took)), t0)
				start := time.Now()
				if err := j.Record(s); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
