package inbox

import (
	"fmt"
	"time"
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
//     settled, expired or its session ended first), not sent as too old
//     (the agent may no longer remember its command id, AEP-0004 §2.3),
//     or not sent as gone (the relay no longer holds the request).

// Restore loads the journal's submissions still waiting for the agent,
// to be put on their cards as the feed brings them. Call it once, before
// the feed starts. It returns how many were loaded. Of two for one card
// (a journal from before one-answer-in-flight), the older is superseded
// at once.
func (in *Inbox) Restore() (int, error) {
	subs, err := in.opts.Journal.Unsettled()
	if err != nil {
		return 0, fmt.Errorf("inbox: restore: %w", err)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.restored == nil {
		in.restored = make(map[CardID]*Submission)
	}
	now := in.opts.Now()
	for i := range subs {
		s := cloneSubmission(subs[i])
		s.Resumed = true
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
	en.card.Submission = s
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
// maxAge is the oldest a submission may be to be sent again, measured
// from its post on the inbox clock; zero or less sends none again. Later
// calls return nothing.
func (in *Inbox) Resume(maxAge time.Duration) []Submission {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.resumed {
		return nil
	}
	in.resumed = true
	now := in.opts.Now()
	var out []Submission
	for _, rs := range in.resumable {
		id := rs.CommandID
		en := in.ours[id]
		if en == nil {
			// Its card left the inbox (its bounds) before the feed caught up.
			in.settleGone(rs, now)
			continue
		}
		if en.card.Submission != rs {
			continue // a newer post replaced it
		}
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
			in.touch(en, in.settle(s, SubmissionNotSent, ReasonTooOld, ""))
		default:
			if s.State == SubmissionQueued {
				// Queued when the last serve stopped: it goes to the
				// respond path now, which says "queued" again if the
				// relay is still away.
				in.touch(en, in.settle(s, SubmissionSending, "", ""))
			}
			out = append(out, cloneSubmission(*s))
		}
	}
	// What never found its card: the relay no longer holds the request.
	for _, s := range in.restored {
		in.settleGone(s, now)
	}
	clear(in.restored)
	in.resumable = nil
	in.commit()
	return out
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
	if s.State == SubmissionSending || s.State == SubmissionQueued {
		in.journalSettle(s.CommandID, SubmissionNotSent, ReasonGone, "", now)
	}
}

// journalSettle keeps a state change of a submission on no card.
func (in *Inbox) journalSettle(commandID string, state SubmissionState, reason, detail string, at time.Time) {
	if err := in.opts.Journal.Settle(commandID, state, reason, detail, at); err != nil {
		in.noteJournalError(err)
	}
}
