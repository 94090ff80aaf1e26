package web

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/rules"
)

// carryRule is the carry-over post's field: the id of the rule the card
// showed missing its request by the connection.
const carryRule = "rule"

// handleCarry takes a card's "Let this rule answer this connection
// too" (an answerer's or an admin's post): the rule the card names,
// which matched the request in all but the connection claiming its
// session, answers that connection from now on, and answers this card
// as it would have (the operator saw both). No other card is answered
// by it: those waiting stay for the operators. The change is kept with
// who and when (the Rules page's changes), the answer as any rule's
// (History). Every open page gets the card by push; the browser's own
// post gets the page again at the card. A card that no longer shows the
// rule is refused (409) and nothing changes.
func handleCarry(pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := inbox.CardID(chi.URLParam(r, "id"))
		panel := cameFromPanel(r, pg.base)
		post, ok := readPost(w, r, pg.site, panel)
		if !ok {
			return
		}
		rp := pg.rules
		if !rp.makesRules() {
			http.Error(w, "This UI is watch-only: it runs no rule. Nothing was changed.", http.StatusConflict)
			return
		}
		who := operatorFrom(r.Context())
		done, err := rp.rules.Carry(r.Context(), post.Get(carryRule), id, who)
		switch {
		case errors.Is(err, rules.ErrCarryGone):
			pg.gone(w, r, post, panel)
			return
		case errors.Is(err, rules.ErrCarryStale), errors.Is(err, rules.ErrCarryOff):
			http.Error(w, "This question no longer shows that rule (it was answered or closed, or the rule was paused, changed or deleted): nothing was changed. Go back to the question and look again.", http.StatusConflict)
			return
		case errors.Is(err, rules.ErrCarryUnknown):
			http.Error(w, "The relay names no single connection for this question's session just now, so there is none to let the rule answer: nothing was changed. Answer the question yourself.", http.StatusConflict)
			return
		case err != nil && done.Instance == "":
			pg.internalError(w, r, err)
			return
		case err != nil:
			// Carried over; this card's answer was not recorded: it
			// waits for the operators, and the next request is the
			// rule's.
			pg.log.Error("web: rule carried over, but its answer to the card was not recorded", "rule", done.Rule.ID, "card", string(id), "err", err)
		}
		pg.log.Info("rule carried over", "rule", done.Rule.ID, "instance", done.Instance, "operator", who, "answered", done.Answered)
		pg.redirectBack(w, r, id, panel)
	}
}
