package sqldb

import (
	"context"
	"fmt"
	"strings"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// History returns one page of the submissions q selects, newest first
// (time posted, then insertion order), each with its state changes. The
// text search is a literal substring of the folded search column
// (Dialect.Instr), with no LIKE pattern to escape.
func (a *Answers) History(ctx context.Context, q store.HistoryQuery) (store.HistoryPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > store.PageSize {
		limit = store.PageSize
	}
	var (
		where []string
		args  []any
	)
	eq := func(col, v string) {
		if v != "" {
			where = append(where, col+" = ?")
			args = append(args, v)
		}
	}
	eq("agent", q.Agent)
	if head, tail, short := store.SessionShort(q.Session); short {
		where = append(where, a.Dialect.Instr+"(session, ?) = 1", a.Dialect.Instr+"(session, ?) > 0")
		args = append(args, head, tail)
	} else {
		eq("session", q.Session)
	}
	eq("operator", q.Operator)
	switch q.Rule {
	case "":
	case store.AnyRule:
		where = append(where, a.Dialect.Instr+"(operator, ?) = 1")
		args = append(args, store.RuleByPrefix)
	default:
		eq("operator", store.RuleByPrefix+q.Rule)
	}
	eq("state", string(q.Outcome))
	if !q.Since.IsZero() {
		where = append(where, "posted_at >= ?")
		args = append(args, q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		where = append(where, "posted_at < ?")
		args = append(args, q.Until.UnixNano())
	}
	if q.Text != "" {
		where = append(where, a.Dialect.Instr+"(search, ?) > 0")
		args = append(args, store.Fold(q.Text))
	}
	if q.Team != "" {
		where = append(where, "card_id IN (SELECT card_id FROM routing_steps WHERE kind = ? AND team = ?)")
		args = append(args, store.RoutedTo, q.Team)
	}
	if q.Escalated {
		where = append(where, "card_id IN (SELECT card_id FROM routing_steps WHERE kind = ?)")
		args = append(args, inbox.StepEscalated)
	}
	if q.After != "" {
		posted, seq, err := store.ParseCursor(q.After)
		if err != nil {
			return store.HistoryPage{}, err
		}
		where = append(where, "(posted_at < ? OR (posted_at = ? AND seq < ?))")
		args = append(args, posted, posted, seq)
	}
	query := `SELECT ` + submissionColumns + ` FROM submissions`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY posted_at DESC, seq DESC LIMIT ?"
	args = append(args, limit+1)

	rows, err := a.Synced.QueryContext(ctx, a.Q(query), args...)
	if err != nil {
		return store.HistoryPage{}, fmt.Errorf("journal: history: %w", err)
	}
	defer rows.Close()
	var (
		page store.HistoryPage
		seqs []int64
	)
	for rows.Next() {
		s, seq, err := scanSubmission(rows)
		if err != nil {
			return store.HistoryPage{}, fmt.Errorf("journal: history: %w", err)
		}
		if len(page.Entries) == limit {
			last := page.Entries[limit-1]
			page.Next = store.FormatCursor(store.Nanos(last.At), seqs[limit-1])
			break
		}
		page.Entries = append(page.Entries, store.Entry{Submission: s})
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return store.HistoryPage{}, fmt.Errorf("journal: history: %w", err)
	}
	rows.Close()
	if err := a.changes(ctx, page.Entries, seqs); err != nil {
		return store.HistoryPage{}, err
	}
	if err := a.routing(ctx, page.Entries); err != nil {
		return store.HistoryPage{}, err
	}
	return page, nil
}

// routing fills entries' Routing: their cards' routing history.
func (a *Answers) routing(ctx context.Context, entries []store.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	idx := map[string][]int{}
	var cards []any
	for i, e := range entries {
		id := string(e.Card)
		if _, ok := idx[id]; !ok {
			cards = append(cards, id)
		}
		idx[id] = append(idx[id], i)
	}
	steps, err := a.routingOf(ctx, cards)
	if err != nil {
		return fmt.Errorf("journal: history: %w", err)
	}
	for _, s := range steps {
		for _, i := range idx[s.Card] {
			entries[i].Routing = append(entries[i].Routing, s)
		}
	}
	return nil
}

// changes fills entries[i].Changes, the states of submission seqs[i].
func (a *Answers) changes(ctx context.Context, entries []store.Entry, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	idx := make(map[int64]int, len(seqs))
	args := make([]any, len(seqs))
	for i, s := range seqs {
		idx[s], args[i] = i, s
	}
	rows, err := a.Synced.QueryContext(ctx, a.Q(`SELECT submission, state, reason, detail, at FROM submission_states
		WHERE submission IN (?`+strings.Repeat(", ?", len(seqs)-1)+`) ORDER BY id`), args...)
	if err != nil {
		return fmt.Errorf("journal: history: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq, at int64
			c       store.Change
			state   string
		)
		if err := rows.Scan(&seq, &state, &c.Reason, &c.Detail, &at); err != nil {
			return fmt.Errorf("journal: history: %w", err)
		}
		c.State, c.At = inbox.SubmissionState(state), store.FromNanos(at)
		e := &entries[idx[seq]]
		e.Changes = append(e.Changes, c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("journal: history: %w", err)
	}
	return nil
}
