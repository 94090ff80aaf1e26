package postgres

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
	"github.com/aepforms/aepforms/internal/store/sqlite"
	"github.com/aepforms/aepforms/internal/store/storetest"
)

// BenchmarkJournalRecordBackends is the journal write on the post path
// (one Record: a committed transaction, fsynced on both backends) on the
// in-memory journal, the embedded SQLite file and PostgreSQL over
// loopback TCP, in one run on one machine; p99-ns is the 99th
// percentile of one Record. The PostgreSQL server is pgtest's, with its
// default durability (fsync and synchronous_commit on). Run:
// go test -run='^$' -bench=JournalRecordBackends -benchtime=2000x ./internal/store/postgres
func BenchmarkJournalRecordBackends(b *testing.B) {
	for _, bc := range []struct {
		name string
		open func(b *testing.B) inbox.Journal
	}{
		{"memory", func(*testing.B) inbox.Journal { return inbox.NewMemoryJournal() }},
		{"sqlite", func(b *testing.B) inbox.Journal {
			j, err := sqlite.Open(filepath.Join(b.TempDir(), "aepforms.db"), sqlite.Options{Host: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = j.Close() })
			return j
		}},
		{"postgres", func(b *testing.B) inbox.Journal {
			return openURL(b, pgtest.Need(b).NewDatabase(b), Options{Host: "bench"})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			j := bc.open(b)
			var took []time.Duration
			for b.Loop() {
				s := storetest.Submission(storetest.CmdID(len(took)), storetest.T0)
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
