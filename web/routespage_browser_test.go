package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// In Chromium at 360 px, light and dark, the Operators and routes page's
// tables fit the phone's width: every team's escalation and operators
// can be read without scrolling a table sideways (a scrollbar a phone
// shows only while it scrolls, so nothing said there was more), each
// cell under its column's name, and axe-core finds nothing wrong.
func TestRoutesPageFitsAPhone(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	f, _ := writeRoutes(t, routesFile)
	h := newHarness(t, func(s *setup) {
		s.deps.Routes = f
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: bcryptHash(t, annSecret), Role: RoleAdmin, Teams: []string{"leads"}},
			{Name: "Bo", Hash: bcryptHash(t, boSecret), Teams: []string{"oncall", "leads"}}}
	})
	tab, cancel := chromedp.NewContext(browsertest.New(t, chromedp.WindowSize(360, 800)))
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(tab, 2*time.Minute)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(360, 800),
		chromedp.Navigate(h.url("signin")),
		chromedp.WaitVisible(`#signin-name`),
		chromedp.SendKeys(`#signin-name`, "Ann"),
		chromedp.SendKeys(`#signin-secret`, annSecret),
		chromedp.Click(`[data-testid="submit"]`),
		chromedp.WaitVisible(`[data-testid="tools"]`),
	))
	for _, theme := range []string{"light", "dark"} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url("routes?theme="+theme)), chromedp.WaitVisible(`[data-testid="teams"]`)))
		wide := eval[[]string](t, ctx, `[...document.querySelectorAll('.table-wrap')].filter(w => w.scrollWidth > w.clientWidth).map(w => w.firstElementChild.dataset.testid + ': ' + w.scrollWidth + ' px in ' + w.clientWidth)`)
		assert.Empty(t, wide, "%s: tables wider than the phone", theme)
		assert.Equal(t, eval[int](t, ctx, `document.documentElement.clientWidth`), eval[int](t, ctx, `document.documentElement.scrollWidth`),
			"%s: nothing overflows sideways (the routes file's long path included)", theme)
		assert.Contains(t, eval[string](t, ctx, `document.querySelector('[data-testid="team-row"][data-team="oncall"]').innerText`), "leads",
			"%s: oncall's escalation is on its row", theme)
		assert.Equal(t, "Escalate", eval[string](t, ctx, `getComputedStyle(document.querySelector('[data-testid="team-row"][data-team="oncall"] td[data-label="Escalate"]'), '::before').content.replace(/"/g, '')`),
			"%s: each cell says its column", theme)
		assert.Empty(t, browsertest.Axe(t, ctx), "%s: axe-core violations", theme)
	}
}
