package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Answers is the journal proper: each answer (submission) the operator
// posted, its command, the states it moved through and what the agent
// recorded, with the resend leases of replicas (lease.go) and History
// (history.go).
type Answers struct {
	*DB
	// LeaseOwner is the name this process (replica) holds resend leases
	// under.
	LeaseOwner string
	// Lease is how long a resend lease lasts unrenewed.
	Lease time.Duration
}

// Pending is a submission on its way into the journal, its columns
// encoded.
type Pending struct {
	S                             inbox.Submission
	fields, form, answer, options string
}

// NewPending encodes s's columns.
func NewPending(s inbox.Submission) (*Pending, error) {
	fields, form, answer, options, err := store.Columns(s)
	if err != nil {
		return nil, err
	}
	return &Pending{S: s, fields: fields, form: form, answer: answer, options: options}, nil
}

// Record keeps s (State sending, at s.At) and its first state change in
// one transaction, committed before it returns. A command id already
// recorded is store.ErrDuplicate; a second live submission for s's
// request is store.ErrLive.
func (a *Answers) Record(s inbox.Submission) error {
	p, err := NewPending(s)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx()
	defer cancel()
	return a.Health.Wrote("record", a.recordOne(ctx, p))
}

func (a *Answers) recordOne(ctx context.Context, p *Pending) error {
	tx, err := a.Synced.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	res, err := a.Insert(ctx, tx, []*Pending{p})
	if err != nil {
		return err
	}
	if res[0] != nil {
		return res[0] // a refused statement may have ended the transaction (PostgreSQL)
	}
	return tx.Commit()
}

// The statements of a post's Record (Insert) and its states (Settle),
// prepared once (DB.prepared).
const (
	insertSubmission = `INSERT INTO submissions
		(command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, search_version, posted_at, state, reason, detail, settled_at, command, kind, options, capture, lease_owner, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (command_id) DO NOTHING RETURNING seq`
	insertState = `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`
	// settleSubmission is Settle's: an answer the operator replaced
	// ("Answer differently") leaves the one-live-answer rule for good
	// (its late ack may settle it beside the replacement); one put back
	// on its way (the replacement was not kept) rejoins it.
	settleSubmission = `UPDATE submissions SET state = ?, reason = ?, detail = ?, settled_at = ?,
		replaced = CASE WHEN ? = ? THEN 1 WHEN ? IN (?, ?) THEN 0 ELSE replaced END
		WHERE command_id = ? RETURNING seq`
)

// Insert inserts rows in tx, a transaction of the Synced pool. It
// returns each row's own result (nil, store.ErrDuplicate, or
// store.ErrLive: a statement refused by a unique index), or the error
// that ends the transaction. On PostgreSQL a
// refused statement aborts the transaction: give it one row.
func (a *Answers) Insert(ctx context.Context, tx *sql.Tx, rows []*Pending) ([]error, error) {
	insert, err := a.prepared(ctx, tx, a.Synced, insertSubmission)
	if err != nil {
		return nil, err
	}
	addState, err := a.prepared(ctx, tx, a.Synced, insertState)
	if err != nil {
		return nil, err
	}
	results := make([]error, len(rows))
	for i, row := range rows {
		s := row.S
		var seq int64
		err := insert.QueryRowContext(ctx,
			s.CommandID, string(s.Card), s.Token, s.Key.Source, s.Key.Session, s.Key.RequestID, s.Agent, s.Question,
			row.fields, s.By, row.form, row.answer, store.SearchText(s), store.SearchVersion, store.Nanos(s.At),
			string(s.State), s.Reason, s.Detail, store.Nanos(s.SettledAt), command(s.Command),
			s.Kind, row.options, s.Capture.String(), a.LeaseOwner, store.Nanos(s.At.Add(a.Lease))).Scan(&seq)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			results[i] = store.ErrDuplicate
			continue
		case a.Dialect.IsLive(err):
			results[i] = fmt.Errorf("journal: record %s: %w", s.CommandID, store.ErrLive)
			continue
		case err != nil:
			return nil, err
		}
		if _, err := addState.ExecContext(ctx, seq, string(s.State), s.Reason, s.Detail, store.Nanos(s.At)); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// Settle keeps the new state of command commandID at time at, and the
// change itself; an unknown command is ignored. Moving one back to
// sending while another submission for its request is live is
// store.ErrLive. A storage fault (the disk full, the server down)
// keeps the change, to be written in order once the database takes
// writes again (store.Health), and is returned.
func (a *Answers) Settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	return a.Health.Change("settle", func() error { return a.settle(commandID, state, reason, detail, at) })
}

