package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal"
)

var _ inbox.Journal = (*Journal)(nil)

// ErrDuplicate is Record's refusal of a command id already recorded
// (journal.ErrDuplicate, the same for every backend).
var ErrDuplicate = journal.ErrDuplicate

// Record keeps s (State sending, at s.At) and its first state change,
// committed (fsynced) before it returns.
func (j *Journal) Record(s inbox.Submission) error {
	fields, form, answer, options, err := journal.Columns(s)
	if err != nil {
		return err
	}
	ctx := context.Background()
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var seq int64
	err = tx.QueryRowContext(ctx, `INSERT INTO submissions
		(command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at, command, kind, options, capture)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (command_id) DO NOTHING RETURNING seq`,
		s.CommandID, string(s.Card), s.Token, s.Key.Source, s.Key.Session, s.Key.RequestID, s.Agent, s.Question,
		fields, s.By, form, answer, journal.SearchText(s), journal.Nanos(s.At),
		string(s.State), s.Reason, s.Detail, journal.Nanos(s.SettledAt), command(s.Command),
		s.Kind, options, s.Capture.String()).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrDuplicate
	}
	if isUnique(err) {
		return fmt.Errorf("journal: record %s: %w", s.CommandID, journal.ErrLive)
	}
	if err != nil {
		return fmt.Errorf("journal: record: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`,
		seq, string(s.State), s.Reason, s.Detail, journal.Nanos(s.At)); err != nil {
		return fmt.Errorf("journal: record: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("journal: record: %w", err)
	}
	return nil
}

// Settle keeps the new state of command commandID at time at, and the
// change itself; an unknown command is ignored.
func (j *Journal) Settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	settled := journal.Nanos(at)
	if state == inbox.SubmissionSending || state == inbox.SubmissionQueued {
		settled = 0
	}
	ctx := context.Background()
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var seq int64
	err = tx.QueryRowContext(ctx, `UPDATE submissions SET state = ?, reason = ?, detail = ?, settled_at = ? WHERE command_id = ? RETURNING seq`,
		string(state), reason, detail, settled, commandID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if isUnique(err) {
		return fmt.Errorf("journal: settle %s: %w", commandID, journal.ErrLive)
	}
	if err != nil {
		return fmt.Errorf("journal: settle: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`,
		seq, string(state), reason, detail, journal.Nanos(at)); err != nil {
		return fmt.Errorf("journal: settle: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("journal: settle: %w", err)
	}
	return nil
}

// Unsettled lists the submissions whose command still waits for the
// agent (queued, sending, or accepted with nothing recorded yet), oldest
// first.
func (j *Journal) Unsettled() ([]inbox.Submission, error) {
	rows, err := j.db.QueryContext(context.Background(), `SELECT `+submissionColumns+` FROM submissions
		WHERE state IN (?, ?, ?) AND recorded_at = 0 ORDER BY posted_at, seq`,
		string(inbox.SubmissionQueued), string(inbox.SubmissionSending), string(inbox.SubmissionAccepted))
	if err != nil {
		return nil, fmt.Errorf("journal: unsettled: %w", err)
	}
	defer rows.Close()
	var out []inbox.Submission
	for rows.Next() {
		s, _, err := scanSubmission(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: unsettled: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: unsettled: %w", err)
	}
	return out, nil
}

// Lookup returns the submission of command commandID in its latest
// state, and whether the journal holds it (command ids are unique: one
// indexed read).
func (j *Journal) Lookup(commandID string) (inbox.Submission, bool, error) {
	rows, err := j.db.QueryContext(context.Background(), `SELECT `+submissionColumns+` FROM submissions
		WHERE command_id = ?`, commandID)
	if err != nil {
		return inbox.Submission{}, false, fmt.Errorf("journal: lookup: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return inbox.Submission{}, false, fmt.Errorf("journal: lookup: %w", err)
		}
		return inbox.Submission{}, false, nil
	}
	s, _, err := scanSubmission(rows)
	if err != nil {
		return inbox.Submission{}, false, fmt.Errorf("journal: lookup: %w", err)
	}
	return s, true, nil
}

// KeepRecorded keeps what the agent recorded for command commandID, seen
// at time at: the submission is settled for good (Unsettled no longer
// lists it). An unknown command is ignored.
func (j *Journal) KeepRecorded(commandID string, r inbox.Recorded, at time.Time) error {
	raw, err := journal.EncodeRecorded(r)
	if err != nil {
		return err
	}
	if at.IsZero() {
		at = time.Unix(0, 1) // recorded_at 0 means "nothing recorded"
	}
	if _, err := j.db.ExecContext(context.Background(), `UPDATE submissions SET recorded = ?, recorded_at = ? WHERE command_id = ?`,
		raw, at.UnixNano(), commandID); err != nil {
		return fmt.Errorf("journal: recorded: %w", err)
	}
	return nil
}

// Recent lists the latest n submissions the agent recorded, newest
// posted first, at most one per card.
func (j *Journal) Recent(n int) ([]inbox.Submission, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := j.db.QueryContext(context.Background(), `SELECT `+submissionColumns+` FROM submissions
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

// isUnique reports a unique index's refusal: on submissions, with the
// command id's conflict taken by ON CONFLICT, only submissions_live's.
func isUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// submissionColumns are what scanSubmission reads, in its order.
const submissionColumns = `seq, command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, posted_at, state, reason, detail, settled_at, command, kind, options, capture, recorded, recorded_at`

// scanSubmission reads one row of submissionColumns.
func scanSubmission(rows *sql.Rows) (inbox.Submission, int64, error) {
	var (
		s   inbox.Submission
		r   journal.Row
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
