package sqlite

import (
	"testing"

	"github.com/aepforms/aepforms/internal/inbox"
)

// BenchmarkJournalRecord is the journal write on the post path (one
// Record: a committed, fsynced transaction), beside the in-memory
// journal it replaces as the baseline. Run: go test -run='^$'
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
			i := 0
			for b.Loop() {
				if err := j.Record(submission(cmdID(i), t0)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
