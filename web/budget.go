package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/components"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/view"
)

// handlePrompt answers the whole of a card's prompt, as an escaped
// fragment (components.PromptFull): a card shows a long prompt only up to
// Config.PromptBytes, and its "Show all" fetches the rest here (or, with
// no script, links here).
func handlePrompt(in Inbox, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		card, ok := in.Card(inbox.CardID(chi.URLParam(r, "id")))
		if !ok {
			http.Error(w, "This question is not in the inbox (it may have been cleared).", http.StatusNotFound)
			return
		}
		// Control characters become U+FFFD, as in every other response.
		text := view.Text(card.Request.Prompt)
		buf, err := render.Buffer(r.Context(), components.PromptFull(text), len(text)+len(text)/8+128)
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		writeHTML(w, http.StatusOK, buf)
	}
}
