package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal"
)

var _ inbox.Journal = (*Journal)(nil)

// ErrDuplicate is Record's refusal of a command id already recorded.
var ErrDuplicate = errors.New("journal: command id already recorded")

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
	return <-row.done
}

// recordRow is one Record waiting to be committed: its values, encoded,
// and where its result goes.
type recordRow struct {
	s                    inbox.Submission
	fields, form, answer string
	done                 chan error // buffered: one result
}

func newRecordRow(s inbox.Submission) (*recordRow, error) {
	fields, err := json.Marshal(s.Fields)
	if err != nil {
		return nil, fmt.Errorf("journal: fields: %w", err)
	}
	form, err := json.Marshal(map[string][]string(s.Form))
	if err != nil {
		return nil, fmt.Errorf("journal: form: %w", err)
	}
	answer, err := json.Marshal(s.Answer)
	if err != nil {
		return nil, fmt.Errorf("journal: answer: %w", err)
	}
	return &recordRow{s: s, fields: string(fields), form: string(form), answer: string(answer), done: make(chan error, 1)}, nil
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
// own result (nil or ErrDuplicate) once committed, or the error that
// rolled the transaction back.
func (j *Journal) insertRecords(rows []*recordRow) ([]error, error) {
	ctx := context.Background()
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	results := make([]error, len(rows))
	for i, row := range rows {
		s := row.s
		var seq int64
		err = tx.QueryRowContext(ctx, `INSERT INTO submissions
			(command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at, command)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (command_id) DO NOTHING RETURNING seq`,
			s.CommandID, string(s.Card), s.Token, s.Key.Source, s.Key.Session, s.Key.RequestID, s.Agent, s.Question,
			row.fields, s.By, row.form, row.answer, journal.SearchText(s), nanos(s.At),
			string(s.State), s.Reason, s.Detail, nanos(s.SettledAt), command(s.Command)).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			results[i] = ErrDuplicate
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("journal: record: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`,
			seq, string(s.State), s.Reason, s.Detail, nanos(s.At)); err != nil {
			return nil, fmt.Errorf("journal: record: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("journal: record: %w", err)
	}
	return results, nil
}

// Settle keeps the new state of command commandID at time at, and the
// change itself; an unknown command is ignored.
func (j *Journal) Settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	settled := nanos(at)
	if state == inbox.SubmissionSending {
		settled = 0
	}
	j.writeMu.Lock() // after the Records in progress, without contending for SQLite's lock
	defer j.writeMu.Unlock()
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
	if err != nil {
		return fmt.Errorf("journal: settle: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`,
		seq, string(state), reason, detail, nanos(at)); err != nil {
		return fmt.Errorf("journal: settle: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("journal: settle: %w", err)
	}
	return nil
}

// Unsettled lists the submissions whose command still waits for the
// agent (sending or accepted), oldest first.
func (j *Journal) Unsettled() ([]inbox.Submission, error) {
	rows, err := j.db.QueryContext(context.Background(), `SELECT `+submissionColumns+` FROM submissions
		WHERE state IN (?, ?) ORDER BY posted_at, seq`, string(inbox.SubmissionSending), string(inbox.SubmissionAccepted))
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

// submissionColumns are what scanSubmission reads, in its order.
const submissionColumns = `seq, command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, posted_at, state, reason, detail, settled_at, command`

// scanSubmission reads one row of submissionColumns.
func scanSubmission(rows *sql.Rows) (inbox.Submission, int64, error) {
	var (
		s                    inbox.Submission
		seq, posted, settled int64
		card, state          string
		fields, form, answer string
	)
	if err := rows.Scan(&seq, &s.CommandID, &card, &s.Token, &s.Key.Source, &s.Key.Session, &s.Key.RequestID, &s.Agent, &s.Question,
		&fields, &s.By, &form, &answer, &posted, &state, &s.Reason, &s.Detail, &settled, &s.Command); err != nil {
		return s, 0, err
	}
	s.Card, s.State = inbox.CardID(card), inbox.SubmissionState(state)
	if len(s.Command) == 0 {
		s.Command = nil
	}
	s.At, s.SettledAt = fromNanos(posted), fromNanos(settled)
	if err := json.Unmarshal([]byte(fields), &s.Fields); err != nil {
		return s, 0, fmt.Errorf("fields of %s: %w", s.CommandID, err)
	}
	var f map[string][]string
	if err := json.Unmarshal([]byte(form), &f); err != nil {
		return s, 0, fmt.Errorf("form of %s: %w", s.CommandID, err)
	}
	if f != nil {
		s.Form = url.Values(f)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(answer)))
	dec.UseNumber() // values decode as aep decodes them: numbers as json.Number
	var a aep.Answer
	if err := dec.Decode(&a); err != nil {
		return s, 0, fmt.Errorf("answer of %s: %w", s.CommandID, err)
	}
	s.Answer = a
	return s, seq, nil
}

// command is a submission's command bytes as stored: never NULL.
func command(raw []byte) []byte {
	if raw == nil {
		return []byte{}
	}
	return raw
}

// nanos is t in unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
