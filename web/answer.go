package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
)

// handleAnswer takes one operator post for one card: form.ParseAnswer
// maps it to an answer through the request's field specs, the inbox
// begins one submission for it (one command per form token; the domain
// decides whether the card can still be answered), the respond path
// queues it, and the browser is redirected (post/redirect/get); the
// card's state then arrives by push. A problem the operator can fix
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
		card, ok := in.Card(id)
		if !ok {
			pg.gone(w, r, post, panel)
			return
		}
		// reply answers with the card: the whole page (a form post), or
		// the card's fragment alone (the script's fetch), so both show
		// the one error summary the server wrote.
		reply := func(status int, refused *view.Refused) {
			if wantsFragment(r) {
				pg.cardFragment(w, r, status, id, refused)
				return
			}
			pg.page(w, r, status, panel, refused)
		}
		refuse := func(status int, why view.Refusal) {
			m.Answer("not_sent")
			reply(status, &view.Refused{Card: id, Input: post,
				Problems: []aep.Problem{{Code: why.Code, Message: why.Message}}})
		}
		sent := func() {
			if wantsFragment(r) {
				pg.cardFragment(w, r, http.StatusOK, id, nil)
				return
			}
			pg.redirectNext(w, r, id, panel)
		}
		// The card's verdict decides whether this UI may answer it: the
		// same verdict the page, the push and the notification read.
		vd := card.Verdict(pg.now(), pg.viewer)
		if errors.Is(vd.Refusal, inbox.ErrWatchOnly) {
			refuse(http.StatusConflict, view.RefusalWatchOnly)
			return
		}
		token := post.Get(form.NameToken)
		if token == "" {
			refuse(http.StatusBadRequest, view.RefusalNoToken)
			return
		}
		if card.Posted(token) {
			// The same form posted again (double click, resubmit), even
			// after its answer settled the card: one command.
			sent()
			return
		}
		if err := vd.Closed; err != nil {
			if in.Posted(id, token) {
				// Posted first on another replica, whose answer
				// settled the card: the same answer as there.
				sent()
				return
			}
			why, _ := view.RefusalOf(err, card)
			refuse(http.StatusConflict, why)
			return
		}
		answer, problems := form.ParseAnswer(card.Request, post)
		if len(problems) > 0 {
			m.Answer("not_sent")
			reply(http.StatusUnprocessableEntity, &view.Refused{Card: id, Input: post, Problems: problems})
			return
		}
		s, err := in.BeginSubmission(id, inbox.Submission{
			Token: token, CommandID: ulid.Make().String(), Answer: answer, Form: post, By: operatorFrom(r.Context()),
			// Set only by the form under "Answer differently": this post
			// replaces the card's owed answer (inbox decides if it may).
			Replaces: post.Get(form.NameReplaces),
		})
		switch {
		case errors.Is(err, inbox.ErrDuplicate):
			sent()
			return
		case errors.Is(err, inbox.ErrNotFound):
			pg.gone(w, r, post, panel)
			return
		case errors.Is(err, inbox.ErrNotRecorded):
			pg.log.Error("web: answer not recorded", "card", string(id), "err", err)
			why, _ := view.RefusalOf(err, card)
			refuse(http.StatusServiceUnavailable, why)
			return
		case err != nil:
			if why, ok := view.RefusalOf(err, card); ok {
				refuse(http.StatusConflict, why)
				return
			}
			pg.internalError(w, r, err)
			return
		}
		crashpoint.Hit(crashpoint.Recorded)
		// The answer is journaled: the 303 (or, to the page's script, the
		// card) goes out before the command is queued (its outcome arrives
		// by push either way), so the browser knows its answer is kept
		// whatever happens to the send.
		sent()
		_ = http.NewResponseController(w).Flush() // best effort: a writer that cannot flush sends it on return
		// The send outlives the request: a browser that drops its request
		// after the answer was recorded must not turn it into a failure.
		if err := sub.Submit(context.WithoutCancel(r.Context()), s); err != nil {
			pg.log.Warn("web: answer not queued", "card", string(id), "command", s.CommandID, "err", err)
			in.SettleSubmission(id, s.CommandID, inbox.SubmissionFailed, inbox.ReasonUnreachable, "not sent; your answer is kept")
			m.Answer("failed")
		} else {
			m.Answer("sent")
		}
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
