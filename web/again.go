package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// Resender sends an owed answer again (sent, no reply in time) with its
// own command id and bytes. A Submitter that has it offers "Send again"
// (*respond.Client does).
type Resender interface {
	SendAgain(ctx context.Context, commandID string) error
}

// handleSendAgain takes "Send the same answer again" on a card whose
// answer is owed: the same command, once more, now. It never makes a new
// command; an answer no longer owed (settled, already on its way again)
// sends nothing, and the card as it is says why. Like an answer post it
// answers with the card's fragment (the script) or a 303 to the page.
func handleSendAgain(in Inbox, sub Submitter, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := inbox.CardID(chi.URLParam(r, "id"))
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The request could not be read. Reload the page.", http.StatusBadRequest)
			return
		}
		card, ok := in.Card(id)
		if !ok {
			// Without the script, the styled page back to the inbox;
			// to the script, plain words (it withdraws the card).
			pg.gone(w, r, nil, cameFromPanel(r, pg.base))
			return
		}
		cmd := r.PostForm.Get(form.NameCommand)
		re, can := sub.(Resender)
		if can && card.Verdict(pg.now(), pg.viewer).Owed && card.Submission.CommandID == cmd {
			if err := re.SendAgain(context.WithoutCancel(r.Context()), cmd); err != nil && !errors.Is(err, context.Canceled) {
				pg.log.Info("web: owed answer not sent again now", "card", string(id), "command", cmd, "err", err)
			}
		}
		if wantsFragment(r) {
			pg.cardFragment(w, r, http.StatusOK, id, nil)
			return
		}
		http.Redirect(w, r, pg.base+"#"+domID(id), http.StatusSeeOther)
	}
}
