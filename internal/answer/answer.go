// Package answer is the one path of an answer to a card, whoever gives
// it: the card's own post, a batch, a notification's button or a rule.
// A Service begins the answer (the card's verdict for this UI, the form
// token, the answer checked against the request, the submission
// journaled under a new command id), holds its command on the respond
// path while the journal syncs, and lets it go (or queues it) once kept.
// It refuses with sentinel errors (Refusals), which each caller words
// its own way; it knows nothing of HTTP.
package answer

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// Inbox is what the Service reads and writes of the inbox
// (*inbox.Inbox).
type Inbox interface {
	Card(inbox.CardID) (inbox.Card, bool)
	// BeginSubmissionWhile is inbox.Inbox.BeginSubmission, calling while
	// (when not nil) during the journal write.
	BeginSubmissionWhile(id inbox.CardID, s inbox.Submission, while func(inbox.Submission)) (inbox.Submission, error)
	// Posted reports whether the form token was posted on the card, here
	// or on another replica sharing the journal.
	Posted(id inbox.CardID, token string) bool
	SettleSubmission(id inbox.CardID, commandID string, state inbox.SubmissionState, reason, detail string)
}

// Submitter queues a journaled submission on the respond path and
// returns at once; what became of the command comes back to the inbox.
type Submitter interface {
	Submit(ctx context.Context, s inbox.Submission) error
}

// HoldingSubmitter is a Submitter that can queue a command whose first
// write waits (respond.Client.SubmitHeld): the command's ack subscription
// is then made while its answer is journaled, and send lets it go (true)
// or drops it (false); only the first call counts.
type HoldingSubmitter interface {
	SubmitHeld(ctx context.Context, s inbox.Submission) (send func(bool), err error)
}

// Config is a Service's.
type Config struct {
	Inbox Inbox
	// Submitter queues the answers; nil is a watch-only UI (every answer
	// refused, inbox.ErrWatchOnly).
	Submitter Submitter
	// Viewer is who the answers are given as: the input of the card's
	// verdict. A nil Submitter makes it watch-only.
	Viewer inbox.Viewer
	// Now is the clock the verdict is read at, time.Now by default.
	Now func() time.Time
	// Logger receives what could not be queued or recorded; nil discards.
	Logger *slog.Logger
	// UndoWindow is how long Send holds a sent answer's command before
	// it leaves, while the page offers Undo (undo.go); 0 sends at once,
	// and so does an Inbox that is no Holder.
	UndoWindow time.Duration
	// AfterFunc runs f once d has passed and returns what stops it
	// (time.AfterFunc's Stop by default): the undo window's clock.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Stopping, when set, reports whether the UI is stopping: a held
	// command whose window passes then is neither sent nor settled, its
	// answer left journaled as sending for the next serve to send.
	Stopping func() bool
}

// Service begins, holds, releases and queues answers.
type Service struct {
	cfg   Config
	holds holds
}