func (a *Answers) settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	settled := store.Nanos(at)
	if state == inbox.SubmissionSending || state == inbox.SubmissionQueued {
		settled = 0
	}
	defer a.lockWrites()() // after the Records in progress
	ctx, cancel := a.ctx()
	defer cancel()
	tx, err := a.Lazy.BeginTx(ctx, nil) // no sync of its own where Lazy is unsynced
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var seq int64
	update, err := a.prepared(ctx, tx, a.Lazy, settleSubmission)
	if err != nil {
		return err
	}
	err = update.QueryRowContext(ctx,
		string(state), reason, detail, settled, reason, inbox.ReasonReplaced,
		string(state), string(inbox.SubmissionQueued), string(inbox.SubmissionSending), commandID).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case a.Dialect.IsLive(err):
		return fmt.Errorf("journal: settle %s: %w", commandID, store.ErrLive)
	case err != nil:
		return err
	}
	addState, err := a.prepared(ctx, tx, a.Lazy, insertState)
	if err != nil {
		return err
	}
	if _, err := addState.ExecContext(ctx, seq, string(state), reason, detail, store.Nanos(at)); err != nil {
		return err
	}
	return tx.Commit()
}

// Unsettled lists the submissions whose command still waits for the
// agent (queued, sending, or accepted with nothing recorded yet), oldest
// first.
func (a *Answers) Unsettled() ([]inbox.Submission, error) {
	ctx, cancel := a.ctx()
	defer cancel()
	out, err := a.list(ctx, `WHERE state IN (?, ?, ?) AND recorded_at = 0 ORDER BY posted_at, seq`, 0,
		string(inbox.SubmissionQueued), string(inbox.SubmissionSending), string(inbox.SubmissionAccepted))
	if err != nil {
		return nil, fmt.Errorf("journal: unsettled: %w", err)
	}
	return out, nil
}

// Lookup returns the submission of command commandID in its latest
// state, and whether the journal holds it (command ids are unique: one
// indexed read).
func (a *Answers) Lookup(commandID string) (inbox.Submission, bool, error) {
	ctx, cancel := a.ctx()
	defer cancel()
	out, err := a.list(ctx, `WHERE command_id = ?`, 1, commandID)
	if err != nil || len(out) == 0 {
		if err != nil {
			err = fmt.Errorf("journal: lookup: %w", err)
		}
		return inbox.Submission{}, false, err
	}
	return out[0], true, nil
}

// KeepRecorded keeps what the agent recorded for command commandID, seen
// at time at: the submission is settled for good (Unsettled no longer
// lists it). An unknown command is ignored. A storage fault keeps it to
// be written later, as Settle's.
func (a *Answers) KeepRecorded(commandID string, r inbox.Recorded, at time.Time) error {
	raw, err := store.EncodeRecorded(r)
	if err != nil {
		return err
	}
	if at.IsZero() {
		at = time.Unix(0, 1) // recorded_at 0 means "nothing recorded"
	}
	return a.Health.Change("recorded", func() error {
		defer a.lockWrites()()
		ctx, cancel := a.ctx()
		defer cancel()
		_, err := a.Lazy.ExecContext(ctx, a.Q(`UPDATE submissions SET recorded = ?, recorded_at = ? WHERE command_id = ?`),
			raw, at.UnixNano(), commandID)
		return err
	})
}

// Recent lists the latest n submissions the agent recorded, newest
// posted first, at most one per card.
func (a *Answers) Recent(n int) ([]inbox.Submission, error) {
	if n <= 0 {
		return nil, nil
	}
	ctx, cancel := a.ctx()
	defer cancel()
	rows, err := a.Synced.QueryContext(ctx, `SELECT `+submissionColumns+` FROM submissions
		WHERE recorded_at != 0 ORDER BY posted_at DESC, seq DESC`)
	if err != nil {
		return nil, fmt.Errorf("journal: recent: %w", err)
	}
	defer rows.Close()
	var out []inbox.Submission
	cards := make(map[inbox.CardID]bool)
	for len(out) < n && rows.Next() {
		s, _, err := scanSubmission(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: recent: %w", err)
		}
		if cards[s.Card] {
			continue // an older answer to the same card
		}
		cards[s.Card] = true
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: recent: %w", err)
	}
	return out, nil
}

