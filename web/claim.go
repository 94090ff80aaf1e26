package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// Claims is what the UI needs of the inbox to say in the open who is on
// a question ("I’m on it") and who it is assigned to (*inbox.Inbox).
type Claims interface {
	Claim(id inbox.CardID, by string) (inbox.ClaimOutcome, error)
	Renew(id inbox.CardID, by string) (inbox.ClaimOutcome, error)
	Release(id inbox.CardID, by string) error
	EndClaims(by string) int
	Assign(id inbox.CardID, a inbox.Assignment) (inbox.Assignment, error)
}

// claimRelease is the claim post's field that ends the operator's own
// claim ("Not on it any more") instead of making or renewing it.
const claimRelease = "release"

// claimRenewField is the claim post's field of a renewal (the page script
// posts it as the operator types on a card they are on): it renews their
// own claim, or claims a question nobody is on, but never takes over
// another operator's.
const claimRenewField = "renew"

// handleClaim takes a card's "I’m on it" (or, with claimRelease, "Not on
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
			claim := cl.Claim
			if post.Get(claimRenewField) != "" {
				claim = cl.Renew
			}
			var out inbox.ClaimOutcome
			if out, err = claim(id, by); err == nil && out.FirstClaim {
				m.FirstClaim(out.Team, out.SinceAsked)
			}
		}
		if errors.Is(err, inbox.ErrNoClaimant) {
			refuseMark(w, err)
			return
		}
		afterMark(w, r, pg, post, panel, id, err)
	}
}

// afterMark answers a claim's or an assignment's post once the inbox
// has taken it (err): the card as it now is, as a fragment for the page
// script or the page again at the card; a card gone gets the gone page.
// A card settled or expired meanwhile (inbox.ErrNotOpen) is not an
// error: the card says so.
func afterMark(w http.ResponseWriter, r *http.Request, pg *pages, post url.Values, panel bool, id inbox.CardID, err error) {
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		pg.gone(w, r, post, panel)
		return
	case err != nil && !errors.Is(err, inbox.ErrNotOpen):
		pg.internalError(w, r, err)
		return
	}
	if wantsFragment(r) {
		pg.cardFragment(w, r, http.StatusOK, id, nil)
		return
	}
	pg.redirectBack(w, r, id, panel)
}

// assignTo is the assign post's field: the operator or the team the
// question is assigned to ("" ends the assignment).
const assignTo = "to"

// assignees are the operators a question may be assigned to: the named
// operators (--operators-file) and the people the identity provider
// signed in (PeopleList) whose role answers, by name. Empty with one
// shared secret (no list of people).
func (a *auth) assignees() []string {
	var ops []Operator
	if a.operators != nil {
		ops = a.operators.Get()
	}
	var out []string
	for _, op := range append(ops, a.people.Operators()...) {
		if op.role().answers() && !slices.ContainsFunc(out, func(n string) bool { return strings.EqualFold(n, op.Name) }) {
			out = append(out, op.Name)
		}
	}
	return out
}

// Refusals of a claim's or an assignment's post that are the UI's own
// (refusals.go words them).
var (
	errNoSuchAssignee = errors.New("web: no operator who answers questions has that name")
	errNoSuchTeam     = errors.New("web: no team of the routes file has that name")
)

// assignable is who a question may be assigned to, as they are now: the
// operators (auth.assignees) and the routes file's teams
// (routePages.teams).
type assignable struct {
	people, teams func() []string
}

// assignment reads an assign post's value to: a team's
// (view.AssignTeamPrefix and its name), an operator's name, or "" for
// nobody; one that names neither is errNoSuchTeam or errNoSuchAssignee.
func (as assignable) assignment(to string) (inbox.Assignment, error) {
	if to == "" {
		return inbox.Assignment{}, nil
	}
	if team, ok := strings.CutPrefix(to, view.AssignTeamPrefix); ok {
		if slices.Contains(as.teams(), team) {
			return inbox.Assignment{To: team, Team: true}, nil
		}
		if !slices.Contains(as.people(), to) {
			return inbox.Assignment{}, namedRefusal{errNoSuchTeam, team}
		}
	}
	if !slices.Contains(as.people(), to) {
		return inbox.Assignment{}, namedRefusal{errNoSuchAssignee, to}
	}
	return inbox.Assignment{To: to}, nil
}

// handleAssign assigns a question to a named operator or a team of the
// routes file (an answerer's or an admin's post; the field "to", a
// team's value view.AssignTeamValue, "" to end it): every open page is
// sent the card with "Assigned to bob by ann" by push, and the router
// notifies the assignee. A name that is no operator's who answers, or no
// team's, is refused 422 and nothing changes.
func handleAssign(cl Claims, pg *pages, who assignable) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := inbox.CardID(chi.URLParam(r, "id"))
		panel := cameFromPanel(r, pg.base)
		post, ok := readPost(w, r, pg.site, panel)
		if !ok {
			return
		}
		a, err := who.assignment(post.Get(assignTo))
		if err != nil {
			refuseMark(w, err)
			return
		}
		a.By = operatorFrom(r.Context())
		_, err = cl.Assign(id, a)
		afterMark(w, r, pg, post, panel, id, err)
	}
}
