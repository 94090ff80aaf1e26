package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
)

const veraSecret = "vera-own-secret-0123456789"

// withTeam names the operators Ann and Bo (answerers) and Vera (a
// viewer), each with their own secret.
func withTeam(t *testing.T) option {
	return func(s *setup) {
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: bcryptHash(t, annSecret)}, {Name: "Bo", Hash: bcryptHash(t, boSecret)},
			{Name: "Vera", Hash: bcryptHash(t, veraSecret), Role: RoleViewer}}
	}
}

// signInAs signs a new browser in as name with secret and returns it and
// its session cookie's value.
func (h *harness) signInAs(name, secret string) (*http.Client, string) {
	h.t.Helper()
	c := h.client()
	r := h.postForm(c, "signin", url.Values{"token": {secret}, "name": {name}})
	require.Equal(h.t, http.StatusSeeOther, r.StatusCode, "sign-in of %s: %s", name, r.body)
	return c, sessionCookie(r.Response).Value
}

// claimOn is who card id's claim line names on the page c sees ("" none).
func (h *harness) claimOn(c *http.Client, id inbox.CardID) string {
	h.t.Helper()
	return h.getPage(c, "").doc(h.t).Find("#"+domID(id)+` [data-testid="claim"]`).AttrOr("data-claimant", "")
}

