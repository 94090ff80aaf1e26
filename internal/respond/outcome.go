package respond

// Reporter receives the outcome of every submitted command, exactly once
// per command. It is called from the client's goroutines, possibly
// concurrently, and should return quickly. The app adapts it to the inbox
// (respond does not import inbox).
type Reporter interface {
	Outcome(o Outcome)
}

// Outcome is what became of one command.
type Outcome struct {
	CardID    string // the Submission's CardID, as given
	CommandID string // the command's envelope id
	State     string // StateAccepted, StateRejected or StateFailed
	// Reason is, for rejected, the agent's control.rejected reason
	// (invalid, refused, busy, unsupported, unauthorized); for failed, the
	// relay's error code verbatim (no-route, ambiguous, unsupported,
	// unauthorized, or a subscription refusal such as limit-exceeded),
	// ReasonTimeout or ReasonUnreachable.
	Reason string
	// Detail is the agent's or the relay's detail as given, or, for the
	// local reasons, a sentence for the operator.
	Detail string
}

// Outcome states.
const (
	StateAccepted = "accepted" // control.accepted: the agent will try; outcome events follow
	StateRejected = "rejected" // control.rejected from the agent
	StateFailed   = "failed"   // relay error frame, local ack timeout, or relay unreachable
)

// Local failure reasons (never on the wire).
const (
	// ReasonTimeout: the command was sent but no ack came within the ack
	// window, after the retries and a replay check. The agent may still act.
	ReasonTimeout = "timeout"
	// ReasonUnreachable: the command could not be sent (no relay connection).
	ReasonUnreachable = "unreachable"
)

// Relay error codes on the command path (AEP-0004 §4.2), reported verbatim.
const (
	CodeNoRoute      = "no-route"
	CodeAmbiguous    = "ambiguous"
	CodeUnsupported  = "unsupported"
	CodeUnauthorized = "unauthorized"
)

// Details of the local failures, worded for the operator.
const (
	detailUnreachable = "not sent; your answer is kept"
	detailLost        = "the relay connection was lost after sending; the agent may still act on it"
	detailStopped     = "the UI stopped before the agent acknowledged the answer; the agent may still act on it"
)

type discardReporter struct{}

func (discardReporter) Outcome(Outcome) {}
