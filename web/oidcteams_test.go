package web

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// teamsOIDC maps the provider's groups as a team's operators would:
// staff answer, aepforms-admins administer, and the provider's
// /eng/oncall group is the oncall team; the routes file has the teams
// oncall and leads (so the group oncall is that team without mapping).
func teamsOIDC(recheck time.Duration) func(*OIDC) {
	return func(o *OIDC) {
		o.Roles = map[Role][]string{RoleAnswerer: {"staff"}, RoleAdmin: {"aepforms-admins"}}
		o.Teams = map[string]string{"/eng/oncall": "oncall"}
		o.Recheck = recheck
	}
}

// withRoutesFile gives the server the test's routes file (teams oncall
// and leads).
func withRoutesFile(t *testing.T) option {
	f, _ := writeRoutes(t, routesFile)
	return func(s *setup) { s.deps.Routes = f }
}

// operatorsListed are the Operators and routes page's rows as the
// admin with cookie jar c sees them: name to role, teams and how they
// sign in.
func operatorsListed(t *testing.T, h *harness, c *http.Client) map[string][]string {
	t.Helper()
	r := h.getPage(c, "routes")
	require.Equal(t, http.StatusOK, r.StatusCode, "%.300s", r.body)
	rows := map[string][]string{}
	r.doc(t).Find(`[data-testid="operator-row"]`).Each(func(_ int, s *goquery.Selection) {
		var cells []string
		s.Find("td").Each(func(_ int, c *goquery.Selection) { cells = append(cells, strings.TrimSpace(c.Text())) })
		rows[strings.TrimSpace(s.Find("th").Text())] = cells
	})
	return rows
}

// offeredAssignees are the people (not the teams) the card id's assign list offers to the
// operator with cookie jar c.
func offeredAssignees(t *testing.T, h *harness, c *http.Client, id string) []string {
	t.Helper()
	var offered []string
	h.getPage(c, "").doc(t).Find("#" + id + ` [data-testid="assign-to"] option`).Each(func(_ int, s *goquery.Selection) {
		if v := s.AttrOr("value", ""); v != "" && !strings.HasPrefix(v, "team:") {
			offered = append(offered, v)
		}
	})
	return offered
}