// Ann presses "I’m on it": Bo's open page is sent the card with "Ann is
// on it" in the very next push, his page offers him "Take it over" (a
// claim informs; his press would make it his), Ann's says "You are on it" with "Not on it any
// more", and the claim is counted as the question's first.
func TestClaimIsShownOnAnotherOperatorsPageWithinOnePush(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	bo, boCookie := h.signInAs("Bo", boSecret)
	assert.Empty(t, h.claimOn(bo, id))
	page := h.getPage(bo, "").doc(t)
	assert.Equal(t, "I’m on it", page.Find("#"+domID(id)+` [data-testid="claim-button"]`).Text(), "the button's words, with a typographic apostrophe")
	assert.Contains(t, page.Find(`[data-testid="keys"]`).Text(), "I’m on it: tell the other operators", "and the shortcut's, the same")
	ps := h.openPush("?since="+seqID(h.in), "Cookie", cookieName+"="+boCookie)
	require.Equal(t, "status", ps.next().Event, "on connect: the status")

	h.clk.Add(90 * time.Second)
	r := h.postForm(ann, "cards/"+string(id)+"/claim", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)

	card := cardMsg(t, ps.next())
	claim := card.Find(`[data-testid="claim"]`)
	require.Equal(t, 1, claim.Length(), "the pushed card says who is on it")
	assert.Equal(t, "Ann", claim.AttrOr("data-claimant", ""))
	assert.Contains(t, strings.Join(strings.Fields(claim.Text()), " "), "Ann is on it · just now")
	assert.Equal(t, "Take it over", card.Find(`[data-testid="claim-button"]`).Text(),
		"Bo may still say he is on it, and his button says it takes the question over from Ann")

	mine := h.getPage(ann, "").doc(t).Find("#" + domID(id))
	assert.Contains(t, mine.Find(`[data-testid="claim"]`).Text(), "You are on it")
	assert.Equal(t, "Not on it any more", mine.Find(`[data-testid="claim-button"]`).Text())

	h.clk.Add(2 * time.Minute)
	assert.Contains(t, h.getPage(bo, "").doc(t).Find("#"+domID(id)+` [data-testid="claim"]`).Text(), "2 min")
	metrics := h.getPage(ann, "metrics").body
	assert.Contains(t, metrics, `aepforms_time_to_first_claim_seconds_bucket{le="120"} 1`)
	assert.Contains(t, metrics, `aepforms_time_to_first_claim_seconds_bucket{le="60"} 0`)
	assert.Contains(t, metrics, "aepforms_time_to_first_claim_seconds_count 1")

	r = h.postForm(ann, "cards/"+string(id)+"/claim", url.Values{"release": {"1"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	assert.Empty(t, h.claimOn(bo, id), "released")
}

// Bo answers a question Ann is on: the post comes back 409 with his
// input kept and a problem naming Ann, and nothing is sent; sending the
// same form again (it now carries the confirmation) answers.
func TestAnsweringAClaimedQuestionAsksToConfirmNamingTheClaimant(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	bo, _ := h.signInAs("Bo", boSecret)
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(id)+"/claim", nil).StatusCode)

	action, token := answerForm(t, h.getPage(bo, "").doc(t), id)
	r := h.postForm(bo, h.relative(action), url.Values{"token": {token}, "f0": {"payments"}})
	require.Equal(t, http.StatusConflict, r.StatusCode, "%s", r.body)
	assert.Empty(t, h.sub.all(), "nothing sent before Bo confirms")
	card := r.doc(t).Find("#" + domID(id))
	summary := card.Find(".error-summary")
	assert.Contains(t, summary.Text(), "Ann is on it", "the confirmation names the claimant")
	assert.Equal(t, "payments", card.Find(`input[name="f0"]`).AttrOr("value", ""), "what Bo typed is kept")
	over := card.Find(`input[name="` + view.ClaimFormName + `"]`)
	require.Equal(t, 1, over.Length(), "the form carries the confirmation back")
	assert.Equal(t, "Ann", over.AttrOr("value", ""))

	action, token = answerForm(t, r.doc(t), id)
	r = h.postForm(bo, h.relative(action), url.Values{"token": {token}, "f0": {"payments"}, view.ClaimFormName: {"Ann"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	sent := h.sub.all()
	require.Len(t, sent, 1, "confirmed, the answer is sent once")
	assert.Equal(t, "Bo", sent[0].By)
	assert.Empty(t, h.claimOn(ann, id), "an answer ends the claim")
}

// Ann's own answer to the question she is on goes at once.
func TestTheClaimantAnswersWithoutConfirming(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", permissionReq())
	ann, _ := h.signInAs("Ann", annSecret)
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(id)+"/claim", nil).StatusCode)
	action, token := answerForm(t, h.getPage(ann, "").doc(t), id)
	r := h.postForm(ann, h.relative(action), url.Values{"token": {token}, form.NameOption: {"0"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	assert.Len(t, h.sub.all(), 1)
}

// A viewer is offered no "I’m on it", and a hand-made claim post is
// refused 403 and claims nothing.
func TestAViewerCannotClaim(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", nameForm())
	vera, _ := h.signInAs("Vera", veraSecret)
	bo, _ := h.signInAs("Bo", boSecret)
	page := h.getPage(vera, "").doc(t)
	assert.Zero(t, page.Find(`[data-testid="claim-button"], [data-testid="claim-form"]`).Length(), "not offered")
	assert.Equal(t, 1, h.getPage(bo, "").doc(t).Find("#"+domID(id)+` [data-testid="claim-button"]`).Length(), "an answerer is")
	r := h.postForm(vera, "cards/"+string(id)+"/claim", nil)
	assert.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.body)
	assert.Empty(t, h.claimOn(bo, id), "nothing claimed")
}

// Signing out ends the operator's claims on every open page.
func TestSignOutEndsTheClaim(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	bo, boCookie := h.signInAs("Bo", boSecret)
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(id)+"/claim", nil).StatusCode)
	require.Equal(t, "Ann", h.claimOn(bo, id))
	ps := h.openPush("?since="+seqID(h.in), "Cookie", cookieName+"="+boCookie)
	require.Equal(t, "status", ps.next().Event, "on connect: the status")

	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "signout", nil).StatusCode)
	card := cardMsg(t, ps.next())
	assert.Zero(t, card.Find(`[data-testid="claim"]`).Length(), "pushed: nobody is on it")
	assert.Empty(t, h.claimOn(bo, id))
}

// A claim lapses after the claim idle time without Ann's activity; her
// activity (the script claims again as she types) keeps it.
func TestClaimLapsesWhenIdle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t), withInbox(func(o *inbox.Options) { o.ClaimIdle = 5 * time.Minute }))
	id := h.ask("s1", "r1", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	bo, _ := h.signInAs("Bo", boSecret)
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(id)+"/claim", nil).StatusCode)
	h.clk.Add(4 * time.Minute)
	require.Equal(t, http.StatusOK, h.postForm(ann, "cards/"+string(id)+"/claim", nil, HeaderFragment, "card").StatusCode, "activity")
	h.clk.Add(4 * time.Minute)
	h.in.Sweep()
	assert.Equal(t, "Ann", h.claimOn(bo, id), "4 min since her activity")
	h.clk.Add(time.Minute + time.Second)
	assert.Empty(t, h.claimOn(bo, id), "5 min without activity: lapsed, even before the sweep")
	h.in.Sweep()
	assert.Empty(t, h.claimOn(bo, id))
}

