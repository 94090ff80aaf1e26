package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
)

// handleAnswer takes one operator post for one card: beginAnswer maps it
// to an answer through the request's field specs and the inbox begins one
// submission for it (one command per form token; the domain decides
// whether the card can still be answered), its command is let go to the
// respond path once the journal has kept it, beside the redirect
// (post/redirect/get); the card's state then arrives by push. A problem the operator can fix
// re-renders the page with their input kept: 422 for their answer, 409
// when the card can no longer be answered (checked before the answer, so
// the operator is not asked to fix an answer that cannot be sent anyway).
// sub is nil when the UI is watch-only.
func handleAnswer(in Inbox, sub Submitter, pg *pages, m *Metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := inbox.CardID(chi.URLParam(r, "id"))
		panel := cameFromPanel(r, pg.base)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				pg.unread(w, r, http.StatusRequestEntityTooLarge, panel, true)
				return
			}
			pg.unread(w, r, http.StatusBadRequest, panel, false)
			return
		}
		post := r.PostForm
		if post.Get(form.NameRulePreview) != "" && pg.makesRules() {
			// "Preview": nothing is sent; the card comes back with what
			// the rule would have answered, the input kept.
			pg.previewRule(w, r, id, post, panel)
			return
		}
		// "Answer like this from now on…": its problems are the rule
		// part's, shown at its controls with the input kept; nothing
		// is sent until they are fixed.
		var rule form.RuleSpec
		var ruleCard inbox.Card
		if post.Get(form.NameRule) != "" {
			if c, ok := in.Card(id); ok {
				spec, probs := pg.ruleProblems(context.WithoutCancel(r.Context()), c, post)
				if len(probs) > 0 {
					// The answer's own problems too, so one round fixes both.
					if _, answerProbs := form.ParseAnswer(c.Request, post); len(answerProbs) > 0 {
						probs = append(answerProbs, probs...)
					}
					m.Answer("not_sent")
					refused := &view.Refused{Card: id, Input: post, Problems: probs}
					if wantsFragment(r) {
						pg.cardFragment(w, r, http.StatusUnprocessableEntity, id, refused)
						return
					}
					pg.page(w, r, http.StatusUnprocessableEntity, panel, refused)
					return
				}
				rule, ruleCard = spec, c
			}
		}
		// The send outlives the request: a browser that drops its
		// request after the answer was recorded must not turn it into a
		// failure.
		ctx := context.WithoutCancel(r.Context())
		// While the journal syncs the answer: the card the redirect shows
		// next is chosen (it reads every card's head), and the respond
		// path takes the command held, subscribing to its acks; it is let
		// go once the answer is kept, or dropped when it was not.
		var next chan inbox.CardID
		var held *heldAnswer
		while := func(s inbox.Submission) {
			if !wantsFragment(r) {
				next = make(chan inbox.CardID, 1)
				go func() { next <- pg.nextCard(r, id, panel) }()
			}
			held = holdAnswer(ctx, sub, s)
		}
		recorded := false
		defer func() { held.let(recorded) }() // also when writing the response panics
		step := beginAnswer(in, pg, answerPost{Card: id, Form: post, By: operatorFrom(r.Context()), While: while})
		sent := func() {
			switch {
			case wantsFragment(r):
				pg.cardFragment(w, r, http.StatusOK, id, nil)
			case next != nil:
				pg.redirectBack(w, r, <-next, panel)
			default:
				pg.redirectNext(w, r, id, panel)
			}
		}
		switch step.Outcome {
		case answerGone:
			pg.gone(w, r, post, panel)
		case answerBroken:
			pg.internalError(w, r, step.Err)
		case answerRefused:
			// The card answers with the one error summary the server
			// wrote: the whole page (a form post), or the card's
			// fragment alone (the script's fetch).
			m.Answer("not_sent")
			if wantsFragment(r) {
				pg.cardFragment(w, r, step.Status, id, step.Refused)
				return
			}
			pg.page(w, r, step.Status, panel, step.Refused)
		case answerKept:
			sent()
		case answerRecorded:
			crashpoint.Hit(crashpoint.Recorded)
			recorded = true
			// The answer is journaled and synced, so its command goes
			// now, beside the 303 (or, to the page's script, the card),
			// not after it: its outcome arrives by push either way. A
			// crash before the browser has the response leaves it to
			// retry the post, and the form token finds the kept answer
			// (answerKept: the same 303, nothing sent twice).
			if held != nil {
				queued(in, pg.log, m, step.Submission, held.err)
				held.let(true)
			}
			var ruleErr error
			if rule.Make {
				if made, err := pg.makeRule(ctx, ruleCard, rule, step.Submission, operatorFrom(r.Context())); err != nil {
					pg.log.Error("web: rule not kept; the answer is sent", "card", string(id), "err", err)
					ruleErr = err
				} else {
					pg.log.Info("rule made", "rule", made.ID, "name", made.Name, "operator", made.Maker)
				}
			}
			crashpoint.Hold(crashpoint.SentNo303)
			if ruleErr != nil {
				pg.ruleNotKept(w, r, id, ruleErr) // the Rules page says why
			} else {
				sent()
			}
			if held == nil {
				// A Submitter that cannot hold a command is handed it
				// once the response is out, so a slow Submit does not
				// keep the browser waiting.
				_ = http.NewResponseController(w).Flush() // best effort: a writer that cannot flush sends it on return
				queueAnswer(ctx, in, sub, pg.log, m, step.Submission)
			}
		}
	}
}

