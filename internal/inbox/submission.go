package inbox

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of BeginSubmission.
var (
	ErrNotFound          = errors.New("inbox: no such card")
	ErrSettled           = errors.New("inbox: the request is no longer open (answered, resolved, timed out or its session ended)")
	ErrExpired           = errors.New("inbox: the request is past its expires_at")
	ErrInformational     = errors.New("inbox: the request is answered in the agent's own UI, not over control")
	ErrMalformed         = errors.New("inbox: the request is malformed and cannot be answered")
	ErrInFlight          = errors.New("inbox: an answer to this request is already on its way")
	ErrDuplicate         = errors.New("inbox: this form was already submitted")
	ErrInvalidSubmission = errors.New("inbox: invalid submission")
)

// BeginSubmission records the operator's post s for card id, atomically,
// and returns it with State sending and At set. The caller then sends
// exactly one command, s.CommandID.
//
// A post carrying a token already used on the card returns the card's
// latest submission and ErrDuplicate: send nothing. Otherwise it refuses
// with ErrNotFound, ErrMalformed, ErrInformational, ErrExpired (by the
// inbox clock at this call), ErrSettled, or ErrInFlight while the latest
// submission is sending or accepted. A new token after a rejected or
// failed submission starts a new one. s.Token and s.CommandID must be
// non-empty and the command id new (ErrInvalidSubmission).
func (in *Inbox) BeginSubmission(id CardID, s Submission) (Submission, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok {
		return Submission{}, ErrNotFound
	}
	c := &en.card
	if s.Token != "" && en.tokens[s.Token] && c.Submission != nil {
		return cloneSubmission(*c.Submission), ErrDuplicate
	}
	switch {
	case s.Token == "":
		return Submission{}, fmt.Errorf("%w: no form token", ErrInvalidSubmission)
	case s.CommandID == "":
		return Submission{}, fmt.Errorf("%w: no command id", ErrInvalidSubmission)
	case in.ours[s.CommandID] != nil:
		return Submission{}, fmt.Errorf("%w: command id already used", ErrInvalidSubmission)
	}

	now := in.opts.Now()
	in.touch(en, in.derive(en, now)) // the deadline may have passed since the last Sweep
	defer in.commit()
	switch {
	case c.Malformed != "":
		return Submission{}, ErrMalformed
	case c.Informational:
		return Submission{}, ErrInformational
	case c.State == StateExpired:
		return Submission{}, ErrExpired
	case !c.State.Open():
		return Submission{}, ErrSettled
	case c.Submission != nil && (c.Submission.State == SubmissionSending || c.Submission.State == SubmissionAccepted):
		return Submission{}, ErrInFlight
	}

	sub := cloneSubmission(s)
	sub.State, sub.Reason, sub.Detail = SubmissionSending, "", ""
	sub.At, sub.SettledAt = now, time.Time{}
	c.Submission = &sub
	if en.ownIDs == nil {
		en.ownIDs = make(map[string]bool)
		en.tokens = make(map[string]bool)
	}
	en.ownIDs[sub.CommandID] = true
	en.tokens[sub.Token] = true
	in.ours[sub.CommandID] = en
	in.touch(en, true)
	return cloneSubmission(sub), nil
}

// SettleSubmission reports what became of command commandID on card id:
// state SubmissionAccepted, SubmissionRejected or SubmissionFailed with
// the reason and detail, or SubmissionSending again for a resend. It is
// ignored unless commandID is the card's latest submission, and once the
// agent decided (accepted or rejected) that decision stands.
func (in *Inbox) SettleSubmission(id CardID, commandID string, state SubmissionState, reason, detail string) {
	switch state {
	case SubmissionSending, SubmissionAccepted, SubmissionRejected, SubmissionFailed:
	default:
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok || en.card.Submission == nil || en.card.Submission.CommandID != commandID {
		return
	}
	in.touch(en, settle(en.card.Submission, state, reason, detail, in.opts.Now()))
	in.commit()
}

// settle moves s to state and reports whether it changed. The agent's
// decision (accepted, rejected) is final; a failure or resend may still be
// followed by it.
func settle(s *Submission, state SubmissionState, reason, detail string, now time.Time) bool {
	if s.State == SubmissionAccepted || s.State == SubmissionRejected {
		return false
	}
	if s.State == state && s.Reason == reason && s.Detail == detail {
		return false
	}
	s.State, s.Reason, s.Detail = state, reason, detail
	if state == SubmissionSending {
		s.SettledAt = time.Time{}
	} else {
		s.SettledAt = now
	}
	return true
}