// "Mine" shows the questions the operator is on or is assigned;
// "Unclaimed" those nobody is on.
func TestMineAndUnclaimedFilters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	r1, r2 := h.ask("s1", "r1", nameForm()), h.ask("s1", "r2", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(r1)+"/claim", nil).StatusCode)
	ids := func(path string) []string {
		var out []string
		h.getPage(ann, path).doc(t).Find(`#open [data-testid="card"]`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, s.AttrOr("data-card", ""))
		})
		return out
	}
	assert.Equal(t, []string{string(r1)}, ids("?claim=mine"))
	assert.Equal(t, []string{string(r2)}, ids("?claim=unclaimed"))
	var links []string
	h.getPage(ann, "?claim=mine").doc(t).Find(`[data-testid="claim-filter"]`).Each(func(_ int, s *goquery.Selection) {
		links = append(links, s.Text()+" "+s.AttrOr("href", "")+" "+s.AttrOr("aria-current", ""))
	})
	assert.Equal(t, []string{"All questions / ", "Mine /?claim=mine page", "Unclaimed /?claim=unclaimed "}, links)
	for q, want := range map[string]string{"?claim=mine": "Showing only Mine Show everything", "?claim=unclaimed": "Showing only Unclaimed Show everything"} {
		assert.Equal(t, want, strings.Join(strings.Fields(h.getPage(ann, q).doc(t).Find(`[data-testid="filter"]`).Text()), " "), "the filter line names %s in the page's words", q)
	}
}

