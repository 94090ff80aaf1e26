package inbox

import (
	"fmt"
	"slices"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Resuming after a restart.
//
// The journal outlives the process; the cards do not: they come back from
// the feed, which replays the relay's history. So resuming is two steps.
//
//  1. Restore, once, before the feed starts: the journal's submissions
//     still waiting for the agent (queued, sending or accepted) are held by card
//     id, and each is put on its card the moment the card is made
//     (onRequested calls restoreOnto), before any event that follows the
//     request: the card never shows an open form for a request this UI
//     has already answered, and the replayed acks of the command settle
//     it as they would have before the restart.
//  2. Resume, once, when the feed has caught up with the relay's history
//     (the app decides when; see internal/app/resume.go): each restored
//     submission whose request is still open and which is younger than
//     maxAge is handed back to be sent again, with its original command
//     id and bytes; the others are settled, superseded (the request
//     settled, expired or its session ended first), or not sent as too
//     old (the agent may no longer remember its command id, AEP-0004
//     §2.3).
//  3. A restored submission whose card has not come by then is still
//     owed: the relay may know nothing yet (a relay started with this
//     process, as serve's embedded one is, knows no session until the
//     agents come back and ask their open requests again). It waits for
//     its card until maxAge has passed since its post (Sweep then ends
//     it: not sent, or unknown if it may have left); when the card comes,
//     Late is signalled and ResumeLate decides about it as Resume does.

// Restore loads the journal's submissions still waiting for the agent,
// to be put on their cards as the feed brings them. Call it once, before
// the feed starts. It returns how many were loaded. Of two for one card
// (a journal from before one-answer-in-flight), the older is superseded
// at once.
//
// It also brings back, as settled cards, the latest
// Options.RestoreSettled answers of this UI that the agent recorded
// (Journal.Recent): each shows who answered, when and what, even when the
// relay no longer holds its events.
func (in *Inbox) Restore() (int, error) {
	subs, err := in.opts.Journal.Unsettled()
	if err != nil {
		return 0, fmt.Errorf("inbox: restore: %w", err)
	}
	var recent []Submission
	if in.opts.RestoreSettled > 0 {
		if recent, err = in.opts.Journal.Recent(in.opts.RestoreSettled); err != nil {
			// Only settled cards to show are missing: the answers still
			// waiting for the agent are restored all the same.
			in.opts.Logger.Error("answer journal: the latest settled answers could not be read; they are in History", "err", err)
			recent = nil
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.restoreSettled(recent)
	if in.restored == nil {
		in.restored = make(map[CardID]*Submission)
	}
	now := in.opts.Now()
	for i := range subs {
		s := cloneSubmission(subs[i])
		s.Resumed = true
		if s.State == SubmissionSending && s.Reason == "" {
			// Not sent again yet: Resume decides, once the feed has
			// caught up (in memory only; the journal keeps "sending").
			s.Reason = ReasonRestart
		}
		if old, ok := in.restored[s.Card]; ok {
			in.journalSettle(old.CommandID, SubmissionSuperseded, "", "", now)
		}
		in.restored[s.Card] = &s
	}
	in.restoring = len(in.restored)
	return len(subs), nil
}

// restoreOnto puts the restored submission of en's card on it, as its
// latest submission, and makes its command id this inbox's own. The
// caller holds the lock.
func (in *Inbox) restoreOnto(en *entry) {
	s, ok := in.restored[en.card.ID]
	if !ok || en.card.Submission != nil {
		return
	}
	delete(in.restored, en.card.ID)
	if in.resumed {
		// Found after Resume: ResumeLate decides, once the events that
		// follow the request have been read too.
		select {
		case in.late <- struct{}{}:
		default:
		}
	}
	en.card.Submission = s
	in.keepSub(en, s)
	if en.ownIDs == nil {
		en.ownIDs = make(map[string]bool)
		en.tokens = make(map[string]bool)
	}
	en.ownIDs[s.CommandID] = true
	if s.Token != "" {
		en.tokens[s.Token] = true
	}
	in.ours[s.CommandID] = en
	in.resumable = append(in.resumable, s)
}

// Resume decides, once the feed has caught up, what becomes of every
// restored submission (see Restore): it returns those to send again, in
// the order they were posted, each with its original command id and
// bytes, and settles the rest (SubmissionSuperseded, or SubmissionNotSent
// with ReasonTooOld or ReasonGone), in the journal and on their cards.
// Those whose card has not come yet wait for it (ResumeLate). maxAge is
// the oldest a submission may be to be sent again, measured from its
// post on the inbox clock; zero or less sends none again. Later calls
// return nothing.
func (in *Inbox) Resume(maxAge time.Duration) []Submission {
	now := in.opts.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.resumed {
		return nil
	}
	in.resumed, in.maxAge = true, maxAge
	in.claimLeases(now)
	out := in.resumeCards(maxAge, now)
	// What has not found its card is still owed (see 3. above) unless
	// another replica holds it or it is too old already.
	for id, s := range in.restored {
		switch {
		case !in.claim(s, now):
			delete(in.restored, id) // another replica's: it decides
		case in.restoredTooOld(s, now):
			in.settleTooOldRestored(s, now)
			delete(in.restored, id)
		}
	}
	in.commit()
	return out
}

// Late is signalled when a restored submission found its card after
// Resume: call ResumeLate, once the feed has read the events that follow
// the request.
func (in *Inbox) Late() <-chan struct{} { return in.late }

// ResumeLate is Resume for the restored submissions that found their
// card after it: it returns those to send again, with their original
// command id and bytes, and settles the rest. Before Resume it does
// nothing.
func (in *Inbox) ResumeLate() []Submission {
	now := in.opts.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.resumed {
		return nil
	}
	// Their leases were taken by Resume: what another replica held was
	// dropped then.
	out := in.resumeCards(in.maxAge, now)
	in.commit()
	return out
}

// resumeCards decides about every restored submission put on its card
// (in.resumable) and returns those to send again. The caller holds the
// lock.
func (in *Inbox) resumeCards(maxAge time.Duration, now time.Time) []Submission {
	var out []Submission
	for _, rs := range in.resumable {
		id := rs.CommandID
		en := in.ours[id]
		if en == nil {
			// Its card left the inbox (its bounds) before the feed caught up.
			if in.claim(rs, now) {
				in.settleGone(rs, now)
			}
			continue
		}
		if en.card.Submission != rs {
			continue // a newer post replaced it
		}
		if rs.InFlight() && !in.claim(rs, now) {
			continue // another replica holds its lease: that one resends it
		}
		if in.resumeOne(en, maxAge, now) {
			out = append(out, cloneSubmission(*en.card.Submission))
		}
	}
	in.resumable = nil
	return out
}

// restoredTooOld reports whether a restored submission is past the
// resend limit Resume was given (zero or less: every one is).
func (in *Inbox) restoredTooOld(s *Submission, now time.Time) bool {
	return in.maxAge <= 0 || now.Sub(s.At) > in.maxAge
}

// settleTooOldRestored ends a restored submission that never found its
// card within the resend limit: not sent if it never left (queued),
// unknown if it may have. The caller holds the lock.
func (in *Inbox) settleTooOldRestored(s *Submission, now time.Time) {
	switch s.State {
	case SubmissionQueued:
		in.journalSettle(s.CommandID, SubmissionNotSent, ReasonTooOld, "", now)
	case SubmissionSending:
		in.journalSettle(s.CommandID, SubmissionUnknown, ReasonTooOld, "", now)
	}
	// Accepted stays accepted: the agent took it, whatever became of
	// its question.
}

// sweepRestored ends, after Resume, the restored submissions still
// without a card once past the resend limit. The caller holds the lock.
func (in *Inbox) sweepRestored(now time.Time) {
	if !in.resumed {
		return
	}
	for id, s := range in.restored {
		if in.restoredTooOld(s, now) {
			in.settleTooOldRestored(s, now)
			delete(in.restored, id)
		}
	}
}

// Restoring reports how many submissions Restore loaded, and whether
// Resume has run.
func (in *Inbox) Restoring() (loaded int, resumed bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.restoring, in.resumed
}

// settleGone settles a restored submission whose card is not in the
// inbox: one never sent to the agent's knowledge (sending) is not sent;
// one the agent accepted stays accepted (its answer was most likely
// recorded long ago: the relay no longer holds its question), never
// rewritten as not sent.
func (in *Inbox) settleGone(s *Submission, now time.Time) {
	switch s.State {
	case SubmissionQueued:
		in.journalSettle(s.CommandID, SubmissionNotSent, ReasonGone, "", now)
	case SubmissionSending:
		// It may have left before the restart, and the agent may have
		// run it: not "not sent", but unknown until its record says.
		in.journalSettle(s.CommandID, SubmissionUnknown, ReasonRestart, "", now)
	}
}

// journalSettle queues a state change of a submission on no card for the
// journal. The caller holds the lock.
func (in *Inbox) journalSettle(commandID string, state SubmissionState, reason, detail string, at time.Time) {
	in.queueSettle(commandID, state, reason, detail, at)
}

// Commands from this UI's own source seen on the feed (restore, cont.).
//
// Restore brings back only the answers still waiting for the agent. The
// feed replays the rest of this UI's commands too (one the agent
// rejected, one that failed, one sent by a release before the journal,
// or with a journal since deleted). A command from one of
// Options.OwnSources that the journal holds is this UI's answer, put on
// its card with its journaled state (adopt); one the journal does not
// hold is still this UI's, but unknown: a Responder marked Own, which
// locks the form while it is in flight (onCommand).

// adopt puts the journaled submission s on en's card as its latest
// submission unless a later one is there, makes its command id this
// inbox's own, and reports whether the card changed. The caller holds the
// lock.
func (in *Inbox) adopt(en *entry, s Submission) bool {
	if s.Card != en.card.ID {
		return false // the journal's answer to another request: not this card's
	}
	sub := cloneSubmission(s)
	sub.Resumed = true
	in.ownID(en, sub.CommandID)
	if sub.Token != "" {
		en.tokens[sub.Token] = true
	}
	if in.ours[sub.CommandID] == nil {
		in.ours[sub.CommandID] = en
	}
	if en.subs[sub.CommandID] != nil {
		return false // already ours, in its latest state
	}
	if cur := en.card.Submission; cur != nil && !cur.At.Before(sub.At) {
		in.keepSub(en, &sub) // an earlier answer: its acks still settle it
		return false         // a later answer is on the card
	}
	en.card.Submission = &sub
	in.keepSub(en, &sub)
	return true
}

// adoptCommand adopts the journal's submission of command id onto its
// card, when the journal holds it and the card is in the inbox (for an
// ack whose command the feed did not bring). The caller holds the lock.
func (in *Inbox) adoptCommand(session, id string) {
	s, ok := in.journaled(id)
	if !ok || s.Key.Session != session {
		return
	}
	if en, ok := in.byID[s.Card]; ok {
		in.touch(en, in.adopt(en, s))
	}
}

// restoreSettled makes a settled, read-only card of each submission the
// agent recorded (newest first, as Journal.Recent lists them), from what
// the journal kept of its request. If the feed brings the request again,
// the card takes the relay's copy (refill); until then it is the
// journal's. The caller holds the lock.
func (in *Inbox) restoreSettled(recent []Submission) {
	for i := len(recent) - 1; i >= 0; i-- { // oldest first: the newest settles last and is listed first
		s := cloneSubmission(recent[i])
		if s.Recorded == nil || s.Card == "" {
			continue
		}
		if _, ok := in.byID[s.Card]; ok {
			continue
		}
		s.Resumed = true
		in.arrivals++
		en := &entry{arrival: in.arrivals, fresh: true, journaled: true}
		c := &en.card
		c.ID, c.Key, c.Agent, c.EventID = s.Card, s.Key, s.Agent, s.Key.RequestID
		c.Capture = s.Capture
		c.Request = aep.Request{Kind: s.Kind, Prompt: s.Question, Options: slices.Clone(s.Options)}
		c.Request.Fields = cloneRequest(aep.Request{Fields: s.Fields}).Fields
		c.ReceivedAt = s.At
		c.Controls = Controls(c.Request)
		c.Shape = ShapeOf(c.Request)
		rec := *s.Recorded
		rec.Answer = cloneAnswer(rec.Answer)
		c.Recorded = &rec
		c.Submission = &s
		en.subs = map[string]*Submission{s.CommandID: c.Submission}
		en.ownIDs = map[string]bool{s.CommandID: true}
		if rec.Cause != "" {
			// The journal kept it as this UI's answer: its cause (the
			// command, or the command's ack) is ours.
			en.ownIDs[rec.Cause] = true
		}
		en.tokens = map[string]bool{}
		if s.Token != "" {
			en.tokens[s.Token] = true
		}
		in.byID[c.ID] = en
		in.ours[s.CommandID] = en
		in.account(en, 0)
		sk := subjKey{c.Key.Session, c.EventID}
		in.bySubject[sk] = append(in.bySubject[sk], en)
		in.touch(en, true)
	}
	in.commit()
}

// keepRecorded journals (queues for the journal), once, what the agent
// recorded for this UI's own answer on en's card: the submission is then settled for good (not
// restored as waiting after a restart) and its card comes back settled
// after one. The agent recording the answer is its acceptance, whatever
// became of the ack (lost, late, or the command resent after a restart).
// The caller holds the lock.
func (in *Inbox) keepRecorded(en *entry) {
	c := &en.card
	if c.Recorded == nil || !en.ownOutcome() {
		return
	}
	s := en.recordedCommand() // the command the record names, not the latest
	if s == nil || s.Recorded != nil || s.State == SubmissionRejected {
		return
	}
	if s.State != SubmissionAccepted {
		in.settle(s, SubmissionAccepted, "", "")
	}
	now := in.opts.Now()
	r := *c.Recorded
	r.Answer = cloneAnswer(r.Answer)
	kept := r
	kept.Answer = cloneAnswer(r.Answer)
	id := s.CommandID
	in.queueJournal(func(j Journal) error { return j.KeepRecorded(id, kept, now) })
	s.Recorded, s.RecordedAt = &r, now
}

// resumeOne decides what becomes of the in-flight submission on en's card
// after a restart or a lapsed lease, and reports whether it is to be sent
// again: settled accepted when the agent recorded it, superseded when its
// request closed, not sent when older than maxAge (zero or less sends
// none again), else sent again (sending, if it was queued). The caller
// holds the lock.
func (in *Inbox) resumeOne(en *entry, maxAge time.Duration, now time.Time) bool {
	in.touch(en, in.derive(en, now))
	s := en.card.Submission
	switch {
	case !s.InFlight():
		// The replayed acks already settled it (rejected).
	case en.card.Recorded != nil && en.ownOutcome():
		// The agent recorded this very answer; its ack was lost.
		in.touch(en, in.settle(s, SubmissionAccepted, "", ""))
	case en.card.Closed(now) != nil:
		in.touch(en, in.settle(s, SubmissionSuperseded, "", ""))
	case maxAge <= 0 || now.Sub(s.At) > maxAge:
		if s.State == SubmissionQueued {
			in.touch(en, in.settle(s, SubmissionNotSent, ReasonTooOld, ""))
		} else {
			// It may have left before the restart: unknown, not "not sent".
			in.touch(en, in.settle(s, SubmissionUnknown, ReasonTooOld, ""))
		}
	default:
		switch {
		case s.State == SubmissionQueued:
			// Queued when the last serve stopped: it goes to the
			// respond path now, which says "queued" again if the
			// relay is still away.
			in.touch(en, in.settle(s, SubmissionSending, "", ""))
		case s.Reason == ReasonRestart:
			// Handed to the respond path now: "sent again" from here on
			// (the journal already says sending).
			s.Reason = ""
			in.touch(en, true)
		}
		return true
	}
	return false
}

// claimLeases takes, on a journal replicas share (Leases), the resend
// lease of every restored submission Resume may decide about, with the
// lock released while the journal answers (journalwriter.go): the feed
// may put more restored submissions on their cards meanwhile, so it goes
// round until every one is asked about. The caller holds the lock; it is
// held again on return.
func (in *Inbox) claimLeases(now time.Time) {
	leases, ok := in.opts.Journal.(Leases)
	if !ok {
		return
	}
	if in.leases == nil {
		in.leases = make(map[string]bool)
	}
	for {
		var ids []string
		ask := func(s *Submission) {
			if _, done := in.leases[s.CommandID]; !done && !slices.Contains(ids, s.CommandID) {
				ids = append(ids, s.CommandID)
			}
		}
		for _, rs := range in.resumable {
			ask(rs)
		}
		for _, s := range in.restored {
			ask(s)
		}
		if len(ids) == 0 {
			return
		}
		in.mu.Unlock()
		held := make([]bool, len(ids))
		var errs []error
		for i, id := range ids {
			h, err := leases.Claim(id, now)
			if err != nil {
				errs = append(errs, err)
			}
			held[i] = h && err == nil
		}
		in.mu.Lock()
		for i, id := range ids {
			in.leases[id] = held[i]
		}
		for _, err := range errs {
			in.noteJournalError(err)
		}
	}
}

// claim reports whether this replica may decide s's fate: always on a
// journal with no leases, else when claimLeases took its lease. A journal
// that could not answer was noted, and s left to whichever replica next
// claims it. The caller holds the lock.
func (in *Inbox) claim(s *Submission, _ time.Time) bool {
	if _, ok := in.opts.Journal.(Leases); !ok {
		return true
	}
	return in.leases[s.CommandID]
}

// Reclaim is Resume for a replica that stays up, on a journal replicas
// share (Leases; elsewhere it does nothing): it renews the leases this
// replica holds, then takes over each live submission whose replica let
// its lease lapse (it died after journaling the answer and before the
// agent's ack), puts it on its card, and decides its fate as Resume does.
// It returns those to send again, with their original command id and
// bytes. Call it every fraction of the lease, once the feed has caught
// up (the cards must be in the inbox to be judged).
func (in *Inbox) Reclaim(maxAge time.Duration) []Submission {
	leases, ok := in.opts.Journal.(Leases)
	if !ok {
		return nil
	}
	now := in.opts.Now()
	if !in.RenewLeases() {
		return nil // without our own leases renewed, take none over
	}
	lapsed, err := leases.Lapsed(now)
	if err != nil {
		in.mu.Lock()
		in.noteJournalError(err)
		in.mu.Unlock()
		return nil
	}
	var out []Submission
	for _, s := range lapsed {
		held, err := leases.Claim(s.CommandID, now)
		if err != nil || !held {
			continue // another replica took it first
		}
		if send, ok := in.reclaimOne(s, maxAge, now); ok {
			out = append(out, send)
		}
	}
	return out
}

// RenewLeases keeps this replica's resend leases (on a journal with
// leases), and reports whether it could. Call it every fraction of the
// lease from the start, before the feed has caught up too: answers posted
// while the relay is away are held here all that time, and another
// replica must not take them over.
func (in *Inbox) RenewLeases() bool {
	leases, ok := in.opts.Journal.(Leases)
	if !ok {
		return true
	}
	if err := leases.Renew(in.opts.Now()); err != nil {
		in.mu.Lock()
		in.noteJournalError(err)
		in.mu.Unlock()
		return false
	}
	return true
}

// reclaimOne puts the lapsed submission s, whose lease this replica now
// holds, on its card and decides its fate; it returns it when it is to
// be sent again.
func (in *Inbox) reclaimOne(s Submission, maxAge time.Duration, now time.Time) (Submission, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	defer in.commit()
	en, ok := in.byID[s.Card]
	if !ok {
		in.settleGone(&s, now) // the relay no longer holds its request
		return Submission{}, false
	}
	in.touch(en, in.adopt(en, s))
	cur := en.card.Submission
	if cur == nil || cur.CommandID != s.CommandID {
		// A later answer is on the card: this one is not sent again.
		in.journalSettle(s.CommandID, SubmissionSuperseded, "", "", now)
		return Submission{}, false
	}
	if !in.resumeOne(en, maxAge, now) {
		return Submission{}, false
	}
	return cloneSubmission(*cur), true
}
