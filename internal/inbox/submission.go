package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Sentinel errors of BeginSubmission.
var (
	ErrNotFound          = errors.New("inbox: no such card")
	ErrSettled           = errors.New("inbox: the request is no longer open (answered, resolved, timed out or its session ended)")
	ErrExpired           = errors.New("inbox: the request is past its expires_at")
	ErrInformational     = errors.New("inbox: the request is answered in the agent's own UI, not over control")
	ErrMalformed         = errors.New("inbox: the request is malformed and cannot be answered")
	ErrTooManyControls   = errors.New("inbox: the request has more controls than this inbox offers as a form")
	ErrInFlight          = errors.New("inbox: an answer to this request is already on its way")
	ErrDuplicate         = errors.New("inbox: this form was already submitted")
	ErrInvalidSubmission = errors.New("inbox: invalid submission")
)

// ErrOtherInFlight is ErrInFlight for an answer no submission of this
// inbox sent (Card.Answering): another sender's, or one from this UI's
// source that its journal does not hold.
var ErrOtherInFlight = fmt.Errorf("%w: sent by another sender, or by this UI before its journal", ErrInFlight)

// ErrPeerQueued is ErrInFlight for another instance's answer on a journal
// replicas share, queued there until the relay is back (Card.Peer).
var ErrPeerQueued = fmt.Errorf("%w: queued on another instance", ErrInFlight)

// BeginSubmission records the operator's post s (its Token, CommandID,
// Answer, Form and By) for card id, atomically, and returns it with the
// card's request (Card, Key, Fields, Agent, Question), State sending, At
// and, with Options.Command, the command's exact bytes set: all of it
// journaled before it returns. The caller then sends exactly one
// command, s.CommandID (its Command bytes when set).
//
// A post carrying a token already used on the card returns the card's
// latest submission and ErrDuplicate: send nothing. Otherwise it refuses
// with ErrNotFound or what Card.CanAnswer says at the inbox clock. A new
// token after a rejected or failed submission starts a new one. s.Token and s.CommandID must be
// non-empty and the command id new (ErrInvalidSubmission).
//
// The journal write (a disk sync, about a millisecond) runs outside the
// inbox lock, so it holds up neither the feed's events nor other cards'
// posts and page reads: the card is reserved under the lock first (a
// second post meanwhile gets ErrInFlight, the same token ErrDuplicate),
// then journaled, then the submission is put on the card under the lock
// again. A journal error releases the reservation (ErrNotRecorded) and
// the card takes an answer again. Nothing can send the command before
// BeginSubmission returns it, so the journal still sees Record before any
// Settle of the same command.
func (in *Inbox) BeginSubmission(id CardID, s Submission) (Submission, error) {
	return in.BeginSubmissionWhile(id, s, nil)
}

// BeginSubmissionWhile is BeginSubmission, calling while (when not nil)
// with the submission to be journaled (its Command bytes made) once the
// card is reserved for it and before the journal write: what the caller
// does then overlaps the disk's sync (the UI chooses the card to show
// next and has the respond path subscribe to the command's acks, the
// command held until the journal kept it). while must not block; it is
// not called when the post is refused before the write.
func (in *Inbox) BeginSubmissionWhile(id CardID, s Submission, while func(Submission)) (Submission, error) {
	en, sub, err := in.reserve(id, s)
	for errors.Is(err, errBeingJournaled) {
		// The same form, posted again while its first post is being
		// journaled (a double click): its answer is that post's fate, so
		// wait for it. Kept: ErrDuplicate next time round; not kept: this
		// post is the first to be kept.
		<-en.journaledDone
		en, sub, err = in.reserve(id, s)
	}
	if err != nil {
		return sub, err
	}
	if in.opts.Command != nil {
		raw, cerr := in.opts.Command(sub)
		if cerr != nil {
			err = fmt.Errorf("%w: %w", ErrInvalidSubmission, cerr)
		}
		sub.Command = raw
	}
	if err == nil && while != nil {
		while(cloneSubmission(sub))
	}
	if err == nil && s.Replaces != "" {
		// "Answer differently": the replaced answer's way out of the live
		// answers (queued under the lock in reserve) is written first, or
		// the journal's one-live-answer rule refuses this one.
		ctx, cancel := context.WithTimeout(context.Background(), replaceFlushWait)
		if ferr := in.journalQ.flush(ctx); ferr != nil {
			err = fmt.Errorf("%w: %w", ErrNotRecorded, ferr)
		}
		cancel()
	}
	// Write ahead: the submission is kept before anything is sent.
	var posted *Submission
	if err == nil {
		if jerr := in.opts.Journal.Record(sub); jerr != nil {
			posted, err = in.notRecorded(sub, jerr)
		}
	}
	out, err := in.confirm(en, sub, err)
	if posted != nil {
		return in.adoptPosted(*posted), err
	}
	return out, err
}

