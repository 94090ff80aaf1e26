package inbox

import (
	"errors"
	"sync"
	"time"
)

// ErrNotRecorded is BeginSubmission's refusal when the journal could not
// keep the submission: nothing is sent.
var ErrNotRecorded = errors.New("inbox: the answer could not be recorded")

// Journal is where the operator's answers are kept: every submission
// begun, written ahead of its command being sent, and every state it
// moves to, in the order things happen to one command. The inbox calls
// Settle under its own lock, and Record outside it (a disk sync must not
// hold up the feed), so Record may run concurrently with Record and
// Settle of other commands: an implementation must be safe for that. Options.Journal nil keeps them in memory
// (MemoryJournal); a database behind this interface makes them outlast
// the process.
type Journal interface {
	// Record keeps a new submission (State sending) before its command is
	// sent; an error refuses the post.
	Record(s Submission) error
	// Settle keeps what became of command commandID at time at.
	Settle(commandID string, state SubmissionState, reason, detail string, at time.Time) error
	// Unsettled lists the submissions whose command still waits for the
	// agent (queued, sending, or accepted with nothing recorded yet),
	// oldest first.
	Unsettled() ([]Submission, error)
	// Lookup returns the submission of command commandID, in its latest
	// state, and whether the journal holds it: a command from this UI's
	// source seen on the feed is this UI's answer only if it does.
	Lookup(commandID string) (Submission, bool, error)
	// KeepRecorded keeps what the agent recorded (attention.answered) for
	// command commandID, seen at time at: the submission is settled for
	// good, so Unsettled no longer lists it. An unknown command is
	// ignored.
	KeepRecorded(commandID string, r Recorded, at time.Time) error
	// Recent lists the latest n submissions the agent recorded (those
	// KeepRecorded kept), newest first, at most one per card: the settled
	// cards the inbox shows again after a restart.
	Recent(n int) ([]Submission, error)
}

// MemoryJournal is a Journal in memory: what it holds ends with the
// process. Its methods are safe for concurrent use.
type MemoryJournal struct {
	mu    sync.Mutex
	order []string
	subs  map[string]*Submission
	marks map[CardID]Mark
}

// NewMemoryJournal returns an empty MemoryJournal.
func NewMemoryJournal() *MemoryJournal {
	return &MemoryJournal{subs: make(map[string]*Submission), marks: make(map[CardID]Mark)}
}

// Record keeps s.
func (j *MemoryJournal) Record(s Submission) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, dup := j.subs[s.CommandID]; dup {
		return errors.New("inbox: command id already recorded")
	}
	c := cloneSubmission(s)
	j.subs[s.CommandID] = &c
	j.order = append(j.order, s.CommandID)
	return nil
}

// Settle keeps the new state of command commandID; an unknown command is
// ignored.
func (j *MemoryJournal) Settle(commandID string, state SubmissionState, reason, detail string, at time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if s, ok := j.subs[commandID]; ok {
		s.State, s.Reason, s.Detail, s.SettledAt = state, reason, detail, at
		if state == SubmissionSending || state == SubmissionQueued {
			s.SettledAt = time.Time{}
		}
	}
	return nil
}

// Unsettled lists the submissions still waiting for the agent, oldest first.
func (j *MemoryJournal) Unsettled() ([]Submission, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Submission
	for _, id := range j.order {
		if s := j.subs[id]; s.InFlight() && s.Recorded == nil {
			out = append(out, cloneSubmission(*s))
		}
	}
	return out, nil
}

// Lookup returns the submission of command commandID, if kept.
func (j *MemoryJournal) Lookup(commandID string) (Submission, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s, ok := j.subs[commandID]
	if !ok {
		return Submission{}, false, nil
	}
	return cloneSubmission(*s), true, nil
}

// KeepRecorded keeps what the agent recorded for command commandID; an
// unknown command is ignored.
func (j *MemoryJournal) KeepRecorded(commandID string, r Recorded, at time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if s, ok := j.subs[commandID]; ok {
		r.Answer = cloneAnswer(r.Answer)
		s.Recorded, s.RecordedAt = &r, at
	}
	return nil
}

// Recent lists the latest n submissions the agent recorded, newest first,
// one per card.
func (j *MemoryJournal) Recent(n int) ([]Submission, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Submission
	cards := make(map[CardID]bool)
	for i := len(j.order) - 1; i >= 0 && len(out) < n; i-- {
		s := j.subs[j.order[i]]
		if s.Recorded == nil || cards[s.Card] {
			continue
		}
		cards[s.Card] = true
		out = append(out, cloneSubmission(*s))
	}
	return out, nil
}

// TokenJournal is a Journal that finds a submission by its form token: a
// journal replicas share, where a form posted again may reach another
// replica than the one that took it first (BeginSubmission, Posted).
type TokenJournal interface {
	// LookupToken returns the latest submission posted on card with
	// form token token, by any replica, and whether there is one.
	LookupToken(card CardID, token string) (Submission, bool, error)
}

// Leases are the resend leases of a journal replicas share: each live
// submission is held by one replica (the one that recorded it, until it
// lets the lease lapse), so after a restart or a replica's death exactly
// one replica sends it again (Resume, Reclaim).
type Leases interface {
	// Claim takes command commandID's lease for this replica when it is
	// this replica's already or has lapsed at now, and reports whether
	// this replica holds it.
	Claim(commandID string, now time.Time) (bool, error)
	// Renew extends the leases this replica holds on live submissions.
	Renew(now time.Time) error
	// Lapsed lists the live submissions whose lease another replica let
	// lapse by now, oldest first.
	Lapsed(now time.Time) ([]Submission, error)
}

// LookupToken returns the latest submission posted on card with token.
func (j *MemoryJournal) LookupToken(card CardID, token string) (Submission, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := len(j.order) - 1; i >= 0; i-- {
		if s := j.subs[j.order[i]]; s.Card == card && s.Token == token {
			return cloneSubmission(*s), true, nil
		}
	}
	return Submission{}, false, nil
}

// KeepClaim keeps card id's claim c unless a later one is kept; a claim
// of a card nobody is on is kept all the same, after the end kept; an
// end ends only the claim of the operator it names (Claim.Ends).
func (j *MemoryJournal) KeepClaim(id CardID, c Claim) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	m := j.marks[id]
	switch {
	case c.By != "" && m.Claim.By == "" && c.Rev <= m.Claim.Rev:
		c.Rev = m.Claim.Rev + 1
	case c.Rev <= m.Claim.Rev:
		return nil
	case c.By == "" && c.Ends != "" && m.Claim.By != "" && m.Claim.By != c.Ends:
		return nil
	}
	c.Ends = ""
	m.Card, m.Claim = id, c
	j.marks[id] = m
	return nil
}

// KeepAssignment keeps card id's assignment a unless a later one is kept.
func (j *MemoryJournal) KeepAssignment(id CardID, a Assignment) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if m := j.marks[id]; a.Rev > m.Assigned.Rev {
		m.Card, m.Assigned = id, a
		j.marks[id] = m
	}
	return nil
}

// Marks lists the claims live at now and the assignments kept, an ended
// one too (its To "": the replicas still showing it end it).
func (j *MemoryJournal) Marks(now time.Time) ([]Mark, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Mark
	for _, m := range j.marks {
		if !m.Claim.Live(now) {
			m.Claim = Claim{}
		}
		if m.Claim.By != "" || m.Assigned.Rev > 0 {
			out = append(out, m)
		}
	}
	return out, nil
}
