package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// Resender sends an owed answer again (sent, no reply in time) with its
// own command id and bytes. A Submitter that has it offers "Send again"
// (*respond.Client does).
type Resender = answer.Resender

// handleSendAgain takes "Send the same answer again" on a card whose
// answer is owed: the answer service sends the same command once more,
// now, never a new one; an answer no longer owed sends nothing, and the
// card as it is says why. Like an answer post it answers with the card's
// fragment (the script) or a 303 to the page.
func handleSendAgain(svc *answer.Service, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := inbox.CardID(chi.URLParam(r, "id"))
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The request could not be read. Reload the page.", http.StatusBadRequest)
			return
		}
		cmd := r.PostForm.Get(form.NameCommand)
		switch err := svc.SendAgain(context.WithoutCancel(r.Context()), id, cmd); {
		case errors.Is(err, inbox.ErrNotFound):
			// Without the script, the styled page back to the inbox;
			// to the script, plain words (it withdraws the card).
			pg.gone(w, r, nil, cameFromPanel(r, pg.base))
			return
		case err != nil && !errors.Is(err, context.Canceled):
			pg.log.Info("web: owed answer not sent again now", "card", string(id), "command", cmd, "err", err)
		}
		if wantsFragment(r) {
			pg.cardFragment(w, r, http.StatusOK, id, nil)
			return
		}
		http.Redirect(w, r, pg.base+"#"+domID(id), http.StatusSeeOther)
	}
}