// answerPost is one card's answer as posted: the card, the form values
// (the answer's fields, the form token that makes it one command, and
// NameReplaces under "Answer differently") and who sends it.
type answerPost struct {
	Card inbox.CardID
	Form url.Values
	By   string
	// While, when not nil, is called (and must not block) with the
	// submission once the card is reserved for it, while the journal
	// writes it (inbox.Inbox.BeginSubmissionWhile).
	While func(inbox.Submission)
}

// answerOutcome is what beginAnswer made of one card's answer.
type answerOutcome int

const (
	// answerRecorded: a new submission, journaled; queueAnswer sends it.
	answerRecorded answerOutcome = iota + 1
	// answerKept: this form was posted before (a double click, a resubmit,
	// another replica): its answer stands and nothing new is sent.
	answerKept
	// answerGone: the card is not in the inbox.
	answerGone
	// answerRefused: not sent; Status and Refused say why, with the
	// operator's input kept.
	answerRefused
	// answerBroken: an unexpected error (Err), a 500.
	answerBroken
)

// answerStep is beginAnswer's result.
type answerStep struct {
	Outcome    answerOutcome
	Submission inbox.Submission // answerRecorded
	Status     int              // answerRefused: 400, 409, 422 or 503
	Refused    *view.Refused    // answerRefused
	Err        error            // answerBroken
}

// beginAnswer is the journal-first half of one card's answer, shared by
// every way an answer is given: the card's verdict for this UI, the form
// token (the same token posted again is answerKept: one command), the
// answer parsed through the request's field specs, and the submission
// begun and journaled under a new command id. Only answerRecorded is to
// be sent, by queueAnswer.
func beginAnswer(in Inbox, pg *pages, p answerPost) answerStep {
	id, post := p.Card, p.Form
	card, ok := in.Card(id)
	if !ok {
		return answerStep{Outcome: answerGone}
	}
	refuse := func(status int, why view.Refusal) answerStep {
		return answerStep{Outcome: answerRefused, Status: status, Refused: &view.Refused{Card: id, Input: post,
			Problems: []aep.Problem{{Code: why.Code, Message: why.Message}}}}
	}
	// The card's verdict decides whether this UI may answer it: the
	// same verdict the page, the push and the notification read.
	vd := card.Verdict(pg.now(), pg.viewer)
	if errors.Is(vd.Refusal, inbox.ErrWatchOnly) {
		return refuse(http.StatusConflict, view.RefusalWatchOnly)
	}
	token := post.Get(form.NameToken)
	if token == "" {
		return refuse(http.StatusBadRequest, view.RefusalNoToken)
	}
	if card.Posted(token) {
		// The same form posted again (double click, resubmit), even
		// after its answer settled the card: one command.
		return answerStep{Outcome: answerKept}
	}
	if err := vd.Closed; err != nil {
		if in.Posted(id, token) {
			// Posted first on another replica, whose answer settled the
			// card: the same answer as there.
			return answerStep{Outcome: answerKept}
		}
		why, _ := view.RefusalOf(err, card)
		return refuse(http.StatusConflict, why)
	}
	answer, problems := form.ParseAnswer(card.Request, post)
	if len(problems) > 0 {
		return answerStep{Outcome: answerRefused, Status: http.StatusUnprocessableEntity,
			Refused: &view.Refused{Card: id, Input: post, Problems: problems}}
	}
	s, err := in.BeginSubmissionWhile(id, inbox.Submission{
		Token: token, CommandID: ulid.Make().String(), Answer: answer, Form: post, By: p.By,
		// Set only by the form under "Answer differently": this post
		// replaces the card's owed answer (inbox decides if it may).
		Replaces: post.Get(form.NameReplaces),
	}, p.While)
	switch {
	case errors.Is(err, inbox.ErrDuplicate):
		return answerStep{Outcome: answerKept}
	case errors.Is(err, inbox.ErrNotFound):
		return answerStep{Outcome: answerGone}
	case errors.Is(err, inbox.ErrNotRecorded):
		pg.log.Error("web: answer not recorded", "card", string(id), "err", err)
		why, _ := view.RefusalOf(err, card)
		return refuse(http.StatusServiceUnavailable, why)
	case err != nil:
		if why, ok := view.RefusalOf(err, card); ok {
			return refuse(http.StatusConflict, why)
		}
		return answerStep{Outcome: answerBroken, Err: err}
	}
	return answerStep{Outcome: answerRecorded, Submission: s}
}

