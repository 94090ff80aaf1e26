// Package inbox is the domain of aepforms: one Card per AEP
// attention.requested, its lifecycle derived only from events, the
// operator's local submission state, and fan-out of changes to browser
// subscribers. It uses the standard library and internal/aep only.
package inbox

import (
	"net/url"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// CardID is a card's opaque, URL-safe, stable identifier, derived from its
// RequestKey (never the raw agent-controlled ids).
type CardID string

// RequestKey identifies a request: its emitter's source, its session and its id.
type RequestKey struct {
	Source, Session, RequestID string
}

// State is where a request is in its lifecycle, as the events (and the
// inbox clock for expires_at) say.
type State string

// States. Pending and Routed are open; the rest are settled.
const (
	StatePending  State = "pending"       // asked, no outcome yet
	StateRouted   State = "routed"        // attention.routed seen, still open
	StateAnswered State = "answered"      // attention.answered seen, resolved not yet
	StateResolved State = "resolved"      // attention.resolved (see Card.Resolution)
	StateTimedOut State = "timed-out"     // attention.timeout
	StateExpired  State = "expired"       // expires_at passed with no outcome (inbox clock)
	StateEnded    State = "session-ended" // session.ended while still open
)

// Open reports whether the request may still be answered.
func (s State) Open() bool { return s == StatePending || s == StateRouted }

// SurfaceVia is the via of the attention.routed this UI emits for each
// delivery to a human surface (Web Push, a team's chat). Those hops are
// not facts of the card: its Routing (team, reminders, escalation) says
// where the question went, in the operator's words.
const SurfaceVia = "aepforms"

// Route is one attention.routed hop: To and Via from its data, Source and
// Agent the router's own identity.
type Route struct {
	To, Via, Source string
	Agent           string
}

// Recorded is the answer as attention.answered recorded it.
type Recorded struct {
	Answer  aep.Answer
	By, Via string
	// Capture is the answered event's capture level: values above it were
	// withheld by the emitter (say so, never show them as blank).
	Capture aep.Capture
	EventID string
	Time    string
	// Cause is the answered event's cause: the command (or its ack) that
	// produced the answer, when the emitter names it.
	Cause string
	// Malformed is non-empty when the answered data did not decode; Answer
	// then holds what did.
	Malformed string
}

// Responder is a control.attention.respond for the card's request seen on
// the feed that no submission of this inbox sent: another sender's
// (another UI, a script), or one from this UI's own source that its
// journal does not hold. It carries the target's ack when one was seen.
type Responder struct {
	CommandID, Agent, Source string
	Ack                      SubmissionState // "" (no ack seen), SubmissionAccepted or SubmissionRejected
	Reason                   string          // the nack reason when rejected

	// By is who sent it, as the command names them: its data's "by"
	// when given, else the operator in an agent attribute of the form
	// "{ui}/{operator}" (how aepforms sends), else the agent attribute.
	By string
	// Answer is what was sent, as the command's capture let it carry
	// (Capture): values above it are withheld, not blank.
	Answer  aep.Answer
	Capture aep.Capture
	// Own is true for a command from one of Options.OwnSources that the
	// journal does not hold (a journal deleted or replaced): an answer
	// this UI already sent and no longer remembers.
	Own bool
	// SeenAt is when the inbox first saw the command (inbox clock); its
	// ack window counts from there.
	SeenAt time.Time
	// Silent is true when no ack came within the ack window after SeenAt
	// (Options.AckWindow): the agent did not take it, and the form opens
	// again. An ack arriving later still counts.
	Silent bool
}

// InFlight reports whether the command may still be acted on: accepted
// (waiting for the outcome), or not acked yet within its ack window.
func (r *Responder) InFlight() bool {
	return r.Ack == SubmissionAccepted || (r.Ack == "" && !r.Silent)
}

// SubmissionState is the fate of the operator's own post, as the respond
// path and the acks report it.
type SubmissionState string

// Submission states.
const (
	// SubmissionQueued: journaled, but the respond path had no relay
	// connection to send it on; it is sent once the relay is back, unless
	// the request settles, expires or its session ends first
	// (SubmissionSuperseded), or it outlives Options.QueueMaxAge
	// (SubmissionNotSent, ReasonTooOld). Nothing has reached the relay.
	SubmissionQueued   SubmissionState = "queued"
	SubmissionSending  SubmissionState = "sending"  // handed to a live relay connection or on the wire, no ack yet
	SubmissionAccepted SubmissionState = "accepted" // control.accepted; waiting for the outcome events
	SubmissionRejected SubmissionState = "rejected" // control.rejected (Reason, Detail from the agent)
	SubmissionFailed   SubmissionState = "failed"   // relay error frame, local ack timeout or relay unreachable
	// SubmissionNotSent: restored after a restart but not sent again
	// (Reason ReasonTooOld or ReasonGone); the request may still be open.
	SubmissionNotSent SubmissionState = "not-sent"
	// SubmissionSuperseded: restored after a restart, but the request had
	// settled, expired or its session ended first: nothing more is sent.
	SubmissionSuperseded SubmissionState = "superseded"
	// SubmissionUnknown: the command may have left (it was sent, or
	// journaled as sending when the process died) and nothing says what
	// the agent did with it, and it is not sent again: its request is no
	// longer in the relay after a restart (ReasonRestart), or it got
	// older than Options.QueueMaxAge while owed (ReasonTooOld). The
	// agent's own record or ack still settles it.
	SubmissionUnknown SubmissionState = "unknown"
)

// Submission is one operator post that becomes exactly one command. It is
// the one type on the answer path: the answer handler asks the inbox to
// begin it, the respond path sends it, and what became of the command
// comes back as its State.
type Submission struct {
	Card CardID
	// Key is the request answered: the command's session, subject and cause.
	Key RequestKey
	// Fields are the request's field specs; the command's capture level
	// follows them.
	Fields    []aep.FieldSpec
	Token     string     // the form token the post carried (one command per token)
	CommandID string     // the control.attention.respond envelope id
	Answer    aep.Answer // what is sent
	Form      url.Values // the post as the operator made it, kept to re-render their input
	By        string     // operator name, when known
	State     SubmissionState
	Reason    string    // nack reason, relay error code ("no-route", ...), ReasonTimeout or ReasonUnreachable
	Detail    string    // the agent's or relay's detail, as given
	At        time.Time // when the post was recorded (inbox clock)
	SettledAt time.Time // when State last left SubmissionQueued/SubmissionSending (inbox clock); zero while queued or sending

	// Agent and Question are the request's agent attribute and prompt, as
	// the card had them when the post was recorded: what the answer
	// journal keeps so its history reads without the card.
	Agent, Question string
	// Kind, Options and Capture are the request's kind, options and
	// capture level as the card had them: with Fields and Question they
	// are enough to show the answer by its labels ("Allow once", not
	// "allow") and the card again, settled, after a restart.
	Kind    string
	Options []aep.Option
	Capture aep.Capture

	// Command is the exact command envelope, built once before the
	// submission is journaled (Options.Command) and sent unchanged on
	// every transmission, before and after a restart. Empty when the inbox
	// has no builder: the respond path builds it then.
	Command []byte
	// Recorded is what the agent recorded (attention.answered) for this
	// very answer, and RecordedAt when the inbox saw it (inbox clock); nil
	// until then. Once set, the submission is settled for good: the
	// journal no longer lists it as waiting (Journal.Unsettled), and it
	// is among the settled cards shown again after a restart
	// (Journal.Recent).
	Recorded   *Recorded
	RecordedAt time.Time
	// Resumed is true for a submission restored from the journal after a
	// restart (Inbox.Restore): its card shows who sent it and when.
	Resumed bool
	// Replaces is, on a post, the command id of the card's owed answer
	// (Owed: sent, no reply) that the operator explicitly replaces with
	// this different one ("Answer differently"): BeginSubmission then
	// takes it although that answer is in flight, and settles that one
	// failed, ReasonReplaced (not sent again; the agent may still act on
	// it). Without it a second answer is refused (ErrInFlight).
	Replaces string
	// HeldUntil is, while this process holds the command for Undo
	// (Inbox.Hold), when it leaves; zero once it left or was never held.
	// Never journaled: after a restart nothing is held.
	HeldUntil time.Time
}

// InFlight reports whether the submission still waits for the agent:
// queued, sent or accepted, with no decision that reopens the form. A
// queued answer counts: it will be sent, so a second one must not be.
func (s *Submission) InFlight() bool {
	return s != nil && (s.State == SubmissionQueued || s.State == SubmissionSending || s.State == SubmissionAccepted)
}

// Local failure reasons of a submission (never on the wire).
const (
	// ReasonTimeout: the command was sent but no ack came within the ack
	// window, after the retries and a replay check. The agent may still act.
	ReasonTimeout = "timeout"
	// ReasonUnreachable: the command could not be sent (no relay connection).
	ReasonUnreachable = "unreachable"
	// ReasonTooOld: a restored submission older than the resend limit
	// (Inbox.Resume's maxAge) is not sent again: the agent may no longer
	// remember its command id.
	ReasonTooOld = "too-old"
	// ReasonGone: a restored submission whose request the relay no
	// longer holds (no card after the feed caught up).
	ReasonGone = "gone"
	// ReasonRelayLost: with SubmissionSending, the command was sent and
	// the relay connection ended before the agent's reply: it is owed,
	// and sent again (same id, same bytes) when a connection is back.
	ReasonRelayLost = "relay-lost"
	// ReasonRestart: with SubmissionSending, a submission restored after
	// a restart that Resume has not sent again yet (in memory only, never
	// journaled); with SubmissionUnknown, one sent before the restart
	// whose request the relay no longer holds.
	ReasonRestart = "restart"
	// ReasonNoRoute: with SubmissionQueued, the relay refused the command
	// no-route (the relay's own code): its agent is not on the relay,
	// and it is sent when the agent is back (still within the resend
	// limit, its request still open).
	ReasonNoRoute = "no-route"
	// ReasonReplaced: with SubmissionFailed, an owed answer the operator
	// replaced by a different one ("Answer differently"): it is not sent
	// again, and the agent may still act on it.
	ReasonReplaced = "replaced"
)

// Owed reports whether the submission was sent and waits for the
// agent's reply with none in time (ReasonTimeout) or with the relay
// connection lost (ReasonRelayLost): it is sent again whenever a relay
// connection comes back, and only "Answer differently" lets another
// answer go.
func (s *Submission) Owed() bool {
	return s != nil && s.State == SubmissionSending && (s.Reason == ReasonTimeout || s.Reason == ReasonRelayLost)
}

// Card is one request as the operator sees it. Cards returned by the Inbox
// are copies; changing them changes nothing.
type Card struct {
	ID  CardID
	Key RequestKey

	Agent, Run string // the request's agent and run attributes (its source and session are in Key)
	Capture    aep.Capture
	Severity   aep.Severity
	AskedAt    time.Time // the request's time attribute (display only)
	ReceivedAt time.Time // when the inbox first saw it (inbox clock)
	EventID    string    // the attention.requested id
	// Tool is the tool the request asks about: the name in the
	// tool.requested event its cause names, when the inbox saw it first
	// ("" otherwise).
	Tool string

	Request aep.Request
	// Shape is what the request asks (ShapeOf), set with Request: cards
	// of one shape can be answered together.
	Shape     Shape
	Malformed string // non-empty: why the request is not a valid form (shown, not answerable)
	// Controls is how many form controls the request needs (Controls);
	// OverBudget is true when that is more than the inbox offers as a form
	// (Options.MaxControls): shown read-only, answered in the agent's own
	// interface.
	Controls   int
	OverBudget bool
	ExpiresAt  time.Time // zero when the request has no expires_at

	State         State
	Informational bool // respond_via without control: shown, never submitted
	Routes        []Route
	Recorded      *Recorded // from attention.answered
	Resolution    string    // from attention.resolved: answered|auto|dismissed
	LatencyMS     *int64
	TimeoutMS     *int64 // attention.timeout after_ms
	SessionEnded  bool

	// Responders are other senders' commands for this request, in arrival order.
	Responders []Responder
	// AnsweredElsewhere is true when Outcome holds an answer that no
	// submission of this inbox caused (another operator, another UI, oob).
	AnsweredElsewhere bool

	Submission *Submission // the operator's latest post, nil when none
	// Peer is another instance's answer to the request on a journal
	// replicas share, queued there (the relay was away) and so on no
	// feed yet: it locks the form as another sender's command does.
	// Nil when none (SeePeers).
	Peer *Submission

	// Claim is who said they are on the question (claim.go), the zero
	// Claim when nobody; Assigned who should answer it.
	Claim    Claim
	Assigned Assignment

	// Routing is the team this UI's routes file sends the request to and
	// the reminders and escalations sent for it (SetRouting); zero when
	// there is no routes file or no route matched.
	Routing Routing

	// RuleMiss is the rule that matched the request in all but its
	// connection (SetRuleMiss); nil when none did.
	RuleMiss *RuleMiss

	// Version counts changes to this card; it starts at 1.
	Version uint64
}