// replaceFlushWait bounds how long "Answer differently" waits for the
// journal to write the replaced answer's state before the new one.
const replaceFlushWait = 10 * time.Second

// notRecorded says why the journal refused to record sub. A second live
// answer to the request (ErrInFlight) can only be another replica's on a
// shared journal, this inbox having reserved the card: the same form
// posted there first is ErrDuplicate, with that submission (the same 303
// on every replica); another form is ErrInFlight. Anything else is
// ErrNotRecorded.
func (in *Inbox) notRecorded(sub Submission, jerr error) (*Submission, error) {
	if !errors.Is(jerr, ErrInFlight) {
		return nil, fmt.Errorf("%w: %w", ErrNotRecorded, jerr)
	}
	if tj, ok := in.opts.Journal.(TokenJournal); ok {
		prev, found, lerr := tj.LookupToken(sub.Card, sub.Token)
		if lerr == nil && found {
			return &prev, ErrDuplicate
		}
	}
	return nil, fmt.Errorf("%w (another replica's): %w", ErrInFlight, jerr)
}

// errBeingJournaled is reserve's answer to the same form posted again
// while its first post is being journaled: BeginSubmission waits for it.
var errBeingJournaled = errors.New("inbox: this form's answer is being journaled")

// adoptPosted puts another replica's submission of the same form on its
// card, as the feed will when its command arrives, and returns it.
func (in *Inbox) adoptPosted(s Submission) Submission {
	in.mu.Lock()
	defer in.mu.Unlock()
	if en, ok := in.byID[s.Card]; ok {
		in.touch(en, in.adopt(en, s))
		in.commit()
	}
	return s
}

// Posted reports whether form token token was posted on card id, here
// or, on a journal replicas share (TokenJournal), on another replica: the
// same form posted again is answered as the first post was, even once
// its answer settled the card.
func (in *Inbox) Posted(id CardID, token string) bool {
	if token == "" {
		return false
	}
	in.mu.Lock()
	en, ok := in.byID[id]
	here := ok && en.tokens[token]
	in.mu.Unlock()
	if here || !ok {
		return here
	}
	tj, ok := in.opts.Journal.(TokenJournal)
	if !ok {
		return false
	}
	s, found, err := tj.LookupToken(id, token)
	if err != nil || !found {
		return false
	}
	in.adoptPosted(s)
	return true
}

// reserve checks, under the lock, that card id takes s now, and marks the
// card as having an answer being journaled. It returns the entry and the
// submission to journal, or the refusal (with the card's latest
// submission for ErrDuplicate).
func (in *Inbox) reserve(id CardID, s Submission) (*entry, Submission, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok {
		return nil, Submission{}, ErrNotFound
	}
	c := &en.card
	if s.Token != "" && en.reserved != nil && en.reserved.Token == s.Token {
		return en, Submission{}, errBeingJournaled
	}
	if s.Token != "" && en.tokens[s.Token] && c.Submission != nil {
		return nil, cloneSubmission(*c.Submission), ErrDuplicate
	}
	switch {
	case s.Token == "":
		return nil, Submission{}, fmt.Errorf("%w: no form token", ErrInvalidSubmission)
	case s.CommandID == "":
		return nil, Submission{}, fmt.Errorf("%w: no command id", ErrInvalidSubmission)
	case in.ours[s.CommandID] != nil || in.reserving[s.CommandID] != nil:
		return nil, Submission{}, fmt.Errorf("%w: command id already used", ErrInvalidSubmission)
	}

	now := in.opts.Now()
	in.touch(en, in.derive(en, now)) // the deadline may have passed since the last Sweep
	defer in.commit()
	if en.reserved != nil {
		return nil, Submission{}, ErrInFlight // another post is being journaled
	}
	replacing, err := in.replaceable(c, s, now)
	if err != nil {
		return nil, Submission{}, err
	}

	sub := cloneSubmission(s)
	sub.Card, sub.Key, sub.Fields = c.ID, c.Key, cloneRequest(c.Request).Fields
	sub.Agent, sub.Question = c.Agent, c.Request.Prompt
	sub.Kind, sub.Options, sub.Capture = c.Request.Kind, slices.Clone(c.Request.Options), c.Capture
	sub.Recorded, sub.RecordedAt = nil, time.Time{}
	sub.State, sub.Reason, sub.Detail = SubmissionSending, "", ""
	sub.At, sub.SettledAt = now, time.Time{}
	sub.Resumed = false
	held := cloneSubmission(sub)
	en.reserved = &held
	en.replacing = replacing
	if replacing != nil {
		// Out of the live answers before the new one is journaled (the
		// journal's one-live-answer-per-request rule holds): never sent
		// again, its own ack or record still settles it.
		en.was = *replacing
		in.touch(en, in.settle(replacing, SubmissionFailed, ReasonReplaced, "replaced by a different answer; the agent may still act on it"))
	}
	en.journaledDone = make(chan struct{})
	if in.reserving == nil {
		in.reserving = make(map[string]*entry)
	}
	in.reserving[sub.CommandID] = en
	return en, sub, nil
}

