package inbox

import "time"

// The rules of answerability live here and nowhere else: the answer
// handler, BeginSubmission, the lifecycle, the view's state line and the
// page script (through the deadline the server renders) all ask these.

// Expired reports whether the request's expires_at has passed at now.
func (c *Card) Expired(now time.Time) bool {
	return !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt)
}

// Left is how long the request has until its expires_at at now: zero
// once it has passed, and for a request without one.
func (c *Card) Left(now time.Time) time.Duration {
	if c.ExpiresAt.IsZero() || c.Expired(now) {
		return 0
	}
	return c.ExpiresAt.Sub(now)
}

// Open reports whether the request is still open at now: pending or
// routed, and its deadline (if any) not passed.
func (c *Card) Open(now time.Time) bool { return c.State.Open() && !c.Expired(now) }

// Controllable reports whether the request takes its answer over control
// at all (not an informational request answered in the agent's own UI).
func (c *Card) Controllable() bool { return !c.Informational && c.Request.Controllable() }

// InFlight reports whether the operator's latest answer still waits for
// the agent.
func (c *Card) InFlight() bool { return c.Submission.InFlight() }

// Answering is the first command on the card that no submission of this
// inbox sent (Responders) and that is still in flight: while there is
// one, the form is locked (CanAnswer says ErrOtherInFlight). Nil when
// none. It points into c.Responders.
func (c *Card) Answering() *Responder {
	for i := range c.Responders {
		if c.Responders[i].InFlight() {
			return &c.Responders[i]
		}
	}
	return nil
}

// CanAnswer reports whether an answer may be sent for the card at now: nil,
// or the sentinel that says why not, in this order: ErrMalformed,
// ErrInformational, ErrTooManyControls, ErrExpired, ErrSettled,
// ErrInFlight, ErrOtherInFlight, ErrPeerQueued (both also ErrInFlight).
func (c *Card) CanAnswer(now time.Time) error {
	if err := c.closed(now); err != nil {
		return err
	}
	if c.InFlight() {
		return ErrInFlight
	}
	if c.Answering() != nil {
		return ErrOtherInFlight
	}
	if c.Peer != nil {
		return ErrPeerQueued
	}
	return nil
}

// closed is CanAnswer without the in-flight rule: why the request itself
// can no longer take an answer from anyone.
func (c *Card) closed(now time.Time) error {
	switch {
	case c.Malformed != "":
		return ErrMalformed
	case !c.Controllable():
		return ErrInformational
	case c.OverBudget:
		return ErrTooManyControls
	case c.State == StateExpired || (c.State.Open() && c.Expired(now)):
		return ErrExpired
	case !c.State.Open():
		return ErrSettled
	}
	return nil
}

// Closed reports whether the request can no longer take an answer from
// anyone at now (CanAnswer without the in-flight rule), and the sentinel
// that says why.
func (c *Card) Closed(now time.Time) error { return c.closed(now) }

// Posted reports whether token is the form token of the card's latest
// submission: the same form posted again (a double click, a resubmit,
// even after the answer settled the card) is that submission, not a new
// one.
func (c *Card) Posted(token string) bool {
	return token != "" && c.Submission != nil && c.Submission.Token == token
}