// An operator signed in at the provider is in the teams their groups
// say: a group named like a team of the routes file (ann's oncall), or
// one --oidc-team maps (olga's /eng/oncall); otto, staff only, is in
// none. The admin's page lists each person seen with role, teams and
// when last seen, and the answerers among them are offered in the
// assign list and can be assigned a question.
func TestOIDCGroupsGiveTeamsAndPeopleAreAssignable(t *testing.T) {
	t.Parallel()
	h, _ := oidcHarness(t, teamsOIDC(time.Hour), withRoutesFile(t))
	id := h.ask("s1", "r1", nameForm())
	ann, olga, otto, ada, vera := h.browser(), h.browser(), h.browser(), h.browser(), h.browser()
	for c, user := range map[*http.Client]string{ann: "ann", olga: "olga", otto: "otto", ada: "ada", vera: "vera"} {
		h.signInAtOP(c, user)
	}
	seen := "at " + strings.TrimPrefix(h.cfg.OIDC.Issuer, "http://") + ", last seen " + h.clk.Now().UTC().Format("2 Jan 15:04 UTC")
	assert.Equal(t, map[string][]string{
		"ada":  {"admin", "none", seen},
		"ann":  {"answerer", "oncall", seen},
		"olga": {"answerer", "oncall", seen},
		"otto": {"answerer", "none", seen},
		"vera": {"viewer", "none", seen},
	}, operatorsListed(t, h, ada), "every person seen, with the teams their groups give")
	page := h.getPage(ada, "routes").doc(t)
	assert.Contains(t, page.Find(`[data-testid="role-map"]`).Text(), "team oncall: groups holds /eng/oncall", "the admin sees how groups map to teams")
	teams := page.Find(`[data-testid="teams"]`).Text()
	assert.Contains(t, teams, "ann", "the oncall team lists its members")
	assert.Contains(t, teams, "olga")

	assert.Equal(t, []string{"ada", "ann", "olga", "otto"}, offeredAssignees(t, h, ann, domID(id)), "the people who answer are offered")
	r := h.postForm(ann, "cards/"+string(id)+"/assign", url.Values{"to": {"olga"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	card := h.getPage(olga, "?claim=mine").doc(t).Find("#" + domID(id))
	require.Equal(t, 1, card.Length(), "under olga's Mine")
	assert.Equal(t, "Assigned to olga by ann", strings.Join(strings.Fields(card.Find(`[data-testid="assigned"]`).Text()), " "))
	assert.Equal(t, http.StatusUnprocessableEntity, h.postForm(ann, "cards/"+string(id)+"/assign", url.Values{"to": {"vera"}}).StatusCode, "a viewer is no assignee")

	// Assigned to team oncall: under the Mine of ann (in oncall by her
	// groups), not of ada (in no team).
	r = h.postForm(ada, "cards/"+string(id)+"/assign", url.Values{"to": {"team:oncall"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	assert.Equal(t, 1, h.getPage(ann, "?claim=mine").doc(t).Find("#"+domID(id)).Length(), "under ann's Mine: her group's team")
	assert.Zero(t, h.getPage(ada, "?claim=mine").doc(t).Find("#"+domID(id)).Length(), "not under ada's")
}

// At each recheck (--oidc-recheck) the role and teams are read again
// from the provider with the sign-in's refresh token: ann, taken out of
// oncall, keeps answering but leaves the team; then, taken out of staff
// (demoted), her session ends at the next recheck, and signing in again
// makes her a viewer. Before the recheck nothing changes.
func TestOIDCRecheckReadsTheRoleAndTeamsAgain(t *testing.T) {
	t.Parallel()
	h, o := oidcHarness(t, teamsOIDC(5*time.Minute), withRoutesFile(t))
	ann, ada := h.browser(), h.browser()
	h.signInAtOP(ann, "ann")
	h.signInAtOP(ada, "ada")
	require.Equal(t, []string{"answerer", "oncall"}, operatorsListed(t, h, ada)["ann"][:2])

	o.SetGroups("ann", "staff")
	h.clk.Add(time.Minute)
	assert.Equal(t, []string{"answerer", "oncall"}, operatorsListed(t, h, ada)["ann"][:2], "nothing read again before the recheck is due")
	h.clk.Add(5 * time.Minute)
	require.Equal(t, http.StatusOK, h.getPage(ann, "").StatusCode, "still an answerer: the session goes on")
	assert.Equal(t, []string{"answerer", "none"}, operatorsListed(t, h, ada)["ann"][:2], "out of oncall at the recheck")

	o.SetGroups("ann", "auditors")
	h.clk.Add(6 * time.Minute)
	r := h.do(stay(ann), h.request(http.MethodGet, h.url(""), nil, "Accept", "text/html"))
	assert.Equal(t, http.StatusSeeOther, r.StatusCode, "demoted at the provider: the session ends at the recheck")
	assert.Contains(t, r.Header.Get("Location"), "signin")
	id := h.ask("s1", "r1", nameForm())
	assert.Equal(t, http.StatusUnauthorized, h.postForm(ann, "cards/"+string(id)+"/answer", url.Values{"f0": {"x"}}).StatusCode, "her answer is refused")
	assert.Equal(t, []string{"viewer", "none"}, operatorsListed(t, h, ada)["ann"][:2])

	again := h.browser()
	h.signInAtOP(again, "ann")
	assert.Equal(t, "(viewer)", h.getPage(again, "").doc(t).Find(`[data-testid="role"]`).Text(), "signed in again, a viewer")
}

// A refresh token the provider no longer takes (the person disabled, the
// token revoked) ends the session at the recheck; a provider that does
// not answer leaves it as it is until the next one.
func TestOIDCRecheckWhenTheProviderRefusesOrIsDown(t *testing.T) {
	t.Parallel()
	sessions := newMemorySessions()
	h, o := oidcHarness(t, teamsOIDC(time.Minute), func(s *setup) { s.deps.Sessions = sessions })
	ann := h.browser()
	h.signInAtOP(ann, "ann")

	o.Down(true)
	h.clk.Add(2 * time.Minute)
	assert.Equal(t, http.StatusOK, h.getPage(ann, "").StatusCode, "the provider down: the session goes on")
	o.Down(false)

	sessions.mu.Lock()
	var hash, subject string
	for _, s := range sessions.m {
		hash, subject = s.IDHash, s.Subject
	}
	sessions.mu.Unlock()
	require.NotEmpty(t, subject, "the session keeps the subject it signed in as")
	sealed := newAuth(h.cfg, sessions).sealRefresh("a-token-the-provider-never-issued", subject)
	require.NoError(t, sessions.SetSessionRefresh(t.Context(), hash, sealed))
	h.clk.Add(2 * time.Minute)
	r := h.do(stay(ann), h.request(http.MethodGet, h.url(""), nil, "Accept", "text/html"))
	assert.Equal(t, http.StatusSeeOther, r.StatusCode, "a refused refresh token ends the session")
}

// The people seen are kept in the journal: after a restart (the journal
// opened again, nobody signed in since), the admin's page and the assign
// list still know them.
func TestOIDCPeopleSurviveARestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "aepforms.db")
	j, err := sqlite.Open(path, sqlite.Options{})
	require.NoError(t, err)
	h, _ := oidcHarness(t, teamsOIDC(time.Hour), withRoutesFile(t), func(s *setup) {
		s.cfg.People = NewPeopleList(j, 0, nil)
	})
	h.signInAtOP(h.browser(), "olga")
	require.NoError(t, j.Close())

	j, err = sqlite.Open(path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	people := NewPeopleList(j, 0, nil)
	require.NoError(t, people.Refresh(t.Context()))
	h2, _ := oidcHarness(t, teamsOIDC(time.Hour), withRoutesFile(t), func(s *setup) { s.cfg.People = people })
	id := h2.ask("s1", "r1", nameForm())
	ada := h2.browser()
	h2.signInAtOP(ada, "ada")
	assert.Equal(t, []string{"answerer", "oncall"}, operatorsListed(t, h2, ada)["olga"][:2], "olga, seen before the restart")
	assert.Contains(t, offeredAssignees(t, h2, ada, domID(id)), "olga")
}