// replaceable is CanAnswer for post s on card c, with the one explicit
// exception: a post that names (Submission.Replaces) the card's owed
// answer (sent, no reply in time or the relay lost) replaces it, and that
// answer is returned. Any other post while an answer is in flight is
// ErrInFlight: no second answer by accident. The caller holds the lock.
func (in *Inbox) replaceable(c *Card, s Submission, now time.Time) (*Submission, error) {
	err := c.CanAnswer(now)
	if err == nil || s.Replaces == "" || !errors.Is(err, ErrInFlight) || errors.Is(err, ErrOtherInFlight) {
		return nil, err
	}
	if cur := c.Submission; cur.Owed() && cur.CommandID == s.Replaces {
		return cur, nil
	}
	return nil, err
}

// confirm ends en's reservation: with err nil it puts the journaled sub on
// the card as its latest submission and returns it; otherwise the card is
// as it was and err is returned.
func (in *Inbox) confirm(en *entry, sub Submission, err error) (Submission, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	en.reserved = nil
	close(en.journaledDone)
	delete(in.reserving, sub.CommandID)
	replaced := en.replacing
	en.replacing = nil
	if err != nil {
		if replaced != nil && replaced.State == SubmissionFailed && replaced.Reason == ReasonReplaced {
			// Not replaced after all: owed again, as it was.
			in.touch(en, in.settle(replaced, en.was.State, en.was.Reason, en.was.Detail))
			in.commit()
		}
		return Submission{}, err
	}
	if in.byID[sub.Card] != en {
		// Cannot happen while the reservation protects the card from
		// eviction; if it did, the journaled answer must not wait for a
		// card that is gone.
		in.queueSettle(sub.CommandID, SubmissionFailed, ReasonGone, "", in.opts.Now())
		return Submission{}, ErrNotFound
	}
	c := &en.card
	c.Submission = &sub
	in.keepSub(en, c.Submission)
	if en.ownIDs == nil {
		en.ownIDs = make(map[string]bool)
		en.tokens = make(map[string]bool)
	}
	en.ownIDs[sub.CommandID] = true
	en.tokens[sub.Token] = true
	in.ours[sub.CommandID] = en
	in.endClaim(en) // answered: nobody needs to be on it any more
	in.touch(en, true)
	in.commit()
	return cloneSubmission(sub), nil
}

