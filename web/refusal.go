package web

import (
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// What a refused answer post tells the operator.
const (
	msgGone       = "This question is not in the inbox any more. Reload the page."
	msgWatchOnly  = "This UI has no control token for the relay, so it cannot send answers. Your answer was not sent."
	msgNoToken    = "This form is missing its token. Reload the page and send your answer again."
	msgInFlight   = "An answer to this question is already on its way to the agent. Wait for its reply before sending another."
	msgExpired    = "This question expired before your answer was sent. Nothing was sent to the agent."
	msgOOB        = "This question is answered in the agent's own interface, not here. Nothing was sent."
	msgMalformed  = "This request is malformed, so it cannot be answered here. Nothing was sent."
	msgTimedOut   = "The agent stopped waiting for this answer (timed out). Nothing was sent."
	msgEnded      = "The agent's session ended before your answer was sent. Nothing was sent."
	msgAnsweredBy = "This question was already answered by %s. Nothing was sent."
	msgAnswered   = "This question was already answered elsewhere. Nothing was sent."
)

// closedReason reports whether card can no longer take an answer at now,
// with the refusal's code and message. It reads a snapshot; the inbox's
// BeginSubmission decides again atomically.
func closedReason(c inbox.Card, now time.Time) (code, msg string, closed bool) {
	switch {
	case c.Malformed != "":
		return "malformed", msgMalformed, true
	case c.Informational || !c.Request.Controllable():
		return "informational", msgOOB, true
	case c.State == inbox.StateExpired || (c.State.Open() && !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt)):
		return "expired", msgExpired, true
	case !c.State.Open():
		return "settled", settledMessage(c), true
	}
	return "", "", false
}

// beginRefusal maps a BeginSubmission refusal to its code and message.
func beginRefusal(err error, c inbox.Card) (code, msg string, ok bool) {
	switch {
	case errors.Is(err, inbox.ErrInFlight):
		return "in_flight", msgInFlight, true
	case errors.Is(err, inbox.ErrExpired):
		return "expired", msgExpired, true
	case errors.Is(err, inbox.ErrSettled):
		return "settled", settledMessage(c), true
	case errors.Is(err, inbox.ErrInformational):
		return "informational", msgOOB, true
	case errors.Is(err, inbox.ErrMalformed):
		return "malformed", msgMalformed, true
	}
	return "", "", false
}

// settledMessage says why a settled card can no longer be answered.
func settledMessage(c inbox.Card) string {
	switch c.State {
	case inbox.StateTimedOut:
		return msgTimedOut
	case inbox.StateEnded:
		return msgEnded
	}
	if c.Recorded != nil && c.Recorded.By != "" {
		return fmt.Sprintf(msgAnsweredBy, c.Recorded.By)
	}
	return msgAnswered
}
