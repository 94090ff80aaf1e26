package inbox

import (
	"errors"
	"time"
)

// A claim says in the open who is on an open question ("I’m on it"): it
// informs every operator and locks nobody out. It lapses after
// Options.ClaimIdle without the claimant's activity (a re-claim, which
// the page script makes while they type an answer on the card), when
// they sign out (EndClaims), and when the question is answered or
// settles. An assignment names who should answer it: a person or a team.

// DefaultClaimIdle is Options.ClaimIdle's default.
const DefaultClaimIdle = 10 * time.Minute

// ErrNotOpen is the refusal of a claim or an assignment of a question no
// longer open (settled, expired): there is nothing left to be on.
var ErrNotOpen = errors.New("inbox: the question is no longer open")

// ErrNoClaimant is the refusal of a claim with no operator's name: a
// claim says who is on a question.
var ErrNoClaimant = errors.New("inbox: a claim names its operator")

// Claim is an operator's "I’m on it" on an open question. The zero Claim
// is none.
type Claim struct {
	// By is the operator on it ("" none).
	By string
	// At is when they claimed it; Until is when it lapses without their
	// activity (inbox clock).
	At, Until time.Time
	// Rev orders the writes of one card's claim (unix nanoseconds of the
	// write, after every write its inbox saw): of a journal replicas
	// share, the latest write wins, except that a claim of a question
	// nobody is on is kept (and ordered after the end it follows), and
	// an end ends only the claim of the operator it names (Ends).
	Rev int64
	// Ends is, in an end (By ""), the operator whose claim it ends.
	Ends string
}

// Live reports whether the claim holds at now.
func (c Claim) Live(now time.Time) bool { return c.By != "" && now.Before(c.Until) }

// Assignment names who should answer a question: an operator, or a team
// (Team). The zero Assignment is none.
type Assignment struct {
	To   string
	Team bool
	// By is who assigned it, At when (inbox clock); Rev orders the writes
	// as Claim.Rev does.
	By  string
	At  time.Time
	Rev int64
}

// Mark is one card's claim and assignment as a journal keeps them.
type Mark struct {
	Card     CardID
	Claim    Claim
	Assigned Assignment
}

// MarkJournal is a journal that keeps the claims and assignments, so a
// restart and the replicas sharing it agree on them.
type MarkJournal interface {
	// KeepClaim keeps card id's claim c (c.By "" ends it), unless the
	// journal holds a later one (a greater Rev).
	KeepClaim(id CardID, c Claim) error
	// KeepAssignment keeps card id's assignment a (a.To "" ends it),
	// unless the journal holds a later one.
	KeepAssignment(id CardID, a Assignment) error
	// Marks lists the live claims at now and every assignment kept, an
	// ended one too (To "", with its Rev), so a replica still showing it
	// ends it.
	Marks(now time.Time) ([]Mark, error)
}

// FirstClaims is a journal that says which claim of a card is its first
// of every replica sharing it and of every restart, so the time to first
// claim is counted once.
type FirstClaims interface {
	// FirstClaim claims card id's first claim, made at: true for the
	// one caller that claimed it first.
	FirstClaim(id CardID, at time.Time) (bool, error)
}

// ClaimOutcome is what a claim did: FirstClaim is true for the card's
// first claim (SinceAsked is then the time from its arrival to it, the
// time to first claim); Team is the team the question is routed to (""
// none).
type ClaimOutcome struct {
	Claim      Claim
	FirstClaim bool
	SinceAsked time.Duration
	Team       string
}

// Claim marks card id as claimed by operator by now, or renews their
// claim (their activity): it lapses Options.ClaimIdle later. Another
// operator's claim is taken over (a claim informs, it does not lock).
// The claim is journaled before it is shown. ErrNotFound, ErrNotOpen,
// ErrNoClaimant; a journal's refusal is ErrNotRecorded.
func (in *Inbox) Claim(id CardID, by string) (ClaimOutcome, error) {
	return in.claimAs(id, by, false)
}

// Renew is Claim of operator by's activity on card id (typing an answer
// on it): it renews their claim, or claims a question nobody is on, but
// leaves another operator's live claim as it is (their page may not show
// yet that it was taken over): the outcome's Claim is then the other's.
func (in *Inbox) Renew(id CardID, by string) (ClaimOutcome, error) {
	return in.claimAs(id, by, true)
}

