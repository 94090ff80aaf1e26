package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
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
func (j *Journal) Record(s inbox.Submission) error {
	fields, err := json.Marshal(s.Fields)
	if err != nil {
		return fmt.Errorf("journal: fields: %w", err)
	}
	form, err := json.Marshal(map[string][]string(s.Form))
	if err != nil {
		return fmt.Errorf("journal: form: %w", err)
	}
	answer, err := json.Marshal(s.Answer)
	if err != nil {
		return fmt.Errorf("journal: answer: %w", err)
	}
	options := ""
	if len(s.Options) > 0 {
		raw, err := json.Marshal(s.Options)
		if err != nil {
			return fmt.Errorf("journal: options: %w", err)
		}
		options = string(raw)
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
		string(fields), s.By, string(form), string(answer), journal.SearchText(s), nanos(s.At),
		string(s.State), s.Reason, s.Detail, nanos(s.SettledAt), command(s.Command),
		s.Kind, options, s.Capture.String()).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrDuplicate
	}
	if err != nil {
		return fmt.Errorf("journal: record: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES (?, ?, ?, ?, ?)`,
		seq, string(s.State), s.Reason, s.Detail, nanos(s.At)); err != nil {
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
	settled := nanos(at)
	if state == inbox.SubmissionSending {
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
// agent (sending, or accepted with nothing recorded yet), oldest first.
func (j *Journal) Unsettled() ([]inbox.Submission, error) {
	rows, err := j.db.QueryContext(context.Background(), `SELECT `+submissionColumns+` FROM submissions
		WHERE state IN (?, ?) AND recorded_at = 0 ORDER BY posted_at, seq`, string(inbox.SubmissionSending), string(inbox.SubmissionAccepted))
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
	raw, err := json.Marshal(recordedJSON{
		Answer: r.Answer, By: r.By, Via: r.Via, Capture: r.Capture.String(), EventID: r.EventID,
		Time: r.Time, Cause: r.Cause, Malformed: r.Malformed,
	})
	if err != nil {
		return fmt.Errorf("journal: recorded: %w", err)
	}
	if at.IsZero() {
		at = time.Unix(0, 1) // recorded_at 0 means "nothing recorded"
	}
	if _, err := j.db.ExecContext(context.Background(), `UPDATE submissions SET recorded = ?, recorded_at = ? WHERE command_id = ?`,
		string(raw), at.UnixNano(), commandID); err != nil {
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

// recordedJSON is how the recorded column keeps an inbox.Recorded: the
// capture level by its wire name, so the column reads without this code.
type recordedJSON struct {
	Answer    aep.Answer `json:"answer"`
	By        string     `json:"by,omitempty"`
	Via       string     `json:"via,omitempty"`
	Capture   string     `json:"capture"`
	EventID   string     `json:"event_id,omitempty"`
	Time      string     `json:"time,omitempty"`
	Cause     string     `json:"cause,omitempty"`
	Malformed string     `json:"malformed,omitempty"`
}

// submissionColumns are what scanSubmission reads, in its order.
const submissionColumns = `seq, command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, posted_at, state, reason, detail, settled_at, command, kind, options, capture, recorded, recorded_at`

// scanSubmission reads one row of submissionColumns.
func scanSubmission(rows *sql.Rows) (inbox.Submission, int64, error) {
	var (
		s                           inbox.Submission
		seq, posted, settled, recAt int64
		card, state                 string
		fields, form, answer        string
		options, capture, recorded  string
	)
	if err := rows.Scan(&seq, &s.CommandID, &card, &s.Token, &s.Key.Source, &s.Key.Session, &s.Key.RequestID, &s.Agent, &s.Question,
		&fields, &s.By, &form, &answer, &posted, &state, &s.Reason, &s.Detail, &settled, &s.Command,
		&s.Kind, &options, &capture, &recorded, &recAt); err != nil {
		return s, 0, err
	}
	if options != "" {
		if err := json.Unmarshal([]byte(options), &s.Options); err != nil {
			return s, 0, fmt.Errorf("options of %s: %w", s.CommandID, err)
		}
	}
	s.Capture = aep.CaptureFull // before migration 4 the level was not kept: the journal held the full answer
	if capture != "" {
		c, err := aep.ParseCapture(capture)
		if err != nil {
			return s, 0, fmt.Errorf("capture of %s: %w", s.CommandID, err)
		}
		s.Capture = c
	}
	if recorded != "" {
		r, err := decodeRecorded(recorded)
		if err != nil {
			return s, 0, fmt.Errorf("recorded of %s: %w", s.CommandID, err)
		}
		s.Recorded, s.RecordedAt = &r, fromNanos(recAt)
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

// decodeRecorded reads the recorded column.
func decodeRecorded(raw string) (inbox.Recorded, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // values as aep decodes them
	var rj recordedJSON
	if err := dec.Decode(&rj); err != nil {
		return inbox.Recorded{}, err
	}
	c, err := aep.ParseCapture(rj.Capture)
	if err != nil {
		return inbox.Recorded{}, err
	}
	return inbox.Recorded{Answer: rj.Answer, By: rj.By, Via: rj.Via, Capture: c, EventID: rj.EventID,
		Time: rj.Time, Cause: rj.Cause, Malformed: rj.Malformed}, nil
}
