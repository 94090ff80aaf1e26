package sqlite

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal"
)

// History filters by agent, session, operator, outcome, time range and a
// case-insensitive substring of the question or the answer.
func TestHistoryFilters(t *testing.T) {
	t.Parallel()
	j := openAt(t, tempPath(t), Options{})
	mk := func(cmd string, min int, edit func(*inbox.Submission)) {
		s := submission(cmd, t0.Add(time.Duration(min)*time.Minute))
		edit(&s)
		require.NoError(t, j.Record(s))
	}
	mk("a", 0, func(s *inbox.Submission) {})
	mk("b", 1, func(s *inbox.Submission) { s.Agent, s.Question = "deployer", "Deploy to PRODUCTION?" })
	mk("c", 2, func(s *inbox.Submission) { s.Key.Session, s.By = "s2", "bob" })
	mk("d", 3, func(s *inbox.Submission) {
		s.Answer = aep.Answer{Option: "allow_once"}
		s.Question = "Run rm -rf build/?"
	})
	mk("e", 4, func(s *inbox.Submission) { s.Answer = aep.Answer{Values: aep.Values{"city": "Zürich"}} })
	require.NoError(t, j.Settle("b", inbox.SubmissionRejected, "invalid", "", t0.Add(time.Hour)))
	require.NoError(t, j.Settle("c", inbox.SubmissionAccepted, "", "", t0.Add(time.Hour)))

	for _, tc := range []struct {
		name string
		q    journal.HistoryQuery
		want []string
	}{
		{"everything, newest first", journal.HistoryQuery{}, []string{"e", "d", "c", "b", "a"}},
		{"agent", journal.HistoryQuery{Agent: "deployer"}, []string{"b"}},
		{"session", journal.HistoryQuery{Session: "s2"}, []string{"c"}},
		{"operator", journal.HistoryQuery{Operator: "bob"}, []string{"c"}},
		{"outcome", journal.HistoryQuery{Outcome: inbox.SubmissionRejected}, []string{"b"}},
		{"still sending", journal.HistoryQuery{Outcome: inbox.SubmissionSending}, []string{"e", "d", "a"}},
		{"since", journal.HistoryQuery{Since: t0.Add(3 * time.Minute)}, []string{"e", "d"}},
		{"until (exclusive)", journal.HistoryQuery{Until: t0.Add(time.Minute)}, []string{"a"}},
		{"time range", journal.HistoryQuery{Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)}, []string{"c", "b"}},
		{"question, any case", journal.HistoryQuery{Text: "production"}, []string{"b"}},
		{"option sent", journal.HistoryQuery{Text: "ALLOW_ONCE"}, []string{"d"}},
		{"text sent", journal.HistoryQuery{Text: "Ship It"}, []string{"c", "b", "a"}},
		{"a value, beyond ASCII", journal.HistoryQuery{Text: "ZÜRICH"}, []string{"e"}},
		{"a value's field id", journal.HistoryQuery{Text: `"name"`}, []string{"c", "b", "a"}},
		{"text is literal, not a pattern", journal.HistoryQuery{Text: "%"}, nil},
		{"filters combine", journal.HistoryQuery{Agent: "builder", Text: "which", Operator: "alice", Until: t0.Add(4 * time.Minute)}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			page, err := j.History(context.Background(), tc.q)
			require.NoError(t, err)
			assert.Equal(t, tc.want, commandIDs(page.Entries))
			assert.Empty(t, page.Next, "one page")
		})
	}

	page, err := j.History(context.Background(), journal.HistoryQuery{Agent: "deployer"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	b := page.Entries[0]
	assert.Equal(t, "Deploy to PRODUCTION?", b.Question)
	assert.Equal(t, inbox.SubmissionRejected, b.State)
	require.Len(t, b.Changes, 2, "posted, then rejected")
	assert.Equal(t, inbox.SubmissionSending, b.Changes[0].State)
	assert.True(t, b.Changes[0].At.Equal(t0.Add(time.Minute)))
	assert.Equal(t, journal.Change{State: inbox.SubmissionRejected, Reason: "invalid", At: b.Changes[1].At}, b.Changes[1])
	assert.True(t, b.Changes[1].At.Equal(t0.Add(time.Hour)))
}

// Pages hold 50, newest first; paging on while new answers are posted
// neither repeats nor skips an entry.
func TestHistoryPagesAreStableUnderInserts(t *testing.T) {
	t.Parallel()
	j := openAt(t, tempPath(t), Options{})
	const n = 120
	var want []string
	for i := range n {
		at := t0.Add(time.Duration(i/3) * time.Second) // three share each time: insertion order breaks the tie
		require.NoError(t, j.Record(submission(cmdID(i), at)))
		want = append([]string{cmdID(i)}, want...)
	}

	var got []string
	q := journal.HistoryQuery{}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4, "120 entries are three pages")
		page, err := j.History(context.Background(), q)
		require.NoError(t, err)
		if page.Next != "" {
			assert.Len(t, page.Entries, journal.PageSize, "a full page before the last")
		}
		got = append(got, commandIDs(page.Entries)...)
		// New answers arrive between pages, at the same time as the
		// newest and later.
		require.NoError(t, j.Record(submission("new-a"+cmdID(pages), t0.Add(time.Duration(n/3-1)*time.Second))))
		require.NoError(t, j.Record(submission("new-b"+cmdID(pages), t0.Add(time.Hour))))
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	assert.Equal(t, want, got, "every entry once, in order")

	_, err := j.History(context.Background(), journal.HistoryQuery{After: "page-2"})
	assert.ErrorIs(t, err, journal.ErrBadCursor)

	page, err := j.History(context.Background(), journal.HistoryQuery{Limit: 7})
	require.NoError(t, err)
	assert.Len(t, page.Entries, 7, "a smaller page when asked")
}

// Prune removes what was posted before the cutoff, with its states, and
// the removed text is gone from the files.
func TestPruneRemovesOldEntriesForGood(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j := openAt(t, path, Options{})
	const secret = "old-secret-answer-7f3a"
	for i := range 10 {
		s := submission(cmdID(i), t0.Add(time.Duration(i)*time.Hour))
		if i < 4 {
			s.Question = secret
		}
		require.NoError(t, j.Record(s))
		require.NoError(t, j.Settle(cmdID(i), inbox.SubmissionAccepted, "", "", s.At.Add(time.Second)))
	}

	n, err := j.Prune(context.Background(), t0.Add(4*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)

	page, err := j.History(context.Background(), journal.HistoryQuery{})
	require.NoError(t, err)
	assert.Equal(t, []string{cmdID(9), cmdID(8), cmdID(7), cmdID(6), cmdID(5), cmdID(4)}, commandIDs(page.Entries))
	var states int
	require.NoError(t, j.db.QueryRow(`SELECT count(*) FROM submission_states`).Scan(&states))
	assert.Equal(t, 12, states, "the removed entries' states went with them")

	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.False(t, strings.Contains(string(b), secret), "%s still holds pruned text", p)
	}

	n, err = j.Prune(context.Background(), t0.Add(4*time.Hour))
	require.NoError(t, err)
	assert.Zero(t, n, "nothing more to prune")
}

func commandIDs(es []journal.Entry) []string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.CommandID)
	}
	return ids
}
