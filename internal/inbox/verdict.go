package inbox

import (
	"errors"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// ErrWatchOnly is the refusal of a UI that sends no answers (it has no
// control token for the relay): the card may be open, this UI may not
// answer it.
var ErrWatchOnly = errors.New("inbox: this UI is watch-only and sends no answers")

// ErrReadOnly is the refusal of an operator whose role answers nothing (a
// viewer): the UI sends answers, this operator may not.
var ErrReadOnly = errors.New("inbox: this operator's role answers nothing")

// Viewer is who a verdict is for: the one input beyond the card and the
// clock. The zero Viewer is a UI that sends answers. It travels from the
// wiring to every verdict unchanged, and no reader looks inside it: what
// it allows is Refusal's (and so the verdict's), so a new field here
// (a role) is obeyed by the page, the posting fragment, the push stream,
// Web Push and a hand-made post once Refusal reads it.
type Viewer struct {
	// WatchOnly is true when the UI has no control token for the relay:
	// no card may be answered from it (page, fragment, notification).
	WatchOnly bool
	// ReadOnly is true when the signed-in operator's role answers nothing
	// (a viewer): no card may be answered by them.
	ReadOnly bool
}

// Refusal is why v may answer no card at all (ErrWatchOnly, or
// ErrReadOnly for an operator whose role answers nothing), nil when
// each card's own verdict decides.
func (v Viewer) Refusal() error {
	if v.WatchOnly {
		return ErrWatchOnly
	}
	if v.ReadOnly {
		return ErrReadOnly
	}
	return nil
}

// Answers reports whether v may answer cards at all (Refusal is nil):
// what the page offers beside one card (a batch, rules, the batch
// region's counts) reads it.
func (v Viewer) Answers() bool { return v.Refusal() == nil }

// Line is the kind of a card's state line: what became of the request
// and of the answers sent for it, in the order the verdict decides it.
type Line string

// Lines. The first group is an open request's; the second a settled one's.
const (
	LinePending    Line = "pending"
	LineRouted     Line = "routed"
	LineMalformed  Line = "malformed"
	LineInfo       Line = "info"        // answered in the agent's own UI
	LineOverBudget Line = "over-budget" // more controls than the inbox shows
	LineQueued     Line = "queued"      // this UI's answer, journaled, waiting for the relay
	LineSending    Line = "sending"
	LineAccepted   Line = "accepted"
	LineAnswering  Line = "answering"   // another sender's answer on its way
	LinePeer       Line = "peer-queued" // another instance's answer, queued there for the relay
	LineRejected   Line = "rejected"
	LineNotSent    Line = "not-sent"
	LineUnknown    Line = "unknown" // sent before a restart; whether it was executed is not known yet
	LineFailed     Line = "failed"
	LineExpired    Line = "expired" // the deadline passed (open or settled by the sweep)

	LineAnswered Line = "answered"
	LineResolved Line = "resolved"
	LineTimedOut Line = "timed-out"
	LineEnded    Line = "session-ended"
)

// Verdict is everything a reader needs to know about one card version at
// one time for one Viewer: the page, the posting browser's fragment, the
// push stream, Web Push, a notification's answer, History's links and
// (through the attributes the components render from it) the page
// script all read it, and none of them re-derives any part of it.
// (*Card).Verdict is the one place it is decided.
type Verdict struct {
	// Line is the state line the card shows.
	Line Line
	// Open is true while the request may still be answered by anyone:
	// pending or routed, and its deadline (if any) not passed.
	Open bool
	// Settled is true once the request's state is no longer open (the
	// card moves to the settled list). An open state past its deadline
	// (between two sweeps) is neither Open nor Settled.
	Settled bool
	// Closed is why the request can no longer take an answer from
	// anyone (Card.Closed's sentinel), nil while it can.
	Closed error
	// Refusal is why the Viewer may not send an answer now: ErrWatchOnly
	// for a watch-only UI (whatever the card), else CanAnswer's sentinel;
	// nil when it may. A post it refuses is answered 409.
	Refusal error
	// Answerable is Refusal == nil: the form is offered with a submit.
	Answerable bool
	// InFlight is true while this UI's own answer is on its way (queued,
	// sending, accepted) on an open request.
	InFlight bool
	// Answering is another sender's answer on its way on an open request
	// (Card.Answering), nil when none.
	Answering *Responder
	// Peer is another instance's answer queued for the relay on an open
	// request (Card.Peer), nil when none or when Answering is set.
	Peer *Submission
	// Locked is true when an answer on its way (this UI's or another
	// sender's) locks an open request's form: the card shows what was
	// sent, not the controls.
	Locked bool
	// Owed is true while this UI's answer was sent and got no reply
	// (Submission.Owed) on an open request this Viewer may answer: it is
	// sent again on the next relay connection, and the form is offered
	// only behind "Answer differently" (a post naming the owed answer,
	// Submission.Replaces). An owed answer does not lock the card.
	Owed bool
	// SendAgain is true when "Send the same answer again" is offered, and
	// so accepted: the owed answer got no reply in time (ReasonTimeout).
	// One lost with its relay connection (ReasonRelayLost) is sent again
	// when a connection is back, and a press before then could send
	// nothing.
	SendAgain bool
	// Undo is true while this UI holds its answer's command for Undo
	// (Submission.HeldUntil) on an open request this Viewer may answer:
	// the page offers Undo, UndoCommand is the command it takes back and
	// UndoLeft the time until the command leaves.
	Undo        bool
	UndoCommand string
	UndoLeft    time.Duration
	// OwedCommand is the owed answer's command id while Owed: what
	// "Send again" sends once more and "Answer differently" replaces.
	OwedCommand string
	// Capture is the request's capture level (Card.Capture), as the
	// card's origin line and a placeholder's words name it.
	Capture aep.Capture
	// Placeholder is true when the request's labels are capture
	// placeholders (Capture is metadata or less): its ids stand for
	// words the emitter withheld.
	Placeholder bool
	// Batchable is true when the card may join a batch answer now:
	// Answerable, of a shape (Card.Shape), and not Placeholder (an answer
	// given by label to many requests must mean the same to each).
	Batchable bool
	// RuleMaker is true when a rule may be made from this Viewer's answer
	// to the card: the Viewer may answer, the request is of a kind a rule
	// answers (a permission or review, a choice among options, a form of
	// fields; never a sign-in), and not Placeholder. The form offers it
	// while it offers a submit and no owed answer.
	RuleMaker bool
	// Tappable is true when the Viewer may answer now with one press of
	// one of the request's options, each with words of its own: a
	// permission request with one or two labelled options, captured
	// above metadata. A notification offers exactly these as buttons.
	Tappable bool
	// Pending is true when the request counts as waiting for an answer
	// on the page (the pending count, j/k, the next card after a send):
	// open and answerable over control by someone. An informational,
	// malformed or over-budget request is shown, never counted.
	Pending bool
	// Announce is true for a request a push notification announces, and
	// a rule may answer: one that could be answered now and has no
	// answer of this UI yet.
	Announce bool
	// DropDraft is true when the browser's draft of the card may go: the
	// server holds its answer (in flight) or the request is settled.
	DropDraft bool
	// Deadline is the request's expires_at (zero when none); Left is the
	// time to it (zero once passed); Expired is true once it has passed.
	Deadline time.Time
	Left     time.Duration
	Expired  bool
	// Answered is who answered a request the agent recorded an answer
	// for, and how; nil when no answer is recorded.
	Answered *Answered

	// What the state line shows, beside its kind (Line): a reader takes
	// it from here, never from the card.

	// Submission is this UI's latest answer to the request
	// (Card.Submission), nil when none.
	Submission *Submission
	// Others are other senders' commands for the request, in arrival
	// order (Card.Responders); Answering is the one on its way, if any.
	Others []Responder
	// Route is the latest attention.routed hop (LineRouted), nil when none.
	Route *Route
	// Routing is where this UI's routes file sends the request: its team
	// and the reminders and escalations sent (Card.Routing). It informs
	// and decides nothing.
	Routing Routing
	// RuleMiss is the rule that matched the request in all but the
	// connection that claims its session (Card.RuleMiss), while the
	// card is open; nil otherwise. It informs and decides nothing.
	RuleMiss *RuleMiss
	// Malformed is why the request is not a valid form ("" when it is).
	Malformed string
	// NoForm is true when the request offers no form to draw, not even
	// read-only: it is malformed, or needs more controls than the inbox
	// shows (Card.OverBudget).
	NoForm bool
	// Resolution is attention.resolved's resolution (LineResolved).
	Resolution string
	// TimeoutMS is attention.timeout's after_ms (LineTimedOut), nil when
	// it gave none.
	TimeoutMS *int64

	// Claim is who said they are on the open question and since when
	// (Card.Claim), nil when nobody is, the claim lapsed, or no answer
	// could be given now (settled, expired, an answer on its way).
	Claim *Claim
	// Claimable is true when the Viewer may say they are on it: they may
	// answer it now (Answerable). A viewer's role claims nothing.
	Claimable bool
	// Assigned is who the question is assigned to (Card.Assigned), nil
	// when nobody.
	Assigned *Assignment
}

// Answered is who answered a card and how, decided once for every reader
// (the state line, the "Answered here by" line, the notification that
// replaces a pushed question).
type Answered struct {
	// By is who answered: for this UI's own answer the operator who
	// posted it ("" when they gave no name: the agent records the UI's
	// name, never theirs), else the name the agent recorded ("" when none).
	By string
	// Here is true when the answer the agent recorded is this UI's own
	// accepted submission (At and CommandID are then its post's).
	Here      bool
	At        time.Time
	CommandID string
	// Elsewhere is true when no submission of this UI caused the answer.
	Elsewhere bool
	// Via is how the agent says it was answered ("control", "oob", ...).
	Via string
	// Recorded is the answer as the agent recorded it.
	Recorded *Recorded
}

// Verdict decides the card at now for v: its state line, whether and how
// it may be answered, its deadline and who answered it. See Verdict.
func (c *Card) Verdict(now time.Time, v Viewer) Verdict {
	d := Verdict{
		Deadline: c.ExpiresAt,
		Left:     c.Left(now),
		Expired:  c.Expired(now),
		Closed:   c.closed(now),
		Open:     c.Open(now),
		Settled:  !c.State.Open(),
	}
	d.Refusal = c.CanAnswer(now)
	if err := v.Refusal(); err != nil {
		d.Refusal = err // whatever the card's state: this Viewer sends nothing
	}
	d.Answerable = d.Refusal == nil
	if d.Open {
		d.InFlight = c.InFlight()
		if !d.InFlight {
			d.Answering = c.Answering()
		}
		if !d.InFlight && d.Answering == nil {
			d.Peer = c.Peer
		}
	}
	d.Locked = d.InFlight || d.Answering != nil || d.Peer != nil
	if d.Open && v.Answers() && c.Submission.Owed() && c.Controllable() && d.Answering == nil {
		d.Owed, d.Locked = true, false
		d.OwedCommand = c.Submission.CommandID
		d.SendAgain = c.Submission.Reason == ReasonTimeout
	}
	if s := c.Submission; d.Open && v.Answers() && s != nil && s.State == SubmissionSending && !s.HeldUntil.IsZero() {
		d.Undo, d.UndoCommand = true, s.CommandID
		d.UndoLeft = max(s.HeldUntil.Sub(now), 0)
	}
	d.Capture = c.Capture
	d.Placeholder = c.Capture <= aep.CaptureMetadata
	d.Batchable = d.Answerable && c.Shape != "" && !d.Placeholder
	d.RuleMaker = v.Answers() && !d.Placeholder && ruleKind(c.Request)
	d.Tappable = d.Answerable && c.tappable()
	d.Pending = d.Closed == nil
	d.Announce = d.Closed == nil && c.CanAnswer(now) == nil && c.Submission == nil
	d.DropDraft = d.Settled || d.InFlight
	d.Answered = c.answered()
	d.Submission, d.Others = c.Submission, c.Responders
	if n := len(c.Routes); n > 0 {
		d.Route = &c.Routes[n-1]
	}
	d.Routing = c.Routing
	if d.Open {
		d.RuleMiss = cloneRuleMiss(c.RuleMiss)
	}
	d.Malformed, d.NoForm = c.Malformed, c.Malformed != "" || c.OverBudget
	d.Resolution, d.TimeoutMS = c.Resolution, c.TimeoutMS
	d.Line = c.line(now, d)
	if d.Open && !d.Locked && c.Claim.Live(now) {
		cl := c.Claim
		d.Claim = &cl
	}
	d.Claimable = d.Answerable
	if c.Assigned.To != "" {
		as := c.Assigned
		d.Assigned = &as
	}
	return d
}

// ruleKind reports whether a rule can be made from an answer to req: a
// permission or review, a choice among options, or a form of fields;
// never a sign-in (its answer is a secret of one moment), nor free text
// alone (no two questions take one answer).
func ruleKind(req aep.Request) bool {
	switch req.Kind {
	case aep.KindAuth:
		return false
	case aep.KindInput:
		return len(req.Options) > 0
	case aep.KindPermission, aep.KindReview:
		return true
	}
	return len(req.Options) > 0 || len(req.Fields) > 0
}

// tappable reports whether the request's options can each be one button
// with its own words (Verdict.Tappable).
func (c *Card) tappable() bool {
	opts := c.Request.Options
	if c.Request.Kind != aep.KindPermission || c.Capture <= aep.CaptureMetadata || len(opts) == 0 || len(opts) > 2 {
		return false
	}
	for _, o := range opts {
		if strings.TrimSpace(o.Label) == "" {
			return false
		}
	}
	return true
}

// answered is who answered the card, when the agent recorded an answer.
func (c *Card) answered() *Answered {
	o := c.Recorded
	if o == nil {
		return nil
	}
	a := &Answered{By: o.By, Elsewhere: c.AnsweredElsewhere, Via: o.Via, Recorded: o}
	if s := c.Submission; s != nil && !c.AnsweredElsewhere {
		// This UI's answer: the agent records the UI's name; who
		// answered is the operator who posted it ("" when they gave none).
		a.By = s.By
		if s.State == SubmissionAccepted && !s.At.IsZero() {
			a.Here, a.At, a.CommandID = true, s.At, s.CommandID
		}
	}
	return a
}

// line is the card's state line kind: an outcome first for a settled
// card; for an open one what stops an answer (malformed, informational,
// over budget), then the deadline (a passed deadline outranks an answer
// on its way, as it does in closed and in the lifecycle), then the
// answers on their way and their fates, then routing.
func (c *Card) line(now time.Time, d Verdict) Line {
	if d.Settled {
		switch {
		case c.Recorded != nil:
			return LineAnswered
		case c.State == StateResolved:
			return LineResolved
		case c.State == StateTimedOut:
			return LineTimedOut
		case c.State == StateExpired:
			return LineExpired
		case c.State == StateEnded:
			return LineEnded
		}
		return Line(c.State)
	}
	sub := c.Submission
	switch {
	case c.Malformed != "":
		return LineMalformed
	case !c.Controllable():
		return LineInfo
	case c.OverBudget:
		return LineOverBudget
	case c.Expired(now):
		return LineExpired
	case sub != nil && sub.State == SubmissionQueued:
		return LineQueued
	case sub != nil && sub.State == SubmissionSending && !sub.HeldUntil.IsZero():
		return LineHeld
	case sub != nil && sub.State == SubmissionSending:
		return LineSending
	case sub != nil && sub.State == SubmissionAccepted:
		return LineAccepted
	case d.Answering != nil:
		return LineAnswering
	case d.Peer != nil:
		return LinePeer
	case sub != nil && sub.State == SubmissionRejected:
		return LineRejected
	case sub != nil && sub.State == SubmissionNotSent:
		return LineNotSent
	case sub != nil && sub.State == SubmissionUnknown:
		return LineUnknown
	case sub != nil && sub.State == SubmissionFailed:
		return LineFailed
	case sub != nil && sub.State == SubmissionWithdrawn:
		return LineUndone
	case len(c.Routes) > 0:
		return LineRouted
	}
	return LinePending
}
