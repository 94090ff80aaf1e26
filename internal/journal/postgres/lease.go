package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aepforms/aepforms/internal/inbox"
)

var (
	_ inbox.Leases       = (*Journal)(nil)
	_ inbox.TokenJournal = (*Journal)(nil)
)

// LookupToken returns the latest submission posted on card with form
// token token, by any replica, and whether there is one.
func (j *Journal) LookupToken(card inbox.CardID, token string) (inbox.Submission, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT `+submissionColumns+` FROM submissions
		WHERE card_id = $1 AND token = $2 ORDER BY seq DESC LIMIT 1`, string(card), token)
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

// Claim takes the resend lease of command commandID for this replica
// until now plus Options.Lease, when it is this replica's already or has
// lapsed at now; it reports whether this replica holds it. One UPDATE:
// of two replicas claiming at once, the row lock lets one through and
// the other then finds the lease held.
func (j *Journal) Claim(commandID string, now time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	var seq int64
	err := j.pool.QueryRow(ctx, `UPDATE submissions SET lease_owner = $1, lease_until = $2
		WHERE command_id = $3 AND (lease_owner = $1 OR lease_until <= $4) RETURNING seq`,
		j.replica, now.Add(j.lease).UnixNano(), commandID, now.UnixNano()).Scan(&seq)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("journal: claim: %w", err)
	}
	return true, nil
}

// Renew extends every lease this replica holds on a live submission to
// now plus Options.Lease.
func (j *Journal) Renew(now time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	if _, err := j.pool.Exec(ctx, `UPDATE submissions SET lease_until = $1
		WHERE lease_owner = $2 AND state IN ($3, $4, $5) AND recorded_at = 0`,
		now.Add(j.lease).UnixNano(), j.replica,
		string(inbox.SubmissionQueued), string(inbox.SubmissionSending), string(inbox.SubmissionAccepted)); err != nil {
		return fmt.Errorf("journal: renew: %w", err)
	}
	return nil
}

// Lapsed lists the live submissions (as Unsettled) whose lease another
// replica held and let lapse by now, oldest first.
func (j *Journal) Lapsed(now time.Time) ([]inbox.Submission, error) {
	ctx, cancel := context.WithTimeout(context.Background(), j.write)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT `+submissionColumns+` FROM submissions
		WHERE state IN ($1, $2, $3) AND recorded_at = 0 AND lease_owner != $4 AND lease_until <= $5 ORDER BY posted_at, seq`,
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
