package web

import (
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
// their answer, 409 when the card can no longer be answered.
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
			http.Error(w, "This question is not in the inbox any more. Reload the page.", http.StatusNotFound)
			return
		}
		refuse := func(status int, code, msg string) {
			s.deps.Metrics.Answer("refused")
			s.writePage(w, r, status, panel, &render.Refused{Card: id, Input: form,
				Problems: []aep.Problem{{Code: code, Message: msg}}})
		}
		if !s.canSubmit() {
			refuse(http.StatusConflict, "watch_only", "This UI has no control token for the relay, so it cannot send answers. Your answer was not sent.")
			return
		}
		token := form.Get(render.NameToken)
		if token == "" {
			refuse(http.StatusBadRequest, "no_token", "This form is missing its token. Reload the page and send your answer again.")
			return
		}
		answer, problems := render.ParseAnswer(card.Request, form)
		if len(problems) > 0 {
			s.deps.Metrics.Answer("refused")
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
			// The same form posted twice (double click, resubmit): one command.
			s.redirectBack(w, r, id, panel)
			return
		case errors.Is(err, inbox.ErrInFlight):
			refuse(http.StatusConflict, "in_flight", "An answer to this question is already on its way to the agent. Wait for its reply before sending another.")
			return
		case errors.Is(err, inbox.ErrExpired):
			refuse(http.StatusConflict, "expired", "This question expired before your answer was sent. Nothing was sent to the agent.")
			return
		case errors.Is(err, inbox.ErrSettled):
			refuse(http.StatusConflict, "settled", settledMessage(card))
			return
		case errors.Is(err, inbox.ErrInformational):
			refuse(http.StatusConflict, "informational", "This question is answered in the agent's own interface, not here. Nothing was sent.")
			return
		case errors.Is(err, inbox.ErrNotFound):
			http.Error(w, "This question is not in the inbox any more. Reload the page.", http.StatusNotFound)
			return
		case errors.Is(err, inbox.ErrMalformed):
			refuse(http.StatusConflict, "malformed", "This request is malformed, so it cannot be answered here. Nothing was sent.")
			return
		case err != nil:
			s.internalError(w, r, err)
			return
		}
		err = sub.Submit(r.Context(), Submission{
			CardID: id, CommandID: cmdID, Source: card.Key.Source, Session: card.Session,
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

// settledMessage says why a card can no longer be answered.
func settledMessage(c inbox.Card) string {
	switch c.State {
	case inbox.StateTimedOut:
		return "The agent stopped waiting for this answer (timed out). Nothing was sent."
	case inbox.StateEnded:
		return "The agent's session ended before your answer was sent. Nothing was sent."
	}
	if c.Outcome != nil && c.Outcome.By != "" {
		return "This question was already answered by " + c.Outcome.By + ". Nothing was sent."
	}
	return "This question was already answered elsewhere. Nothing was sent."
}

// cameFromPanel reports whether the post came from the panel page (its
// Referer, same-origin by our Referrer-Policy).
func cameFromPanel(r *http.Request, base string) bool {
	ref, err := url.Parse(r.Referer())
	return err == nil && strings.HasSuffix(strings.TrimSuffix(ref.Path, "/"), strings.TrimSuffix(base, "/")+"/panel")
}

// redirectBack sends the browser to the page (or panel) it posted from,
// keeping its filter, anchored at the card.
func (s *server) redirectBack(w http.ResponseWriter, r *http.Request, id inbox.CardID, panel bool) {
	target := s.cfg.BasePath
	if panel {
		target += "panel"
	}
	if ref, err := url.Parse(r.Referer()); err == nil && ref.RawQuery != "" && (ref.Host == "" || ref.Host == r.Host) {
		target += "?" + ref.Query().Encode()
	}
	http.Redirect(w, r, target+"#"+domID(id), http.StatusSeeOther)
}