// queueAnswer hands a journaled submission (beginAnswer's answerRecorded)
// to the respond path. ctx should outlive the request that gave the
// answer. A submission that cannot be queued is settled failed on its
// card ("not sent; your answer is kept").
func queueAnswer(ctx context.Context, in Inbox, sub Submitter, log *slog.Logger, m *Metrics, s inbox.Submission) {
	queued(in, log, m, s, sub.Submit(ctx, s))
}

// queued counts a submission handed to the respond path, or settles it
// failed on its card when err says it could not be.
func queued(in Inbox, log *slog.Logger, m *Metrics, s inbox.Submission, err error) {
	if err != nil {
		log.Warn("web: answer not queued", "card", string(s.Card), "command", s.CommandID, "err", err)
		in.SettleSubmission(s.Card, s.CommandID, inbox.SubmissionFailed, inbox.ReasonUnreachable, "not sent; your answer is kept")
		m.Answer("failed")
		return
	}
	m.Answer("sent")
}

// holdingSubmitter is a Submitter that can queue a command whose first
// write waits (respond.Client.SubmitHeld), so the command's ack
// subscription is made while the answer is journaled.
type holdingSubmitter interface {
	SubmitHeld(ctx context.Context, s inbox.Submission) (send func(bool), err error)
}

// heldAnswer is a command queued held while its answer is journaled.
type heldAnswer struct {
	send func(bool) // let it go, or drop it (only the first call counts)
	err  error      // not queued
}

// holdAnswer queues s's command held on a holdingSubmitter; nil on any
// other (handleAnswer queues it once kept and its response is out).
func holdAnswer(ctx context.Context, sub Submitter, s inbox.Submission) *heldAnswer {
	hs, ok := sub.(holdingSubmitter)
	if !ok {
		return nil
	}
	send, err := hs.SubmitHeld(ctx, s)
	return &heldAnswer{send: send, err: err}
}

// let lets a held command go, or drops it; nil does nothing.
func (h *heldAnswer) let(send bool) {
	if h != nil {
		h.send(send)
	}
}

// HeaderFragment is the request header the page script sends with an
// answer posted by fetch: the server answers with the card's fragment
// (the card as it now is, or refused with the operator's input and the
// error summary, under the refusal's status) instead of a redirect or a
// whole page.
const HeaderFragment = "X-Aepforms-Fragment"

// wantsFragment reports whether the post came from the page script.
func wantsFragment(r *http.Request) bool { return r.Header.Get(HeaderFragment) == "card" }

// handleAnswerReload answers a GET of the answer URL (a reload of a
// refused post's page, a pasted link): the card on the inbox, not a bare
// 405.
func handleAnswerReload(pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, pg.base+"#"+domID(inbox.CardID(chi.URLParam(r, "id"))), http.StatusSeeOther)
	}
}