// SettleSubmission reports what became of command commandID on card id:
// state SubmissionAccepted, SubmissionRejected or SubmissionFailed with
// the reason and detail, SubmissionQueued when the respond path holds it
// for want of a relay connection, or SubmissionSending again for a
// resend (with ReasonTimeout or ReasonRelayLost: sent, no reply yet, owed
// and sent again when a relay connection is back). It settles exactly
// the command it names, the card's latest or an earlier one of this
// inbox's (outcome.go), and once the agent decided (accepted or
// rejected) that decision stands.
func (in *Inbox) SettleSubmission(id CardID, commandID string, state SubmissionState, reason, detail string) {
	switch state {
	case SubmissionQueued, SubmissionSending, SubmissionAccepted, SubmissionRejected, SubmissionFailed:
	default:
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok {
		return
	}
	s := en.sub(commandID)
	if s == nil {
		return
	}
	if s != en.card.Submission && (state == SubmissionQueued || state == SubmissionSending) {
		return // an earlier answer is never put back on its way
	}
	in.touch(en, in.settle(s, state, reason, detail))
	in.commit()
}

// settle moves s to state, queues the change for the journal (off the
// lock, in order: journalwriter.go), and reports
// whether it changed. The agent's decision (accepted, rejected) is final;
// a failure or resend may still be followed by it, and so may a restored
// submission's not-sent or superseded (the UI's inference, not the
// agent's word).
func (in *Inbox) settle(s *Submission, state SubmissionState, reason, detail string) bool {
	now := in.opts.Now()
	if s.State == SubmissionAccepted || s.State == SubmissionRejected {
		return false
	}
	if (s.State == SubmissionNotSent || s.State == SubmissionSuperseded || s.State == SubmissionUnknown) &&
		state != SubmissionAccepted && state != SubmissionRejected {
		return false // restored and not sent again: only the agent's own decision changes that
	}
	if s.State == state && s.Reason == reason && s.Detail == detail {
		return false
	}
	if state == SubmissionQueued && s.State != SubmissionSending && s.State != SubmissionQueued {
		// Queued is said before the first write: an answer that already
		// failed or was sent never goes back to it.
		return false
	}
	s.State, s.Reason, s.Detail = state, reason, detail
	if state == SubmissionSending || state == SubmissionQueued {
		s.SettledAt = time.Time{}
	} else {
		s.SettledAt = now
	}
	in.queueSettle(s.CommandID, state, reason, detail, now)
	return true
}

// ReleaseQueued is asked by the respond path right before it writes a
// command it held: one queued for want of a relay connection, or one
// owed (sent, no reply yet: Submission.Owed, or restored after a
// restart) that it sends again now a relay connection is back. True
// means send it now, and the submission is sending again. It is false,
// and nothing may be sent, when the command is no longer the card's
// latest answer or no longer waits (the agent decided, or it was
// superseded, replaced or found too old meanwhile), when the request
// settled, expired or its session ended (SubmissionSuperseded), or when
// the answer is older than Options.QueueMaxAge: the agent may not
// remember a command id that old, and the operator's answer may no
// longer apply (SubmissionNotSent for one never sent, SubmissionUnknown
// for one that was). The card says which.
func (in *Inbox) ReleaseQueued(id CardID, commandID string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok || en.card.Submission == nil || en.card.Submission.CommandID != commandID {
		return false
	}
	s := en.card.Submission
	switch s.State {
	case SubmissionQueued, SubmissionSending:
	default:
		return false
	}
	now := in.opts.Now()
	in.touch(en, in.derive(en, now))
	defer in.commit()
	switch {
	case s.State != SubmissionQueued && s.State != SubmissionSending:
		return false // derive settled it (its request closed)
	case en.card.Closed(now) != nil:
		reason := ""
		if s.Owed() {
			reason = s.Reason // sent: its words say so
		}
		in.touch(en, in.settle(s, SubmissionSuperseded, reason, ""))
		return false
	case in.queueTooOld(s, now):
		in.touch(en, in.settleTooOld(s))
		return false
	}
	in.touch(en, in.settle(s, SubmissionSending, "", ""))
	return true
}

// settleTooOld ends a waiting submission older than the resend limit:
// not sent when it never left (queued), unknown when it may have.
func (in *Inbox) settleTooOld(s *Submission) bool {
	if s.State == SubmissionQueued {
		return in.settle(s, SubmissionNotSent, ReasonTooOld, "")
	}
	return in.settle(s, SubmissionUnknown, ReasonTooOld, "")
}

// queueTooOld reports whether a queued submission has waited past
// Options.QueueMaxAge (zero: no limit).
func (in *Inbox) queueTooOld(s *Submission, now time.Time) bool {
	return in.opts.QueueMaxAge > 0 && now.Sub(s.At) > in.opts.QueueMaxAge
}

// settleQueued ends a queued submission the relay did not come back for
// in time: superseded when its request closed (settled, expired, session
// ended), not sent when it passed Options.QueueMaxAge. An owed one
// (Submission.Owed, sent and waiting for a relay connection to send it
// again), of the card's or replaced, is superseded when its request
// closed without the agent's record crediting it. It reports whether
// anything changed. The caller holds the lock, after derive.
func (in *Inbox) settleQueued(en *entry, now time.Time) bool {
	changed := false
	if !en.card.State.Open() {
		for _, s := range en.subs {
			if s.Owed() && s != en.card.Submission {
				changed = in.settle(s, SubmissionSuperseded, s.Reason, "") || changed
			}
		}
	}
	s := en.card.Submission
	switch {
	case s == nil:
	case s.Owed() && !en.card.State.Open():
		// Sent and owed: the reason stays, so its words say it was sent.
		changed = in.settle(s, SubmissionSuperseded, s.Reason, "") || changed
	case s.Owed() && in.queueTooOld(s, now):
		changed = in.settle(s, SubmissionUnknown, ReasonTooOld, "") || changed
	case s.State != SubmissionQueued:
	case !en.card.State.Open():
		changed = in.settle(s, SubmissionSuperseded, "", "") || changed
	case in.queueTooOld(s, now):
		changed = in.settle(s, SubmissionNotSent, ReasonTooOld, "") || changed
	}
	return changed
}
