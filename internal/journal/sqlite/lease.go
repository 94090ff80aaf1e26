package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

var (
	_ inbox.Leases       = (*Journal)(nil)
	_ inbox.TokenJournal = (*Journal)(nil)
)

// LookupToken returns the latest submission posted on card with form
// token token, and whether there is one.
func (j *Journal) LookupToken(card inbox.CardID, token string) (inbox.Submission, bool, error) {
	rows, err := j.db.QueryContext(context.Background(), `SELECT `+submissionColumns+` FROM submissions
		WHERE card_id = ? AND token = ? ORDER BY seq DESC LIMIT 1`, string(card), token)
	if err != nil {
		return inbox.Submission{}, false, fmt.Errorf("journal: lookup token: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return inbox.Submission{}, false, rows.Err()
	}
	s, _, err := scanSubmission(rows)
	if err != nil {
		return inbox.Submission{}, false, fmt.Errorf("journal: lookup token: %w", err)
	}
	return s, true, nil
}

// Claim takes the resend lease of command commandID for this journal's
// replica until now plus Options.Lease, when it is this replica's
// already or has lapsed at now; it reports whether this replica holds
// it.
func (j *Journal) Claim(commandID string, now time.Time) (bool, error) {
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	var seq int64
	err := j.db.QueryRowContext(context.Background(), `UPDATE submissions SET lease_owner = ?, lease_until = ?
		WHERE command_id = ? AND (lease_owner = ? OR lease_until <= ?) RETURNING seq`,
		j.replica, now.Add(j.lease).UnixNano(), commandID, j.replica, now.UnixNano()).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("journal: claim: %w", err)
	}
	return true, nil
}

// Renew extends every lease this replica holds on a live submission to
// now plus Options.Lease.
func (j *Journal) Renew(now time.Time) error {
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	if _, err := j.db.ExecContext(context.Background(), `UPDATE submissions SET lease_until = ?
		WHERE lease_owner = ? AND state IN (?, ?, ?) AND recorded_at = 0`,
		now.Add(j.lease).UnixNano(), j.replica,
		string(inbox.SubmissionQueued), string(inbox.SubmissionSending), string(inbox.SubmissionAccepted)); err != nil {
		return fmt.Errorf("journal: renew: %w", err)
	}
	return nil
}

// Lapsed lists the live submissions (as Unsettled) whose lease another
// replica held and let lapse by now, oldest first.
func (j *Journal) Lapsed(now time.Time) ([]inbox.Submission, error) {
	rows, err := j.db.QueryContext(context.Background(), `SELECT `+submissionColumns+` FROM submissions
		WHERE state IN (?, ?, ?) AND recorded_at = 0 AND lease_owner != ? AND lease_until <= ? ORDER BY posted_at, seq`,
		string(inbox.SubmissionQueued), string(inbox.SubmissionSending), string(inbox.SubmissionAccepted), j.replica, now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("journal: lapsed: %w", err)
	}
	defer rows.Close()
	var out []inbox.Submission
	for rows.Next() {
		s, _, err := scanSubmission(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: lapsed: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: lapsed: %w", err)
	}
	return out, nil
}

// Replica is the name this journal holds leases under.
func (j *Journal) Replica() string { return j.replica }
