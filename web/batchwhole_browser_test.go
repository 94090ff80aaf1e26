package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// In Chromium, the batch page's questions collapse and open as their
// cards do: a long one is collapsed behind "Show all", which opens it; one
// past the budget fetches the rest in place. The page passes axe-core and
// the Nu Html Checker, with no console error.
func TestBatchesPageShowAllInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	browsertest.AxeJS(t)
	h := newHarness(t, withConfig(func(c *Config) { c.PromptBytes = 1 << 10 }))
	whole := "Run the migration?\n" + strings.Repeat("+ a line of the diff\n", 400)
	huge := h.ask("s1", "huge", deployPermission(whole))
	long := h.ask("s1", "long", deployPermission("Run the tests?\n"+strings.Repeat("one line\n", 12)+"and then `rm -rf ~`"))
	h.ask("s1", "short", deployPermission("P2 run `npm test`\n\n… also run `rm -rf ~`"))
	browsertest.ValidateHTML(t, browsertest.Document{Name: "batch page", HTML: h.getPage(nil, "batches").body})

	tab, cancel := chromedp.NewContext(browsertest.New(t))
	defer cancel()
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 30*time.Second)
	defer stop()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url("batches")), chromedp.WaitVisible(`[data-testid="batch"]`)))
	assert.Empty(t, browsertest.Axe(t, ctx), "axe-core violations")

	lq := `document.getElementById('` + string(long) + `-prompt')`
	expand := `document.querySelector('[data-testid="batch-item"][data-card="` + string(long) + `"] [data-action="expand"]')`
	assert.True(t, eval[bool](t, ctx, lq+`.classList.contains('is-collapsed')`), "a long question starts collapsed, as on its card")
	assert.False(t, eval[bool](t, ctx, expand+`.hidden`), "with its Show all")
	eval[bool](t, ctx, expand+`.click() === undefined`)
	assert.False(t, eval[bool](t, ctx, lq+`.classList.contains('is-collapsed')`), "Show all opens it")
	assert.Equal(t, "true", eval[string](t, ctx, expand+`.getAttribute('aria-expanded')`))

	hq := `document.getElementById('` + string(huge) + `-prompt')`
	eval[bool](t, ctx, `document.querySelector('[data-testid="batch-item"][data-card="`+string(huge)+`"] [data-testid="prompt-all"]').click() === undefined`)
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`(%s.querySelector('p.md-plain') || {textContent: ''}).textContent.length === %d`, hq, len(whole)),
		chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the whole question never arrived")
	assert.True(t, eval[bool](t, ctx, `location.pathname === '/batches'`), "fetched in place, no page change")

	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "console errors")
}
