package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
)

// handleAnswer takes one operator post for one card: read, answered by
// the answer service (answerCard), then the card's next view. A
// "Preview" of the rule part sends nothing; a rule part the operator
// must fix refuses the post (422) before the answer is begun, with the
// answer's own problems too, so one round fixes both.
func handleAnswer(svc *answer.Service, pg *pages, m *Metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cp := cardPost{id: inbox.CardID(chi.URLParam(r, "id")), panel: cameFromPanel(r, pg.base)}
		var ok bool
		if cp.form, ok = readPost(w, r, pg.site, cp.panel); !ok {
			return
		}
		if (cp.form.Get(form.NameRule) != "" || cp.form.Get(form.NameRulePreview) != "") && !roleFrom(r.Context()).administers() {
			// Only an admin makes a rule: the whole post is refused, the
			// answer unsent, so nothing goes that the operator did not mean.
			http.Error(w, "Your role here is "+string(roleFrom(r.Context()))+": it does not make rules. Nothing was sent: send the answer without “Keep answering”.", http.StatusForbidden)
			return
		}
		if cp.form.Get(form.NameRulePreview) != "" && pg.rules.makesRules() {
			// "Preview": nothing is sent; the card comes back with what
			// the rule would have answered, the input kept.
			pg.previewRule(w, r, cp.id, cp.form, cp.panel)
			return
		}
		var refused *view.Refused
		if cp.rule, refused = pg.rules.ruleOfPost(r.Context(), cp.id, cp.form); refused != nil {
			m.Answer("not_sent")
			pg.refusedCard(w, r, http.StatusUnprocessableEntity, cp.panel, refused)
			return
		}
		answerCard(svc, pg, m, w, r, cp)
	}
}

// cardPost is one card's answer as read from its post.
type cardPost struct {
	id    inbox.CardID
	form  url.Values
	panel bool // posted from the panel: the redirect goes back there
	// rule is "Answer like this from now on", its problems checked;
	// nil when the post asks for none.
	rule *pendingRule
}

// answerCard answers cp through the answer service and writes the
// response: the card as it now is (the page script's fetch) or a 303 to
// the page at the next card waiting (post/redirect/get), the answer's
// state arriving by push; a refusal re-renders the card with the
// operator's input kept and why (refusals). The answer's command leaves
// beside the response, not after it: a crash before the browser has the
// response leaves it to retry the post, and the form token finds the
// kept answer (the same 303, nothing sent twice).
func answerCard(svc *answer.Service, pg *pages, m *Metrics, w http.ResponseWriter, r *http.Request, cp cardPost) {
	// The send outlives the request: a browser that drops its request
	// after the answer was recorded must not turn it into a failure.
	ctx := context.WithoutCancel(r.Context())
	next := pg.nextChoice(r, cp)
	a, err := svc.Begin(ctx, answer.Post{Card: cp.id, Token: cp.form.Get(form.NameToken), Form: cp.form,
		Replaces: cp.form.Get(form.NameReplaces), By: operatorFrom(r.Context()), Over: cp.form.Get(view.ClaimFormName), While: next.choose})
	if err != nil {
		pg.refusedPost(w, r, m, cp, a, err)
		return
	}
	if a.Kept {
		pg.answered(w, r, cp, next)
		return
	}
	m.queued(svc.Send(ctx, a, func() {
		ruleErr := pg.rules.keepRule(ctx, cp, a, operatorFrom(r.Context()))
		crashpoint.Hold(crashpoint.SentNo303)
		if ruleErr != nil {
			pg.ruleNotKept(w, r, cp.id, ruleErr) // the Rules page says why
		} else {
			pg.answered(w, r, cp, next)
		}
		// Out before a command that could not be held is queued; best
		// effort: a writer that cannot flush sends it on return.
		_ = http.NewResponseController(w).Flush()
	}))
}

// readPost reads a form post, answering one that cannot be read (too
// large: 413, malformed: 400) itself (false).
func readPost(w http.ResponseWriter, r *http.Request, pg *site, panel bool) (url.Values, bool) {
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			pg.unread(w, r, http.StatusRequestEntityTooLarge, panel, true)
			return nil, false
		}
		pg.unread(w, r, http.StatusBadRequest, panel, false)
		return nil, false
	}
	return r.PostForm, true
}

// nextChoice is the card the redirect after an answer shows: chosen
// while the journal syncs the answer (it reads every card's head), for a
// browser's own post; nil for the page script's, which stays on its card.
type nextChoice struct {
	pg   *pages
	r    *http.Request
	cp   cardPost
	card chan inbox.CardID // set once choosing began
}

func (p *pages) nextChoice(r *http.Request, cp cardPost) *nextChoice {
	if wantsFragment(r) {
		return nil
	}
	return &nextChoice{pg: p, r: r, cp: cp}
}

// choose begins choosing (answer.Post.While: it must not block).
func (n *nextChoice) choose(inbox.Submission) {
	if n == nil {
		return
	}
	n.card = make(chan inbox.CardID, 1)
	go func() { n.card <- n.pg.nextCard(n.r, n.cp.id, n.cp.panel) }()
}

// answered writes the response to an answer kept or sent: the card's
// fragment to the page script, else the 303 to the next card waiting.
func (p *pages) answered(w http.ResponseWriter, r *http.Request, cp cardPost, next *nextChoice) {
	switch {
	case wantsFragment(r):
		p.cardFragment(w, r, http.StatusOK, cp.id, nil)
	case next != nil && next.card != nil:
		p.redirectBack(w, r, <-next.card, cp.panel)
	default:
		p.redirectNext(w, r, cp.id, cp.panel)
	}
}

// refusedPost answers a post the answer service refused with err
// (refusals): its card with the operator's input and why, a question no
// longer held, or our own fault.
func (p *pages) refusedPost(w http.ResponseWriter, r *http.Request, m *Metrics, cp cardPost, a answer.Answer, err error) {
	why := refusalOf(err)
	switch why.status {
	case http.StatusNotFound:
		p.gone(w, r, cp.form, cp.panel)
	case http.StatusInternalServerError:
		p.internalError(w, r, err)
	default:
		m.Answer("not_sent")
		p.refusedCard(w, r, why.status, cp.panel, &view.Refused{Card: cp.id, Input: cp.form, Problems: why.problems(err, a.Verdict)})
	}
}

// refusedCard answers a refused post under status with the one error
// summary the server wrote: the whole page (a form post), or the card's
// fragment alone (the script's fetch).
func (p *pages) refusedCard(w http.ResponseWriter, r *http.Request, status int, panel bool, refused *view.Refused) {
	if wantsFragment(r) {
		p.cardFragment(w, r, status, refused.Card, refused)
		return
	}
	p.page(w, r, status, panel, refused)
}

// queued counts an answer handed to the respond path (err nil), or one
// that could not be (the answer service settled it failed on its card).
func (m *Metrics) queued(err error) {
	switch {
	case err != nil:
		m.Answer("failed")
	default:
		m.Answer("sent")
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

// handleAnswerReload answers a GET of a card's post URL (answer, claim,
// assign: a reload of a refused post's page, a pasted link): the card on
// the inbox, not a bare 405.
func handleAnswerReload(pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, pg.base+"#"+domID(inbox.CardID(chi.URLParam(r, "id"))), http.StatusSeeOther)
	}
}
