package sqldb

import (
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Assignee kinds (card_marks.assignee_kind).
const (
	assignPerson = "person"
	assignTeam   = "team"
)

// KeepClaim keeps card id's claim c (c.By "" ends c.Ends's), unless a
// later write (a greater rev) is kept already: inbox.MarkJournal. A
// claim of a card nobody is on is kept all the same, its rev after the
// end's; an end ends only the claim of the operator it names.
func (a *Answers) KeepClaim(id inbox.CardID, c inbox.Claim) error {
	ctx, cancel := a.ctx()
	defer cancel()
	defer a.lockWrites()()
	_, err := a.Synced.ExecContext(ctx, a.Q(`INSERT INTO card_marks (card_id, claimant, claimed_at, claim_until, claim_rev,
			assignee, assignee_kind, assigned_by, assigned_at, assign_rev)
		VALUES (?, ?, ?, ?, ?, '', '', '', 0, 0)
		ON CONFLICT (card_id) DO UPDATE SET claimant = excluded.claimant, claimed_at = excluded.claimed_at,
			claim_until = excluded.claim_until,
			claim_rev = CASE WHEN excluded.claim_rev > card_marks.claim_rev THEN excluded.claim_rev ELSE card_marks.claim_rev + 1 END
		WHERE (excluded.claim_rev > card_marks.claim_rev AND (excluded.claimant != '' OR ? = '' OR card_marks.claimant IN ('', ?)))
			OR (excluded.claimant != '' AND card_marks.claimant = '')`),
		string(id), c.By, store.Nanos(c.At), store.Nanos(c.Until), c.Rev, c.Ends, c.Ends)
	if err != nil {
		return fmt.Errorf("journal: claim: %w", err)
	}
	return nil
}

// FirstClaim claims card id's first claim (a push claim, kind
// store.ClaimFirst): inbox.FirstClaims.
func (a *Answers) FirstClaim(id inbox.CardID, at time.Time) (bool, error) {
	ctx, cancel := a.ctx()
	defer cancel()
	defer a.lockWrites()()
	res, err := a.Synced.ExecContext(ctx, a.Q(`INSERT INTO push_claims (card_id, kind, claimed_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
		string(id), store.ClaimFirst, store.Nanos(at))
	if err != nil {
		return false, fmt.Errorf("journal: first claim: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// KeepAssignment keeps card id's assignment as (as.To "" ends it), unless
// a later write is kept already: inbox.MarkJournal.
func (a *Answers) KeepAssignment(id inbox.CardID, as inbox.Assignment) error {
	ctx, cancel := a.ctx()
	defer cancel()
	defer a.lockWrites()()
	kind := assignPerson
	if as.Team {
		kind = assignTeam
	}
	_, err := a.Synced.ExecContext(ctx, a.Q(`INSERT INTO card_marks (card_id, claimant, claimed_at, claim_until, claim_rev,
			assignee, assignee_kind, assigned_by, assigned_at, assign_rev)
		VALUES (?, '', 0, 0, 0, ?, ?, ?, ?, ?)
		ON CONFLICT (card_id) DO UPDATE SET assignee = excluded.assignee, assignee_kind = excluded.assignee_kind,
			assigned_by = excluded.assigned_by, assigned_at = excluded.assigned_at, assign_rev = excluded.assign_rev
		WHERE excluded.assign_rev > card_marks.assign_rev`),
		string(id), as.To, kind, as.By, store.Nanos(as.At), as.Rev)
	if err != nil {
		return fmt.Errorf("journal: assignment: %w", err)
	}
	return nil
}

// Marks lists the claims live at now and every assignment kept, an
// ended one too (its To "", with its rev: the replicas that still show
// it end it): inbox.MarkJournal.
func (a *Answers) Marks(now time.Time) ([]inbox.Mark, error) {
	ctx, cancel := a.ctx()
	defer cancel()
	rows, err := a.Synced.QueryContext(ctx, a.Q(`SELECT card_id, claimant, claimed_at, claim_until, claim_rev,
			assignee, assignee_kind, assigned_by, assigned_at, assign_rev
		FROM card_marks WHERE (claimant != '' AND claim_until > ?) OR assign_rev > 0`), store.Nanos(now))
	if err != nil {
		return nil, fmt.Errorf("journal: marks: %w", err)
	}
	defer rows.Close()
	var out []inbox.Mark
	for rows.Next() {
		var m inbox.Mark
		var card, kind string
		var at, until, assignedAt int64
		if err := rows.Scan(&card, &m.Claim.By, &at, &until, &m.Claim.Rev,
			&m.Assigned.To, &kind, &m.Assigned.By, &assignedAt, &m.Assigned.Rev); err != nil {
			return nil, fmt.Errorf("journal: marks: %w", err)
		}
		m.Card = inbox.CardID(card)
		m.Claim.At, m.Claim.Until = store.FromNanos(at), store.FromNanos(until)
		if !m.Claim.Live(now) {
			m.Claim = inbox.Claim{}
		}
		m.Assigned.At, m.Assigned.Team = store.FromNanos(assignedAt), kind == assignTeam
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: marks: %w", err)
	}
	return out, nil
}
