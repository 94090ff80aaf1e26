package web

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/internal/inbox"
)

// Claims is what the UI needs of the inbox to say in the open who is on
// a question ("I'm on it") and who it is assigned to (*inbox.Inbox).
type Claims interface {
	Claim(id inbox.CardID, by string) (inbox.ClaimOutcome, error)
	Release(id inbox.CardID, by string) error
	EndClaims(by string) int
	Assign(id inbox.CardID, a inbox.Assignment) (inbox.Assignment, error)
}

// claimRelease is the claim post's field that ends the operator's own
// claim ("Not on it any more") instead of making or renewing it.
const claimRelease = "release"

// handleClaim takes a card's "I'm on it" (or, with claimRelease, "Not on
// it any more") from the signed-in operator: every open page is sent the
// card with the claim by push. The page script's post (HeaderFragment)
// gets the card's fragment back; a browser's own post the page again at
// the card (post/redirect/get). A claim renewed by the script while the
// operator types on the card is their activity: it keeps the claim from
// lapsing.
func handleClaim(cl Claims, pg *pages, m *Metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := inbox.CardID(chi.URLParam(r, "id"))
		panel := cameFromPanel(r, pg.base)
		post, ok := readPost(w, r, pg.site, panel)
		if !ok {
			return
		}
		by := operatorFrom(r.Context())
		var err error
		if post.Get(claimRelease) != "" {
			err = cl.Release(id, by)
		} else {
			var out inbox.ClaimOutcome
			if out, err = cl.Claim(id, by); err == nil && out.FirstClaim {
				m.FirstClaim(out.SinceAsked)
			}
		}
		switch {
		case errors.Is(err, inbox.ErrNotFound):
			pg.gone(w, r, post, panel)
			return
		case errors.Is(err, inbox.ErrNoClaimant):
			http.Error(w, "A claim says who is on a question: sign in with your name to claim one.", http.StatusConflict)
			return
		case errors.Is(err, inbox.ErrNotOpen):
			// Settled or expired meanwhile: the card as it now is says so.
		case err != nil:
			pg.internalError(w, r, err)
			return
		}
		if wantsFragment(r) {
			pg.cardFragment(w, r, http.StatusOK, id, nil)
			return
		}
		pg.redirectBack(w, r, id, panel)
	}
}
