package respond

import "github.com/aepforms/aepforms/internal/inbox"

// Reporter receives what became of every submitted command, exactly once
// per command: inbox.SubmissionAccepted, SubmissionRejected (the agent's
// control.rejected reason and detail) or SubmissionFailed (the relay's
// error code verbatim: no-route, ambiguous, unsupported, unauthorized or a
// subscription refusal such as limit-exceeded; or inbox.ReasonTimeout,
// inbox.ReasonUnreachable). It is called from the client's goroutines,
// possibly concurrently, and should return quickly. *inbox.Inbox fits.
type Reporter interface {
	SettleSubmission(card inbox.CardID, commandID string, state inbox.SubmissionState, reason, detail string)
}

// Releaser decides whether a queued command is still to be sent, now that
// a relay connection is up; false: it is not sent, and the Releaser has
// already settled it. Called from the client's goroutines.
type Releaser interface {
	ReleaseQueued(card inbox.CardID, commandID string) bool
}

// outcome is what became of one command: a SubmissionState with the
// reason and detail the Reporter receives.
type outcome struct {
	State          inbox.SubmissionState
	Reason, Detail string
}

// Relay error codes on the command path (AEP-0004 §4.2), reported verbatim.
const (
	CodeNoRoute      = "no-route"
	CodeAmbiguous    = "ambiguous"
	CodeUnsupported  = "unsupported"
	CodeUnauthorized = "unauthorized"
	// CodeUnavailable: the relay could not route it yet and sent it
	// nowhere; it says to send it again.
	CodeUnavailable = "unavailable"
)

// Details of the local failures, worded for the operator.
const (
	detailUnreachable = "not sent; your answer is kept"
	detailLost        = "the relay connection was lost after sending; it is sent again when the relay is back"
	detailHeld        = "queued while the relay was away, then not sent: the request closed or the answer got too old"
	detailStopped     = "the UI stopped before the agent acknowledged the answer; the agent may still act on it"
	detailNoAgent     = "the agent is not connected to the relay; it is sent when the agent reconnects"
)

type discardReporter struct{}

func (discardReporter) SettleSubmission(inbox.CardID, string, inbox.SubmissionState, string, string) {
}
