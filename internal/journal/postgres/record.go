package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal"
)

var _ inbox.Journal = (*Journal)(nil)

// Record keeps s (State sending, at s.At) and its first state change,
// committed before it returns. A command id already recorded is
// journal.ErrDuplicate; a second live submission for s's request, from
// this replica or another, is journal.ErrLive.
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
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	err = pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		var seq int64
		err := tx.QueryRow(ctx, `INSERT INTO submissions
			(command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at, command)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
			ON CONFLICT (command_id) DO NOTHING RETURNING seq`,
			s.CommandID, string(s.Card), s.Token, s.Key.Source, s.Key.Session, s.Key.RequestID, s.Agent, s.Question,
			string(fields), s.By, string(form), string(answer), journal.SearchText(s), nanos(s.At),
			string(s.State), s.Reason, s.Detail, nanos(s.SettledAt), command(s.Command)).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return journal.ErrDuplicate
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES ($1, $2, $3, $4, $5)`,
			seq, string(s.State), s.Reason, s.Detail, nanos(s.At))
		return err
	})
	switch {
	case errors.Is(err, journal.ErrDuplicate):
		return err
	case isLive(err):
		return fmt.Errorf("journal: record %s: %w", s.CommandID, journal.ErrLive)
	case err != nil:
		return fmt.Errorf("journal: record: %w", err)
	}
	return nil
}

// Settle keeps the new state of command commandID at time at, and the
// change itself; an unknown command is ignored. Moving one back to
// sending while another submission for its request is live is
// journal.ErrLive.
func (j *Journal) Settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	settled := nanos(at)
	if state == inbox.SubmissionSending {
		settled = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	err := pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		var seq int64
		err := tx.QueryRow(ctx, `UPDATE submissions SET state = $1, reason = $2, detail = $3, settled_at = $4 WHERE command_id = $5 RETURNING seq`,
			string(state), reason, detail, settled, commandID).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES ($1, $2, $3, $4, $5)`,
			seq, string(state), reason, detail, nanos(at))
		return err
	})
	switch {
	case isLive(err):
		return fmt.Errorf("journal: settle %s: %w", commandID, journal.ErrLive)
	case err != nil:
		return fmt.Errorf("journal: settle: %w", err)
	}
	return nil
}

// isLive reports the refusal of submissions_live, the one live
// submission per request.
func isLive(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "submissions_live"
}

// Unsettled lists the submissions whose command still waits for the
// agent (sending or accepted), oldest first.
func (j *Journal) Unsettled() ([]inbox.Submission, error) {
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT `+submissionColumns+` FROM submissions
		WHERE state IN ($1, $2) ORDER BY posted_at, seq`, string(inbox.SubmissionSending), string(inbox.SubmissionAccepted))
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
func scanSubmission(rows pgx.Rows) (inbox.Submission, int64, error) {
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
