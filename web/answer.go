package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
)

// handleAnswer takes one operator post for one card: it maps the post to
// an answer through the request's field specs, records it on the card
// (one command per form token), queues the command and redirects
// (post/redirect/get). The card's state then arrives by push. A problem
// the operator can fix re-renders the page with their input kept: 422 for
// their answer, 409 when the card can no longer be answered (checked
// before the answer, so the operator is not asked to fix an answer that
// cannot be sent anyway).
func handleAnswer(s *server, in Inbox, sub Submitter) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := inbox.CardID(chi.URLParam(r, "id"))
		panel := cameFromPanel(r, s.cfg.BasePath)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "Your answer is larger than this UI accepts. Shorten it and send again.", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "Your answer could not be read. Reload the page and send again.", http.StatusBadRequest)
			return
		}
		form := r.PostForm
		card, ok := in.Card(id)
		if !ok {
			http.Error(w, msgGone, http.StatusNotFound)
			return
		}
		refuse := func(status int, code, msg string) {
			s.deps.Metrics.Answer("not_sent")
			s.writePage(w, r, status, panel, &render.Refused{Card: id, Input: form,
				Problems: []aep.Problem{{Code: code, Message: msg}}})
		}
		if !s.canSubmit() {
			refuse(http.StatusConflict, "watch_only", msgWatchOnly)
			return
		}
		token := form.Get(render.NameToken)
		if token == "" {
			refuse(http.StatusBadRequest, "no_token", msgNoToken)
			return
		}
		if card.Submission != nil && card.Submission.Token == token {
			// The same form posted again (double click, resubmit), even
			// after its answer settled the card: one command.
			s.redirectBack(w, r, id, panel)
			return
		}
		if code, msg, closed := closedReason(card, s.cfg.Now()); closed {
			refuse(http.StatusConflict, code, msg)
			return
		}
		answer, problems := render.ParseAnswer(card.Request, form)
		if len(problems) > 0 {
			s.deps.Metrics.Answer("not_sent")
			s.writePage(w, r, http.StatusUnprocessableEntity, panel, &render.Refused{Card: id, Input: form, Problems: problems})
			return
		}
		cmdID := ulid.Make().String()
		by := operatorFrom(r.Context())
		_, err := in.BeginSubmission(id, inbox.Submission{
			Token: token, CommandID: cmdID, Answer: answer, Form: form, By: by,
		})
		switch {
		case errors.Is(err, inbox.ErrDuplicate):
			s.redirectBack(w, r, id, panel)
			return
		case errors.Is(err, inbox.ErrNotFound):
			http.Error(w, msgGone, http.StatusNotFound)
			return
		case err != nil:
			if code, msg, ok := beginRefusal(err, card); ok {
				refuse(http.StatusConflict, code, msg)
				return
			}
			s.internalError(w, r, err)
			return
		}
		// The send outlives the request: a browser that drops its request
		// after the answer was recorded must not turn it into a failure.
		err = sub.Submit(context.WithoutCancel(r.Context()), Submission{
			CardID: id, CommandID: cmdID, Source: card.Key.Source, Session: card.Key.Session,
			RequestID: card.Key.RequestID, Answer: answer, Fields: card.Request.Fields, By: by,
		})
		if err != nil {
			s.cfg.Logger.Warn("web: answer not queued", "card", string(id), "command", cmdID, "err", err)
			in.SettleSubmission(id, cmdID, inbox.SubmissionFailed, "unreachable", "not sent; your answer is kept")
			s.deps.Metrics.Answer("failed")
		} else {
			s.deps.Metrics.Answer("sent")
		}
		s.redirectBack(w, r, id, panel)
	}
}

// cameFromPanel reports whether the post came from the panel page (its
// Referer, same-origin by our Referrer-Policy).
func cameFromPanel(r *http.Request, base string) bool {
	ref, err := url.Parse(r.Referer())
	return err == nil && ref.Host == r.Host && strings.HasSuffix(strings.TrimSuffix(ref.Path, "/"), strings.TrimSuffix(base, "/")+"/panel")
}

// redirectBack sends the browser to the page (or panel) it posted from,
// keeping its filter, anchored at the card.
func (s *server) redirectBack(w http.ResponseWriter, r *http.Request, id inbox.CardID, panel bool) {
	target := s.cfg.BasePath
	if panel {
		target += "panel"
	}
	if ref, err := url.Parse(r.Referer()); err == nil && ref.RawQuery != "" && ref.Host == r.Host {
		target += "?" + ref.Query().Encode()
	}
	http.Redirect(w, r, target+"#"+domID(id), http.StatusSeeOther)
}
