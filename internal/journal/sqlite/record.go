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
//
// Records that arrive while another commit is in progress are committed
// together in the next transaction, with one sync for all of them (a
// group commit): the inbox calls Record outside its lock, so several
// operators' posts can be waiting at once, and each then waits for at
// most the commit in progress and its own, not for a queue of syncs.
// A duplicate command id fails only its own Record (ErrDuplicate).
func (j *Journal) Record(s inbox.Submission) error {
	row, err := newRecordRow(s)
	if err != nil {
		return err
	}
	j.recordMu.Lock()
	j.recordQueue = append(j.recordQueue, row)
	j.recordMu.Unlock()

	j.writeMu.Lock()
	j.recordMu.Lock()
	batch := j.recordQueue
	j.recordQueue = nil
	j.recordMu.Unlock()
	if len(batch) > 0 { // otherwise an earlier holder committed ours
		j.commitRecords(batch)
	}
	j.writeMu.Unlock()
	return j.health.Wrote("record", <-row.done)
}

// recordRow is one Record waiting to be committed: its values, encoded,
// and where its result goes.
type recordRow struct {
	s                             inbox.Submission
	fields, form, answer, options string
	done                          chan error // buffered: one result
}

func newRecordRow(s inbox.Submission) (*recordRow, error) {
	fields, form, answer, options, err := journal.Columns(s)
	if err != nil {
		return nil, err
	}
	return &recordRow{s: s, fields: fields, form: form, answer: answer, options: options, done: make(chan error, 1)}, nil
}

// commitRecords commits batch in one transaction and tells each row its
// result. If that transaction fails, each row is tried in a transaction
// of its own, so one bad row cannot refuse the others' posts. The caller
// holds writeMu.
func (j *Journal) commitRecords(batch []*recordRow) {
	results, err := j.insertRecords(batch)
	if err == nil {
		for i, row := range batch {
			row.done <- results[i]
		}
		return
	}
	if len(batch) == 1 {
		batch[0].done <- err
		return
	}
	for _, row := range batch {
		res, err := j.insertRecords([]*recordRow{row})
		if err == nil {
			err = res[0]
		}
		row.done <- err
	}
}

// insertRecords inserts rows in one transaction. It returns each row's
// own result (nil, ErrDuplicate, or journal.ErrLive: a statement refused
// by a unique index is undone alone, the transaction goes on) once
// committed, or the error that rolled the transaction back.
func (j *Journal) insertRecords(rows []*recordRow) ([]error, error) {
	ctx := context.Background()
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	results := make([]error, len(rows))
	for i, row := range rows {
		s := row.s
		var seq int64
		err = tx.QueryRowContext(ctx, `INSERT INTO submissions
			(command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at, command, kind, options, capture, lease_owner, lease_until)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (command_id) DO NOTHING RETURNING seq`,
			s.CommandID, string(s.Card), s.Token, s.Key.Source, s.Key.Session, s.Key.RequestID, s.Agent, s.Question,
			row.fields, s.By, row.form, row.answer, journal.SearchText(s), journal.Nanos(s.At),
			string(s.State), s.Reason, s.Detail, journal.Nanos(s.SettledAt), command(s.Command),
			s.Kind, row.options, s.Capture.String(), j.replica, journal.Nanos(s.At.Add(j.lease))).Scan(&seq)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			results[i] = ErrDuplicate
			continue
		case isUnique(err):
			results[i] = fmt.Errorf("journal: record %s: %w", s.CommandID, journal.ErrLive)
			continue
		case err != nil:
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`,
			seq, string(s.State), s.Reason, s.Detail, journal.Nanos(s.At)); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return results, nil
}

// Settle keeps the new state of command commandID at time at, and the
// change itself; an unknown command is ignored.
//
// A storage fault (the disk full) keeps the change, to be written in
// order once the journal takes writes again (journal.Health), and is
// returned.
func (j *Journal) Settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	return j.health.Change("settle", func() error { return j.settle(commandID, state, reason, detail, at) })
}

func (j *Journal) settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	settled := journal.Nanos(at)
	if state == inbox.SubmissionSending || state == inbox.SubmissionQueued {
		settled = 0
	}
	j.writeMu.Lock() // after the Records in progress, without contending for SQLite's lock
	defer j.writeMu.Unlock()
	ctx := context.Background()
	tx, err := j.lazy.BeginTx(ctx, nil) // no sync of its own (lazy)
	if err != nil {
		return err
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
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`,
		seq, string(state), reason, detail, journal.Nanos(at)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
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
// A storage fault keeps it to be written later, as Settle's.
func (j *Journal) KeepRecorded(commandID string, r inbox.Recorded, at time.Time) error {
	raw, err := journal.EncodeRecorded(r)
	if err != nil {
		return err
	}
	if at.IsZero() {
		at = time.Unix(0, 1) // recorded_at 0 means "nothing recorded"
	}
	return j.health.Change("recorded", func() error {
		j.writeMu.Lock() // after the Records in progress, as Settle
		defer j.writeMu.Unlock()
		_, err := j.lazy.ExecContext(context.Background(), `UPDATE submissions SET recorded = ?, recorded_at = ? WHERE command_id = ?`,
			raw, at.UnixNano(), commandID)
		return err
	})
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
