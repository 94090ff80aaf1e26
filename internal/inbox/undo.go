package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Undo: an answer's command held for a few seconds after the send, so the
// operator who sent it can take it back (answer.Service, --undo-window).
// The answer is journaled at once, as sending; only its command waits.
// The hold is this process's alone and never journaled: a crash while
// it holds leaves the answer journaled as sending, and the restart sends
// it (restore.go), never loses it.

// SubmissionWithdrawn: the operator took the answer back (Undo) while
// its command was held; nothing was sent, and the form opens again with
// what they had chosen.
const SubmissionWithdrawn SubmissionState = "withdrawn"

// LineHeld is the state line of this UI's answer whose command is held
// for Undo; LineUndone the line of one taken back.
const (
	LineHeld   Line = "held"
	LineUndone Line = "undone"
)

// ErrNotHeld is Withdraw's refusal: the command is not held here (any
// more): it has left (its window passed), it was never held by this
// instance (another replica sending it), or the card no longer has it.
var ErrNotHeld = errors.New("inbox: the answer is not held here for undo; it has left or another instance holds it")

// withdrawFlushWait bounds how long Withdraw waits for the journal to
// write the withdrawn state.
const withdrawFlushWait = 10 * time.Second

// Hold marks card id's latest submission, command commandID, as held
// for Undo until until (Submission.HeldUntil): the page offers Undo
// meanwhile. False when the card's latest answer is not that command
// still sending.
func (in *Inbox) Hold(id CardID, commandID string, until time.Time) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.latest(id, commandID)
	if s == nil || s.State != SubmissionSending {
		return false
	}
	s.HeldUntil = until
	in.touch(in.byID[id], true)
	in.commit()
	return true
}

// Unhold ends the hold of command commandID on card id: its command
// leaves now, and the page no longer offers Undo.
func (in *Inbox) Unhold(id CardID, commandID string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.latest(id, commandID)
	if s == nil || s.HeldUntil.IsZero() {
		return
	}
	s.HeldUntil = time.Time{}
	in.touch(in.byID[id], true)
	in.commit()
}

// Withdraw takes back card id's held answer, command commandID: it is
// settled SubmissionWithdrawn and that state journaled before Withdraw
// returns (the card then takes a new answer, which the journal's one
// live answer per request would otherwise refuse). ErrNotHeld when the
// command is not held (any more); the caller must not send it after a
// nil return. A journal that cannot write the state in time is
// ErrNotRecorded: the answer is withdrawn here all the same, and the
// journal writes the state when it can.
func (in *Inbox) Withdraw(id CardID, commandID string) error {
	in.mu.Lock()
	s := in.latest(id, commandID)
	if s == nil || s.HeldUntil.IsZero() || s.State != SubmissionSending {
		in.mu.Unlock()
		return ErrNotHeld
	}
	s.HeldUntil = time.Time{}
	in.touch(in.byID[id], in.settle(s, SubmissionWithdrawn, "", ""))
	in.commit()
	in.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), withdrawFlushWait)
	defer cancel()
	if err := in.journalQ.flush(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return nil
}

// latest is card id's latest submission when it is command commandID,
// else nil. The caller holds the lock.
func (in *Inbox) latest(id CardID, commandID string) *Submission {
	en, ok := in.byID[id]
	if !ok || en.card.Submission == nil || en.card.Submission.CommandID != commandID {
		return nil
	}
	return en.card.Submission
}