// Ann assigns a question to Bo: his page (and everyone's) shows
// "Assigned to Bo by Ann" by push, it is under his "Mine"; a name that
// is no answerer's is refused 422, a viewer's post 403, and the choice
// of assignees offered is the answerers.
func TestAssignToAnOperator(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	bo, boCookie := h.signInAs("Bo", boSecret)
	vera, _ := h.signInAs("Vera", veraSecret)
	var offered []string
	h.getPage(ann, "").doc(t).Find("#" + domID(id) + ` [data-testid="assign-to"] option`).Each(func(_ int, s *goquery.Selection) {
		offered = append(offered, s.AttrOr("value", ""))
	})
	assert.Equal(t, []string{"", "Ann", "Bo"}, offered, "nobody, or an operator who answers")
	assert.Zero(t, h.getPage(vera, "").doc(t).Find(`[data-testid="assign-form"]`).Length(), "a viewer is offered none")
	ps := h.openPush("?since="+seqID(h.in), "Cookie", cookieName+"="+boCookie)
	require.Equal(t, "status", ps.next().Event)

	assert.Equal(t, http.StatusUnprocessableEntity, h.postForm(ann, "cards/"+string(id)+"/assign", url.Values{"to": {"Vera"}}).StatusCode)
	assert.Equal(t, http.StatusForbidden, h.postForm(vera, "cards/"+string(id)+"/assign", url.Values{"to": {"Bo"}}).StatusCode)
	r := h.postForm(ann, "cards/"+string(id)+"/assign", url.Values{"to": {"Bo"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)

	card := cardMsg(t, ps.next())
	assert.Equal(t, "Assigned to Bo by Ann", strings.Join(strings.Fields(card.Find(`[data-testid="assigned"]`).Text()), " "))
	assert.Equal(t, 1, h.getPage(bo, "?claim=mine").doc(t).Find("#"+domID(id)).Length(), "under Bo's Mine")
	assert.Equal(t, "Bo", h.getPage(ann, "").doc(t).Find("#"+domID(id)+` [data-testid="assign-to"] option[selected]`).AttrOr("value", ""))
}

// With a routes file, Ann may assign a question to a team as well as to
// a person: the teams are a group of their own in the choice, told apart
// from the people; the card then says "Assigned to team oncall by Ann"
// and the choice shows the team chosen. A team the routes file does not
// name is refused 422 naming it, and the assignment is left as it was.
func TestAssignToATeam(t *testing.T) {
	t.Parallel()
	f, _ := writeRoutes(t, routesFile)
	h := newHarness(t, withTeam(t), func(s *setup) { s.deps.Routes = f })
	id := h.ask("s1", "r1", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	vera, _ := h.signInAs("Vera", veraSecret)

	sel := h.getPage(ann, "").doc(t).Find("#" + domID(id) + ` [data-testid="assign-to"]`)
	groups := map[string][]string{}
	sel.Find("optgroup").Each(func(_ int, g *goquery.Selection) {
		g.Find("option").Each(func(_ int, o *goquery.Selection) {
			groups[g.AttrOr("label", "")] = append(groups[g.AttrOr("label", "")], o.AttrOr("value", "")+"="+o.Text())
		})
	})
	assert.Equal(t, map[string][]string{"People": {"Ann=Ann", "Bo=Bo"}, "Teams": {"team:leads=leads (team)", "team:oncall=oncall (team)"}}, groups)

	r := h.postForm(ann, "cards/"+string(id)+"/assign", url.Values{"to": {"team:nobody"}})
	assert.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	assert.Contains(t, r.body, "No team of the routes file is called “nobody”")
	assert.Equal(t, http.StatusForbidden, h.postForm(vera, "cards/"+string(id)+"/assign", url.Values{"to": {"team:oncall"}}).StatusCode)
	assert.Zero(t, h.getPage(ann, "").doc(t).Find("#"+domID(id)+` [data-testid="assigned"]`).Length(), "a refused post assigns nothing")

	r = h.postForm(ann, "cards/"+string(id)+"/assign", url.Values{"to": {"team:oncall"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	card := h.getPage(ann, "").doc(t).Find("#" + domID(id))
	assert.Equal(t, "Assigned to team oncall by Ann", strings.Join(strings.Fields(card.Find(`[data-testid="assigned"]`).Text()), " "))
	assert.Equal(t, "team:oncall", card.Find(`[data-testid="assign-to"] option[selected]`).AttrOr("value", ""))
	c, ok := h.in.Card(id)
	require.True(t, ok)
	assert.Equal(t, inbox.Assignment{To: "oncall", Team: true, By: "Ann"}, trimAssignment(c.Verdict(time.Now(), inbox.Viewer{}).Assigned))
}

// trimAssignment is a without its time and order (nil: none).
func trimAssignment(a *inbox.Assignment) inbox.Assignment {
	if a == nil {
		return inbox.Assignment{}
	}
	return inbox.Assignment{To: a.To, Team: a.Team, By: a.By}
}

// The time to first claim is measured by team as well: a question routed
// to oncall claimed 90 s after it arrived is counted under oncall (and
// in every question's histogram), one routed nowhere only in the latter.
func TestTimeToFirstClaimByTeam(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	routed := h.ask("s1", "r1", nameForm())
	unrouted := h.ask("s1", "r2", nameForm())
	require.True(t, h.in.SetRouting(routed, inbox.Routing{Team: "oncall"}))
	ann, _ := h.signInAs("Ann", annSecret)
	h.clk.Add(90 * time.Second)
	for _, id := range []inbox.CardID{routed, unrouted} {
		require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(id)+"/claim", nil).StatusCode)
	}
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(routed)+"/claim", nil).StatusCode, "a renewal is no first claim")
	metrics := h.getPage(ann, "metrics").body
	assert.Contains(t, metrics, "aepforms_time_to_first_claim_seconds_count 2")
	assert.Contains(t, metrics, `aepforms_team_time_to_first_claim_seconds_bucket{team="oncall",le="60"} 0`)
	assert.Contains(t, metrics, `aepforms_team_time_to_first_claim_seconds_bucket{team="oncall",le="120"} 1`)
	assert.Contains(t, metrics, `aepforms_team_time_to_first_claim_seconds_count{team="oncall"} 1`)
	assert.Contains(t, metrics, `aepforms_team_time_to_first_claim_seconds_sum{team="oncall"} 90`)
	assert.Equal(t, 1, strings.Count(metrics, "aepforms_team_time_to_first_claim_seconds_count{"), "one team: %s", metrics)
}

// Ann's typing renews her claim, never takes one back: once Bo has
// taken the question over, the renewal her page script posts as she
// types (before the push tells her page, or from a page that lost its
// push stream) leaves Bo on it.
func TestARenewalDoesNotTakeTheClaimBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", nameForm())
	ann, _ := h.signInAs("Ann", annSecret)
	bo, _ := h.signInAs("Bo", boSecret)
	claim := "cards/" + string(id) + "/claim"
	renew := url.Values{claimRenewField: {"1"}}
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, claim, nil).StatusCode)
	require.Equal(t, http.StatusOK, h.postForm(ann, claim, renew, HeaderFragment, "card").StatusCode, "her own claim is renewed")
	assert.Equal(t, "Ann", h.claimOn(bo, id))

	require.Equal(t, http.StatusSeeOther, h.postForm(bo, claim, nil).StatusCode, "Take it over")
	require.Equal(t, http.StatusOK, h.postForm(ann, claim, renew, HeaderFragment, "card").StatusCode)
	assert.Equal(t, "Bo", h.claimOn(ann, id), "Bo is still on it")
}

