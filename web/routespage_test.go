package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routes"
)

const routesFile = `{"teams": {"oncall": {"webhook": "https://chat.example/hooks/abc-secret", "remind": "5m", "escalate": "15m", "escalate_to": "leads"},
           "leads":  {"webhook": "https://chat.example/hooks/def-secret"}},
 "routes": [{"agent": "claude-code", "kind": "permission", "team": "oncall"},
            {"session_label": "release-*", "team": "leads"},
            {"team": "oncall"}]}`

// writeRoutes writes a routes file and loads it.
func writeRoutes(t *testing.T, body string) (*routes.File, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "routes.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	f, err := routes.Load(p, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return f, p
}

// An admin sees the teams and routes in force on the Routes page (a
// webhook by its origin only: its path is a secret), linked from the
// inbox; an answerer is refused it and offered no link. A change of the
// file that does not read is named there, the last good routes still
// shown.
func TestAdminViewsTheRoutes(t *testing.T) {
	t.Parallel()
	f, path := writeRoutes(t, routesFile)
	annHash, boHash := bcryptHash(t, annSecret), bcryptHash(t, boSecret)
	h := newHarness(t, func(s *setup) {
		s.deps.Routes = f
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: annHash, Role: RoleAdmin, Teams: []string{"leads"}},
			{Name: "Bo", Hash: boHash, Teams: []string{"oncall"}}}
	})
	ann, bo := h.client(), h.client()
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "signin", url.Values{"token": {annSecret}, "name": {"Ann"}}).StatusCode)
	require.Equal(t, http.StatusSeeOther, h.postForm(bo, "signin", url.Values{"token": {boSecret}, "name": {"Bo"}}).StatusCode)

	inboxPage := h.getPage(ann, "").doc(t)
	link, ok := inboxPage.Find(`[data-testid="routes-link"]`).Attr("href")
	require.True(t, ok, "the admin's inbox links to the Routes page")
	assert.Equal(t, "/routes", link)
	assert.Zero(t, h.getPage(bo, "").doc(t).Find(`[data-testid="routes-link"]`).Length(), "no link for an answerer")
	for _, page := range []string{"history", "rules"} {
		assert.Equal(t, 1, h.getPage(ann, page).doc(t).Find(`[data-testid="routes-link"]`).Length(), "the admin's %s page links to the Routes page", page)
		assert.Zero(t, h.getPage(bo, page).doc(t).Find(`[data-testid="routes-link"]`).Length(), "no link for an answerer on %s", page)
	}
	assert.Equal(t, http.StatusForbidden, h.getPage(bo, "routes").StatusCode, "an answerer may not view the routes")

	r := h.getPage(ann, "routes")
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.NotContains(t, r.body, "abc-secret", "a webhook's path is a secret")
	d := r.doc(t)
	oncall := d.Find(`[data-testid="team-row"][data-team="oncall"]`)
	require.Equal(t, 1, oncall.Length())
	assert.Contains(t, oncall.Text(), "https://chat.example/…")
	assert.Contains(t, oncall.Text(), "5 min")
	assert.Contains(t, oncall.Text(), "to leads after 15 min")
	assert.Contains(t, oncall.Text(), "Bo")
	assert.Contains(t, d.Find(`[data-testid="team-row"][data-team="leads"]`).Text(), "Ann")
	rows := d.Find(`[data-testid="route-row"]`)
	require.Equal(t, 3, rows.Length())
	assert.Equal(t, `agent "claude-code", kind "permission" → oncall`, rows.Eq(0).Text())
	assert.Equal(t, `session "release-*" → leads`, rows.Eq(1).Text())
	assert.Equal(t, `every question → oncall`, rows.Eq(2).Text())
	assert.Zero(t, d.Find(`[data-testid="error-summary"]`).Length())

	require.NoError(t, os.WriteFile(path, []byte(`{"teams": {}, "routes": [{"team": "ghosts"}]}`), 0o600))
	require.True(t, f.Reload(true))
	d = h.getPage(ann, "routes").doc(t)
	assert.Contains(t, d.Find(`[data-testid="error-summary"]`).Text(), `team "ghosts" is not among the file's teams`)
	assert.Equal(t, 3, d.Find(`[data-testid="route-row"]`).Length(), "the last good routes are shown, in force")
}

