package sqlite

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// BenchmarkJournalRecord is the journal write on the post path (one
// Record: a committed, fsynced transaction), beside the in-memory
// journal it replaces as the baseline; p99-ns is the 99th percentile of
// one Record. Run: go test -run='^$'
// -bench=JournalRecord -benchmem ./internal/store/sqlite
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

// BenchmarkHistory reads the first History page of a journal of 100 000
// answers (2 000 under -short), from 10 agents: unfiltered, filtered by
// agent, and searched for text in one answer in 1000 (the targets:
// 50 ms for the first two, 200 ms for the search). Run:
// go test -run='^$' -bench=History -benchmem ./internal/store/sqlite
func BenchmarkHistory(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 2_000
	}
	j := openAt(b, tempPath(b), Options{})
	seed(b, j, n)
	for _, bc := range []struct {
		name string
		q    store.HistoryQuery
		want int
	}{
		{"unfiltered", store.HistoryQuery{}, store.PageSize},
		{"agent", store.HistoryQuery{Agent: "agent-3"}, store.PageSize},
		{"text", store.HistoryQuery{Text: "NEEDLE"}, min(store.PageSize, n/1000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := j.History(context.Background(), bc.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Entries) != bc.want {
					b.Fatalf("got %d entries, want %d", len(page.Entries), bc.want)
				}
			}
		})
	}
}

// seed records n answers in one transaction (Record commits each).
func seed(b *testing.B, j *Journal, n int) {
	b.Helper()
	tx, err := j.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO submissions
		(command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`)
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, '', '', ?)`)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		s := submission(cmdID(i), t0.Add(time.Duration(i)*time.Second))
		s.Agent = "agent-" + strconv.Itoa(i%10)
		s.Key.Session = "s-" + strconv.Itoa(i/20)
		if i%1000 == 999 {
			s.Question = "a question with a needle in it"
		}
		fields, _ := json.Marshal(s.Fields)
		form, _ := json.Marshal(s.Form)
		answer, _ := json.Marshal(s.Answer)
		var seq int64
		if err := ins.QueryRow(s.CommandID, string(s.Card), s.Token, s.Key.Source, s.Key.Session, s.Key.RequestID, s.Agent, s.Question,
			string(fields), s.By, string(form), string(answer), store.SearchText(s), store.Nanos(s.At),
			string(inbox.SubmissionAccepted), "", "", store.Nanos(s.At)+1).Scan(&seq); err != nil {
			b.Fatal(err)
		}
		for _, state := range []inbox.SubmissionState{inbox.SubmissionSending, inbox.SubmissionAccepted} {
			if _, err := st.Exec(seq, string(state), store.Nanos(s.At)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