// Ann is in oncall, Bo in leads. A question assigned to team oncall is
// under Ann's "Mine", pushed to her open "Mine" page and counted there,
// and not under Bo's; reassigned to leads, it leaves Ann's page by push
// and arrives on Bo's.
func TestMineHoldsTheQuestionsAssignedToMyTeam(t *testing.T) {
	t.Parallel()
	f, _ := writeRoutes(t, routesFile)
	h := newHarness(t, func(s *setup) {
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: bcryptHash(t, annSecret), Teams: []string{"oncall"}},
			{Name: "Bo", Hash: bcryptHash(t, boSecret), Teams: []string{"leads"}}}
		s.deps.Routes = f
	})
	id := h.ask("s1", "r1", nameForm())
	ann, annCookie := h.signInAs("Ann", annSecret)
	bo, boCookie := h.signInAs("Bo", boSecret)
	mine := func(c *http.Client) []string {
		var out []string
		h.getPage(c, "?claim=mine").doc(t).Find(`#open [data-testid="card"]`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, s.AttrOr("data-card", ""))
		})
		return out
	}
	require.Empty(t, mine(ann), "assigned to nobody: under nobody's Mine")
	annPush := h.openPush("?claim=mine&since="+seqID(h.in), "Cookie", cookieName+"="+annCookie)
	boPush := h.openPush("?claim=mine&since="+seqID(h.in), "Cookie", cookieName+"="+boCookie)
	require.Equal(t, "status", annPush.next().Event)
	require.Equal(t, "status", boPush.next().Event)

	require.Equal(t, http.StatusSeeOther, h.postForm(bo, "cards/"+string(id)+"/assign", url.Values{"to": {"team:oncall"}}).StatusCode)
	m := annPush.nextBut("batches", "status")
	require.Equal(t, "card", m.Event, "pushed to Ann's Mine: got %q", m.Event)
	assert.Equal(t, domID(id), attr(cardMsg(t, m), "id"))
	m = boPush.nextBut("batches", "status")
	assert.Equal(t, "remove", m.Event, "not on Bo's Mine: got %q", m.Event)
	assert.Equal(t, []string{string(id)}, mine(ann), "under Ann's Mine: her team's")
	assert.Empty(t, mine(bo), "not under Bo's: not his team's")
	pending := func(c *http.Client) string {
		return h.getPage(c, "?claim=mine").doc(t).Find(`[data-testid="pending-count"]`).AttrOr("data-pending", "")
	}
	assert.Equal(t, "1", pending(ann), "counted on Ann's Mine")
	assert.Equal(t, "0", pending(bo), "not on Bo's")

	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "cards/"+string(id)+"/assign", url.Values{"to": {"team:leads"}}).StatusCode)
	m = annPush.nextBut("batches", "status")
	assert.Equal(t, "remove", m.Event, "reassigned: it leaves Ann's Mine: got %q", m.Event)
	assert.Equal(t, domID(id), m.Data)
	m = boPush.nextBut("batches", "status")
	require.Equal(t, "card", m.Event, "and arrives on Bo's: got %q", m.Event)
	assert.Equal(t, domID(id), attr(cardMsg(t, m), "id"))
	assert.Empty(t, mine(ann))
	assert.Equal(t, []string{string(id)}, mine(bo))
	assert.Equal(t, "0", pending(ann))
	assert.Equal(t, "1", pending(bo))
}