// New makes a Service.
func New(cfg Config) *Service {
	if cfg.Submitter == nil {
		cfg.Viewer.WatchOnly = true
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AfterFunc == nil {
		cfg.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &Service{cfg: cfg}
}

// Viewer is who the Service answers as.
func (s *Service) Viewer() inbox.Viewer { return s.cfg.Viewer }

// Post is one answer to one card as given.
type Post struct {
	Card inbox.CardID
	// Token is the form token: the same token posted again is the same
	// answer (Kept), one command.
	Token string
	// Form is the post's values: the answer's fields (parsed through the
	// request's field specs when Answer is nil), kept with the
	// submission.
	Form url.Values
	// Answer, when set, is the answer as it is (a rule's), not parsed
	// from Form.
	Answer *aep.Answer
	// Replaces names the card's owed answer this one replaces ("Answer
	// differently"; the inbox decides whether it may).
	Replaces string
	// CommandID is the command's id; "" makes a new one.
	CommandID string
	// Over is the claimant the operator was told is on the question and
	// answers anyway (the confirmation ErrClaimed asks for); "" none.
	Over string
	// By is who answers: the operator's name, or a rule's.
	By string
	// Unsent is the card's words when the command cannot be queued;
	// "" says the operator's answer is kept.
	Unsent string
	// While, when not nil, is called (and must not block) with the
	// submission once the card is reserved for it, while the journal
	// writes it: the caller's own work overlaps the disk's sync.
	While func(inbox.Submission)
}

// Answer is an answer Begin took: journaled now (Kept false: Send its
// command), or the same as one posted before (Kept: nothing to send).
type Answer struct {
	// Card is the card as Begin read it, and Verdict its verdict for the
	// service's Viewer then: a refusal's words read it. Zero when the
	// card was not found.
	Card    inbox.Card
	Verdict inbox.Verdict
	// Kept is true when the post was made before (a double click, a
	// resubmit, another replica): its answer stands and nothing new is
	// sent.
	Kept bool
	// Submission is the journaled answer (Kept false).
	Submission inbox.Submission

	held   *held
	unsent string
}

// Recorded reports whether a holds a new journaled answer, to Send.
func (a Answer) Recorded() bool { return !a.Kept && a.Submission.CommandID != "" }

// held is a command queued held while its answer is journaled.
type held struct {
	send func(bool)
	err  error // not queued
}

// Begin begins p's answer: the card's verdict for this UI, the form token
// (posted before: Kept), the answer checked against the request, and the
// submission journaled under a new command id, its command held on the
// respond path meanwhile (queued with ctx's values, not its end: the
// send outlives a request that gave the answer). It refuses with one of Refusals (errors.Is;
// ErrInvalid as a Problems), with a.Card set when the card was read; any
// other error is unexpected. Only a Recorded answer is to be sent (Send).
func (s *Service) Begin(ctx context.Context, p Post) (Answer, error) {
	card, ok := s.cfg.Inbox.Card(p.Card)
	if !ok {
		return Answer{}, inbox.ErrNotFound
	}
	// The card's verdict decides whether this UI may answer it: the
	// same verdict the page, the push and the notification read.
	vd := card.Verdict(s.cfg.Now(), s.cfg.Viewer)
	a := Answer{Card: card, Verdict: vd, unsent: p.Unsent}
	if err := s.cfg.Viewer.Refusal(); err != nil {
		return a, err // this UI answers no card (watch-only), whatever this one
	}
	if p.Token == "" {
		return a, ErrNoToken
	}
	if card.Posted(p.Token) {
		// The same form posted again (double click, resubmit), even
		// after its answer settled the card: one command.
		return Answer{Card: card, Verdict: vd, Kept: true}, nil
	}
	if err := vd.Closed; err != nil {
		if s.cfg.Inbox.Posted(p.Card, p.Token) {
			// Posted first on another replica, whose answer settled the
			// card: the same answer as there.
			return Answer{Card: card, Verdict: vd, Kept: true}, nil
		}
		return a, err
	}
	ans, err := answerOf(card, p)
	if err != nil {
		return a, err
	}
	if c := vd.Claim; c != nil && p.Answer == nil && c.By != p.By && c.By != p.Over {
		// Another operator is on it: answered only once this operator
		// knows (a rule's standing answer was given knowing nothing of
		// claims, and is not held back by one).
		return a, ErrClaimed
	}
	return s.record(ctx, a, p, ans)
}

// answerOf is p's answer: as given, or parsed from its form through the
// card's field specs (Problems when the operator must fix it).
func answerOf(card inbox.Card, p Post) (aep.Answer, error) {
	if p.Answer != nil {
		return *p.Answer, nil
	}
	ans, problems := form.ParseAnswer(card.Request, p.Form)
	if len(problems) > 0 {
		return aep.Answer{}, Problems(problems)
	}
	return ans, nil
}

// record journals p's answer ans on a's card, its command held on the
// respond path while the journal writes, and dropped unless kept.
func (s *Service) record(ctx context.Context, a Answer, p Post, ans aep.Answer) (Answer, error) {
	cmd := p.CommandID
	if cmd == "" {
		cmd = ulid.Make().String()
	}
	var h *held
	while := func(sub inbox.Submission) {
		if p.While != nil {
			p.While(sub)
		}
		if !s.waits() {
			h = s.hold(ctx, sub)
		}
	}
	sub, err := s.cfg.Inbox.BeginSubmissionWhile(p.Card, inbox.Submission{
		Token: p.Token, CommandID: cmd, Answer: ans, Form: p.Form, By: p.By, Replaces: p.Replaces,
	}, while)
	if err != nil {
		h.let(false)
		if errors.Is(err, inbox.ErrDuplicate) {
			return Answer{Card: a.Card, Verdict: a.Verdict, Kept: true}, nil
		}
		if errors.Is(err, inbox.ErrNotRecorded) {
			s.cfg.Logger.Error("answer: not recorded", "card", string(p.Card), "err", err)
		}
		return a, err
	}
	crashpoint.Hit(crashpoint.Recorded)
	a.Submission, a.held = sub, h
	return a, nil
}

// hold queues sub's command held, on a HoldingSubmitter; nil on any other
// (Send queues it).
func (s *Service) hold(ctx context.Context, sub inbox.Submission) *held {
	hs, ok := s.cfg.Submitter.(HoldingSubmitter)
	if !ok {
		return nil
	}
	send, err := hs.SubmitHeld(context.WithoutCancel(ctx), sub)
	return &held{send: send, err: err}
}

// let lets a held command go, or drops it; nil does nothing.
func (h *held) let(send bool) {
	if h != nil {
		h.send(send)
	}
}

// Send sends a recorded answer's command beside respond, the caller's
// response (nil: none); with an undo window it holds the command for the
// window instead (undo.go), and a command that cannot be queued then is
// settled failed when the window passes. A command held while the answer was journaled is
// let go first, so it leaves beside the response, not after it; a
// Submitter that could not hold it is handed it once respond has
// returned, so a slow Submit does not keep the response waiting. A
// command that cannot be queued is settled failed on its card (its
// answer kept), and the error returned. Send does nothing (and calls
// respond) for an answer not Recorded.
func (s *Service) Send(ctx context.Context, a Answer, respond func()) error {
	if !a.Recorded() {
		if respond != nil {
			respond()
		}
		return nil
	}
	if s.waits() {
		// Held for Undo: the command leaves when the window passes.
		s.holdForUndo(ctx, a)
		if respond != nil {
			respond()
		}
		hitHeld()
		return nil
	}
	var err error
	if a.held != nil {
		err = a.held.err
		a.held.let(true)
	}
	if respond != nil {
		respond()
	}
	if a.held == nil {
		err = s.cfg.Submitter.Submit(ctx, a.Submission)
	}
	if err != nil {
		s.unsent(a, err)
	}
	return err
}

// unsent settles a's submission failed: its command could not be queued.
func (s *Service) unsent(a Answer, err error) {
	sub := a.Submission
	s.cfg.Logger.Warn("answer: not queued", "card", string(sub.Card), "command", sub.CommandID, "err", err)
	detail := a.unsent
	if detail == "" {
		detail = "not sent; your answer is kept"
	}
	s.cfg.Inbox.SettleSubmission(sub.Card, sub.CommandID, inbox.SubmissionFailed, inbox.ReasonUnreachable, detail)
}