// A question shows the team it is routed to, a small label on its card,
// and the reminders and escalations sent for it.
func TestCardShowsItsTeamAndSteps(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", permissionReq())
	assert.Zero(t, h.getPage(nil, "").doc(t).Find("#"+domID(id)+` [data-testid="team"]`).Length(), "no routes: no team")

	at := h.clk.Now()
	require.True(t, h.in.SetRouting(id, inbox.Routing{Team: "oncall", Steps: []inbox.RoutingStep{
		{Kind: inbox.StepReminded, Team: "oncall", At: at}, {Kind: inbox.StepEscalated, Team: "leads", At: at.Add(10 * 60e9)}}}))
	card := h.getPage(nil, "").doc(t).Find("#" + domID(id))
	assert.Equal(t, "for oncall", card.Find(`[data-testid="team"]`).Text())
	steps := card.Find(`[data-testid="routing-steps"]`)
	assert.Equal(t, "Reminded oncall "+at.UTC().Format("15:04")+" UTC, escalated to leads "+at.Add(10*60e9).UTC().Format("15:04")+" UTC", steps.Text())
	_, escalated := steps.Attr("data-escalated")
	assert.True(t, escalated)
}

// The admin's page says who may do what: every named operator with
// their role and teams, and how the provider's sign-ins get theirs; it
// is there without a routes file too. An answerer is refused it.
func TestAdminSeesTheOperatorsAndTheirRoles(t *testing.T) {
	t.Parallel()
	annHash, boHash, cyHash := bcryptHash(t, annSecret), bcryptHash(t, boSecret), bcryptHash(t, "cy-secret-0123456789")
	h := newHarness(t, func(s *setup) {
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: annHash, Role: RoleAdmin, Teams: []string{"leads"}},
			{Name: "Bo", Hash: boHash, Teams: []string{"oncall", "leads"}}, {Name: "Cy", Hash: cyHash, Role: RoleViewer}}
	})
	ann, bo := h.client(), h.client()
	require.Equal(t, http.StatusSeeOther, h.postForm(ann, "signin", url.Values{"token": {annSecret}, "name": {"Ann"}}).StatusCode)
	require.Equal(t, http.StatusSeeOther, h.postForm(bo, "signin", url.Values{"token": {boSecret}, "name": {"Bo"}}).StatusCode)

	link, ok := h.getPage(ann, "").doc(t).Find(`[data-testid="routes-link"]`).Attr("href")
	require.True(t, ok, "the admin's inbox links to the Operators page without a routes file")
	r := h.getPage(ann, link[1:])
	require.Equal(t, http.StatusOK, r.StatusCode)
	rows := map[string]string{}
	r.doc(t).Find(`[data-testid="operator-row"]`).Each(func(_ int, s *goquery.Selection) {
		var cells []string
		s.Find("td").Each(func(_ int, c *goquery.Selection) { cells = append(cells, strings.TrimSpace(c.Text())) })
		rows[strings.TrimSpace(s.Find("th").Text())] = strings.Join(cells, " ")
	})
	assert.Equal(t, map[string]string{"Ann": "admin leads with their own secret", "Bo": "answerer oncall, leads with their own secret", "Cy": "viewer none with their own secret"}, rows)
	assert.Equal(t, http.StatusForbidden, h.getPage(bo, "routes").StatusCode, "an answerer may not view who may do what")
	assert.Zero(t, h.getPage(bo, "").doc(t).Find(`[data-testid="routes-link"]`).Length(), "nor is linked to it")
}
