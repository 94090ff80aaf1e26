package sqldb

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// LookupToken returns the latest submission posted on card with form
// token token, by any replica, and whether there is one.
func (a *Answers) LookupToken(card inbox.CardID, token string) (inbox.Submission, bool, error) {
	ctx, cancel := a.ctx()
	defer cancel()
	out, err := a.list(ctx, `WHERE card_id = ? AND token = ? ORDER BY seq DESC LIMIT 1`, 1, string(card), token)
	if err != nil || len(out) == 0 {
		if err != nil {
			err = fmt.Errorf("journal: lookup token: %w", err)
		}
		return inbox.Submission{}, false, err
	}
	return out[0], true, nil
}

// Claim takes the resend lease of command commandID for this replica
// until now plus Lease, when it is this replica's already or has lapsed
// at now; it reports whether this replica holds it. One UPDATE: of two
// replicas claiming at once, the row lock lets one through and the other
// then finds the lease held.
func (a *Answers) Claim(commandID string, now time.Time) (bool, error) {
	held, err := a.claim(commandID, now)
	return held, a.Health.Wrote("claim", err) // not under WriteMu: Health's lock comes first
}

func (a *Answers) claim(commandID string, now time.Time) (bool, error) {
	defer a.lockWrites()()
	ctx, cancel := a.ctx()
	defer cancel()
	var seq int64
	err := a.Synced.QueryRowContext(ctx, a.Q(`UPDATE submissions SET lease_owner = ?, lease_until = ?
		WHERE command_id = ? AND (lease_owner = ? OR lease_until <= ?) RETURNING seq`),
		a.LeaseOwner, now.Add(a.Lease).UnixNano(), commandID, a.LeaseOwner, now.UnixNano()).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Renew extends every lease this replica holds on a live submission to
// now plus Lease.
func (a *Answers) Renew(now time.Time) error {
	return a.Health.Wrote("renew", a.renew(now)) // not under WriteMu: Health's lock comes first
}

func (a *Answers) renew(now time.Time) error {
	defer a.lockWrites()()
	ctx, cancel := a.ctx()
	defer cancel()
	_, err := a.Synced.ExecContext(ctx, a.Q(`UPDATE submissions SET lease_until = ?
		WHERE lease_owner = ? AND state IN (?, ?, ?) AND recorded_at = 0`),
		now.Add(a.Lease).UnixNano(), a.LeaseOwner,
		string(inbox.SubmissionQueued), string(inbox.SubmissionSending), string(inbox.SubmissionAccepted))
	return err
}

// Lapsed lists the live submissions (as Unsettled) whose lease another
// replica held and let lapse by now, oldest first.
func (a *Answers) Lapsed(now time.Time) ([]inbox.Submission, error) {
	ctx, cancel := a.ctx()
	defer cancel()
	out, err := a.list(ctx, `WHERE state IN (?, ?, ?) AND recorded_at = 0 AND lease_owner != ? AND lease_until <= ? ORDER BY posted_at, seq`, 0,
		string(inbox.SubmissionQueued), string(inbox.SubmissionSending), string(inbox.SubmissionAccepted), a.LeaseOwner, now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("journal: lapsed: %w", err)
	}
	return out, nil
}

// Peers lists the live queued submissions (posted while the relay was
// away, not sent yet) whose lease another replica holds, oldest first:
// on no relay's feed yet, they are known to this replica only here.
func (a *Answers) Peers() ([]inbox.Submission, error) {
	ctx, cancel := a.ctx()
	defer cancel()
	out, err := a.list(ctx, `WHERE state = ? AND recorded_at = 0 AND lease_owner != ? ORDER BY posted_at, seq`, 0,
		string(inbox.SubmissionQueued), a.LeaseOwner)
	if err != nil {
		return nil, fmt.Errorf("journal: peers: %w", err)
	}
	return out, nil
}

// Replica is the name this journal holds leases under.
func (a *Answers) Replica() string { return a.LeaseOwner }