// Prune removes the submissions posted before before, with their state
// changes (ON DELETE CASCADE), and returns how many it removed.
func (a *Answers) Prune(ctx context.Context, before time.Time) (int64, error) {
	res, err := a.Synced.ExecContext(ctx, a.Q(`DELETE FROM submissions WHERE posted_at < ?`), before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("journal: prune: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("journal: prune: %w", err)
	}
	// A question's routing history, claim and assignment are kept as
	// long as its answers: they go once it has none left and they are
	// as old as those pruned.
	if err := a.pruneCards(ctx, before); err != nil {
		return n, err
	}
	// The rules' uses are kept as long as the answers they sent.
	if _, err := a.Synced.ExecContext(ctx, a.Q(`DELETE FROM rule_uses WHERE at < ?`), before.UnixNano()); err != nil {
		return n, fmt.Errorf("journal: prune rule uses: %w", err)
	}
	// A deleted rule is kept only while History shows an answer it sent
	// (to name the rule there): then it goes, so deleted rules do not
	// pile up.
	const gone = `SELECT id FROM rules WHERE state = ? AND state_at < ?
		AND NOT EXISTS (SELECT 1 FROM submissions s WHERE s.operator = 'rule:' || rules.id)`
	if _, err := a.Synced.ExecContext(ctx, a.Q(`DELETE FROM rule_changes WHERE rule_id IN (`+gone+`)`),
		store.RuleDeleted, before.UnixNano()); err != nil {
		return n, fmt.Errorf("journal: prune deleted rules' changes: %w", err)
	}
	if _, err := a.Synced.ExecContext(ctx, a.Q(`DELETE FROM rules WHERE id IN (`+gone+`)`),
		store.RuleDeleted, before.UnixNano()); err != nil {
		return n, fmt.Errorf("journal: prune deleted rules: %w", err)
	}
	return n, nil
}

// KeepLiveCards has Prune keep the routing history and the marks of the
// cards live reports (those this process still shows: a question open
// longer than the retention keeps its steps, claim and assignment).
func (a *Answers) KeepLiveCards(live func(card string) bool) { a.live.Store(&live) }

// pruneCards removes the routing history and the marks (claim and
// assignment) of the cards with no answer left in History, written
// before before, but those KeepLiveCards keeps.
func (a *Answers) pruneCards(ctx context.Context, before time.Time) error {
	const unanswered = ` AND NOT EXISTS (SELECT 1 FROM submissions s WHERE s.card_id = %s.card_id)`
	b := before.UnixNano()
	// A card's history goes whole, once its latest step is that old.
	if err := a.pruneCardsOf(ctx, "routing_steps", "at < ?", []any{b},
		`SELECT card_id FROM routing_steps GROUP BY card_id HAVING max(at) < ?`+fmt.Sprintf(unanswered, "routing_steps"), b); err != nil {
		return fmt.Errorf("journal: prune routing history: %w", err)
	}
	const old = "claimed_at < ? AND claim_until < ? AND assigned_at < ?"
	if err := a.pruneCardsOf(ctx, "card_marks", old, []any{b, b, b},
		`SELECT card_id FROM card_marks WHERE `+old+fmt.Sprintf(unanswered, "card_marks"), b, b, b); err != nil {
		return fmt.Errorf("journal: prune claims and assignments: %w", err)
	}
	return nil
}

// pruneCardsOf deletes from table the rows (still where, with whereArgs:
// a row written since the query stays) of the cards query selects, but
// the live ones, some hundred cards a statement.
func (a *Answers) pruneCardsOf(ctx context.Context, table, where string, whereArgs []any, query string, args ...any) error {
	rows, err := a.Synced.QueryContext(ctx, a.Q(query), args...)
	if err != nil {
		return err
	}
	var gone []any
	live := func(string) bool { return false }
	if f := a.live.Load(); f != nil {
		live = *f
	}
	for rows.Next() {
		var card string
		if err := rows.Scan(&card); err != nil {
			rows.Close()
			return err
		}
		if !live(card) {
			gone = append(gone, card)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	const batch = 500
	for len(gone) > 0 {
		n := min(len(gone), batch)
		del := append(append([]any{}, whereArgs...), gone[:n]...)
		if _, err := a.Synced.ExecContext(ctx, a.Q(`DELETE FROM `+table+` WHERE `+where+` AND card_id IN (?`+strings.Repeat(", ?", n-1)+`)`), del...); err != nil {
			return err
		}
		gone = gone[n:]
	}
	return nil
}

// list reads the submissions that where (a WHERE clause and its order,
// with ? placeholders for args) selects, at most limit (0: all).
func (a *Answers) list(ctx context.Context, where string, limit int, args ...any) ([]inbox.Submission, error) {
	rows, err := a.Synced.QueryContext(ctx, a.Q(`SELECT `+submissionColumns+` FROM submissions `+where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []inbox.Submission
	for (limit == 0 || len(out) < limit) && rows.Next() {
		s, _, err := scanSubmission(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// submissionColumns are what scanSubmission reads, in its order.
const submissionColumns = `seq, command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, posted_at, state, reason, detail, settled_at, command, kind, options, capture, recorded, recorded_at`

// scanSubmission reads one row of submissionColumns.
func scanSubmission(rows *sql.Rows) (inbox.Submission, int64, error) {
	var (
		s   inbox.Submission
		r   store.Row
		seq int64
	)
	if err := rows.Scan(&seq, &s.CommandID, &r.Card, &s.Token, &s.Key.Source, &s.Key.Session, &s.Key.RequestID, &s.Agent, &s.Question,
		&r.Fields, &s.By, &r.Form, &r.Answer, &r.Posted, &r.State, &s.Reason, &s.Detail, &r.Settled, &s.Command,
		&s.Kind, &r.Options, &r.Capture, &r.Recorded, &r.RecAt); err != nil {
		return s, 0, err
	}
	s, err := r.Submission(s)
	return s, seq, err
}

// command is a submission's command bytes as stored: never NULL.
func command(raw []byte) []byte {
	if raw == nil {
		return []byte{}
	}
	return raw
}
