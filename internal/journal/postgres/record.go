package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal"
)

var _ inbox.Journal = (*Journal)(nil)

// Record keeps s (State sending, at s.At) and its first state change,
// committed before it returns. A command id already recorded is
// journal.ErrDuplicate; a second live submission for s's request, from
// this replica or another, is journal.ErrLive.
func (j *Journal) Record(s inbox.Submission) error {
	fields, form, answer, options, err := journal.Columns(s)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	err = pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		var seq int64
		err := tx.QueryRow(ctx, `INSERT INTO submissions
			(command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at, command, kind, options, capture, lease_owner, lease_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
			ON CONFLICT (command_id) DO NOTHING RETURNING seq`,
			s.CommandID, string(s.Card), s.Token, s.Key.Source, s.Key.Session, s.Key.RequestID, s.Agent, s.Question,
			fields, s.By, form, answer, journal.SearchText(s), journal.Nanos(s.At),
			string(s.State), s.Reason, s.Detail, journal.Nanos(s.SettledAt), command(s.Command),
			s.Kind, options, s.Capture.String(), j.replica, journal.Nanos(s.At.Add(j.lease))).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return journal.ErrDuplicate
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO submission_states (submission, state, reason, detail, at) VALUES ($1, $2, $3, $4, $5)`,
			seq, string(s.State), s.Reason, s.Detail, journal.Nanos(s.At))
		return err
	})
	switch {
	case errors.Is(err, journal.ErrDuplicate):
		return err
	case isLive(err):
		return fmt.Errorf("journal: record %s: %w", s.CommandID, journal.ErrLive)
	}
	return j.health.Wrote("record", err)
}

// Settle keeps the new state of command commandID at time at, and the
// change itself; an unknown command is ignored. Moving one back to
// sending while another submission for its request is live is
// journal.ErrLive.
//
// A storage fault (the server down) keeps the change, to be written in
// order once the database takes writes again (journal.Health), and is
// returned.
func (j *Journal) Settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	return j.health.Change("settle", func() error { return j.settle(commandID, state, reason, detail, at) })
}

func (j *Journal) settle(commandID string, state inbox.SubmissionState, reason, detail string, at time.Time) error {
	settled := journal.Nanos(at)
	if state == inbox.SubmissionSending || state == inbox.SubmissionQueued {
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
			seq, string(state), reason, detail, journal.Nanos(at))
		return err
	})
	switch {
	case isLive(err):
		return fmt.Errorf("journal: settle %s: %w", commandID, journal.ErrLive)
	case err != nil:
		return err
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
// agent (queued, sending, or accepted with nothing recorded yet), oldest
// first.
func (j *Journal) Unsettled() ([]inbox.Submission, error) {
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT `+submissionColumns+` FROM submissions
		WHERE state IN ($1, $2, $3) AND recorded_at = 0 ORDER BY posted_at, seq`,
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

// submissionColumns are what scanSubmission reads, in its order.
const submissionColumns = `seq, command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, posted_at, state, reason, detail, settled_at, command, kind, options, capture, recorded, recorded_at`

// scanSubmission reads one row of submissionColumns.
func scanSubmission(rows pgx.Rows) (inbox.Submission, int64, error) {
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

// Lookup returns the submission of command commandID in its latest
// state, and whether the journal holds it.
func (j *Journal) Lookup(commandID string) (inbox.Submission, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT `+submissionColumns+` FROM submissions WHERE command_id = $1`, commandID)
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
// lists it). An unknown command is ignored. A storage fault keeps it to
// be written later, as Settle's.
func (j *Journal) KeepRecorded(commandID string, r inbox.Recorded, at time.Time) error {
	raw, err := journal.EncodeRecorded(r)
	if err != nil {
		return err
	}
	if at.IsZero() {
		at = time.Unix(0, 1) // recorded_at 0 means "nothing recorded"
	}
	return j.health.Change("recorded", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), j.write)
		defer cancel()
		_, err := j.pool.Exec(ctx, `UPDATE submissions SET recorded = $1, recorded_at = $2 WHERE command_id = $3`,
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
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT `+submissionColumns+` FROM submissions
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

// command is a submission's command bytes as stored: never NULL.
func command(raw []byte) []byte {
	if raw == nil {
		return []byte{}
	}
	return raw
}