func (in *Inbox) claimAs(id CardID, by string, renew bool) (ClaimOutcome, error) {
	if by == "" {
		return ClaimOutcome{}, ErrNoClaimant
	}
	in.mu.Lock()
	en, ok := in.byID[id]
	if !ok {
		in.mu.Unlock()
		return ClaimOutcome{}, ErrNotFound
	}
	now := in.opts.Now()
	if !en.card.Open(now) {
		in.mu.Unlock()
		return ClaimOutcome{}, ErrNotOpen
	}
	if cur := en.card.Claim; renew && cur.Live(now) && cur.By != by {
		in.mu.Unlock()
		return ClaimOutcome{Claim: cur}, nil
	}
	c := Claim{By: by, At: now, Until: now.Add(in.opts.ClaimIdle), Rev: in.rev(now)}
	if cur := en.card.Claim; cur.Live(now) && cur.By == by {
		c.At = cur.At // activity renews it, the claim is as old as it was
	}
	out := ClaimOutcome{Claim: c, FirstClaim: !en.claimedOnce, SinceAsked: now.Sub(en.card.ReceivedAt), Team: en.card.Routing.Team}
	in.mu.Unlock()
	if mj, ok := in.opts.Journal.(MarkJournal); ok {
		if err := mj.KeepClaim(id, c); err != nil {
			return ClaimOutcome{}, errors.Join(ErrNotRecorded, err)
		}
	}
	if fc, ok := in.opts.Journal.(FirstClaims); ok && out.FirstClaim {
		// Another replica, or this one before a restart, may have had
		// the card's first claim: the journal says.
		first, err := fc.FirstClaim(id, now)
		if err != nil {
			in.opts.Logger.Warn("inbox: a card's first claim could not be told from the journal", "card", string(id), "err", err)
		}
		out.FirstClaim = first || err != nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if en, ok = in.byID[id]; !ok {
		return ClaimOutcome{}, ErrNotFound
	}
	out.FirstClaim = out.FirstClaim && !en.claimedOnce
	in.setClaim(en, c)
	in.commit()
	return out, nil
}

// Release ends operator by's claim of card id (they are not on it any
// more); another's claim, or none, is left as it is.
func (in *Inbox) Release(id CardID, by string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok {
		return ErrNotFound
	}
	if en.card.Claim.By == by && by != "" {
		in.endClaim(en)
		in.commit()
	}
	return nil
}

// EndClaims ends every claim of operator by (they signed out) and
// reports how many it ended.
func (in *Inbox) EndClaims(by string) int {
	if by == "" {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, en := range in.byID {
		if en.card.Claim.By == by {
			in.endClaim(en)
			n++
		}
	}
	in.commit()
	return n
}

// Assign assigns card id to a (its To and Team; By who assigns), now,
// journaled before it is shown; an empty a.To ends the assignment. The
// assignment in force (the same To and Team) is returned as it is.
// ErrNotFound, ErrNotOpen; a journal's refusal is ErrNotRecorded.
func (in *Inbox) Assign(id CardID, a Assignment) (Assignment, error) {
	in.mu.Lock()
	en, ok := in.byID[id]
	if !ok {
		in.mu.Unlock()
		return Assignment{}, ErrNotFound
	}
	now := in.opts.Now()
	if !en.card.Open(now) {
		in.mu.Unlock()
		return Assignment{}, ErrNotOpen
	}
	if cur := en.card.Assigned; cur.To == a.To && cur.Team == a.Team {
		// The assignment in force posted again (a double click, the page
		// sent again): nothing changes, and its assignee is not told again.
		in.mu.Unlock()
		return cur, nil
	}
	a.At, a.Rev = now, in.rev(now)
	if a.To == "" {
		a = Assignment{Rev: a.Rev}
	}
	in.mu.Unlock()
	if mj, ok := in.opts.Journal.(MarkJournal); ok {
		if err := mj.KeepAssignment(id, a); err != nil {
			return Assignment{}, errors.Join(ErrNotRecorded, err)
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if en, ok = in.byID[id]; !ok {
		return Assignment{}, ErrNotFound
	}
	if a.Rev > en.card.Assigned.Rev {
		en.card.Assigned = a
		in.touch(en, true)
		in.commit()
	}
	return a, nil
}

// SeeClaims reads, on a MarkJournal (elsewhere it does nothing), the
// claims and assignments kept there, by this instance before a restart
// or by the other replicas sharing it, and puts each on its card: a
// later write than the card's wins, and a claim the journal no longer
// holds live (ended or lapsed there) ends here. The app calls it every
// --claim-sync.
func (in *Inbox) SeeClaims() {
	mj, ok := in.opts.Journal.(MarkJournal)
	if !ok {
		return
	}
	asOf := in.rev(in.opts.Now())
	marks, err := mj.Marks(in.opts.Now()) // off the lock: the database answers
	in.mu.Lock()
	defer in.mu.Unlock()
	if err != nil {
		in.noteJournalError(err)
		return
	}
	defer in.commit()
	held := make(map[CardID]bool, len(marks))
	for _, m := range marks {
		in.sawRev(m.Claim.Rev)
		in.sawRev(m.Assigned.Rev)
		en, ok := in.byID[m.Card]
		if !ok {
			continue
		}
		if m.Claim.By != "" {
			held[m.Card] = true
		}
		// A later write wins; so does a claim an end here did not end
		// (another operator's, which the journal kept over that end).
		cur := en.card.Claim
		if m.Claim.Rev > cur.Rev || (m.Claim.By != "" && cur.By == "" && cur.Ends != "" && m.Claim.By != cur.Ends) {
			if m.Claim.By == "" {
				in.setClaim(en, Claim{Rev: m.Claim.Rev})
			} else {
				in.setClaim(en, m.Claim)
			}
		}
		if m.Assigned.Rev > en.card.Assigned.Rev {
			en.card.Assigned = m.Assigned
			in.touch(en, true)
		}
	}
	for id, en := range in.byID {
		if c := en.card.Claim; c.By != "" && !held[id] && c.Rev < asOf {
			// Ended or lapsed in the journal. One rev below the claim's:
			// a claim written as this read began (its row not read yet)
			// is put back by the next read.
			in.setClaim(en, Claim{Rev: c.Rev - 1})
		}
	}
}

// sweepClaims ends the claims lapsed at now or on a question no longer
// open, journaling each end. The caller holds the lock.
func (in *Inbox) sweepClaims(now time.Time) {
	for _, en := range in.byID {
		if c := en.card.Claim; c.By != "" && (!c.Live(now) || !en.card.Open(now)) {
			in.endClaim(en)
		}
	}
}

// endClaim ends en's claim, journaled (in order, off the lock). The
// caller holds the lock and commits.
func (in *Inbox) endClaim(en *entry) {
	if en.card.Claim.By == "" {
		return
	}
	c := Claim{Rev: in.rev(in.opts.Now()), Ends: en.card.Claim.By}
	in.setClaim(en, c)
	id := en.card.ID
	if err := in.journalQ.push(func(j Journal) error {
		if mj, ok := j.(MarkJournal); ok {
			return mj.KeepClaim(id, c)
		}
		return nil
	}); err != nil {
		in.noteJournalError(err)
	}
}

// setClaim puts c on en's card. The caller holds the lock and commits.
func (in *Inbox) setClaim(en *entry, c Claim) {
	if c.By != "" {
		en.claimedOnce = true
	}
	en.card.Claim = c
	in.touch(en, true)
}

// rev is a write's order at now: unix nanoseconds, after every rev this
// inbox gave or saw before (a clock that stands still or steps back
// still orders them, and so does a replica's clock behind another's: a
// write made after seeing another's comes after it).
func (in *Inbox) rev(now time.Time) int64 {
	r := now.UnixNano()
	for {
		last := in.lastRev.Load()
		if r <= last {
			r = last + 1
		}
		if in.lastRev.CompareAndSwap(last, r) {
			return r
		}
	}
}

// sawRev notes a write of order r made elsewhere (another replica, or
// this process before a restart): every rev given after is later.
func (in *Inbox) sawRev(r int64) {
	for {
		last := in.lastRev.Load()
		if r <= last || in.lastRev.CompareAndSwap(last, r) {
			return
		}
	}
}
