package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/aep"
)

// In Chromium, "Show all" on a prompt shown in part fetches the whole text
// and puts it in place (as text: markup in it stays text), then collapses
// it again; the page with a cut prompt and a read-only card over the
// control budget passes axe-core and the Nu Html Checker, with no console
// error (a CSP violation shows there).
func TestBudgetShowAllInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	browsertest.AxeJS(t)
	h := newHarness(t, withConfig(func(c *Config) { c.PromptBytes = 1 << 10 }))
	prompt := "<b>not bold</b>\n" + strings.Repeat("+ a line of the diff\n", 400)
	id := h.ask("s1", "long", aep.Request{Kind: aep.KindInput, Prompt: prompt})
	h.ask("s2", "huge", hostileSelects(3, 999))

	page := h.getPage(nil, "")
	browsertest.ValidateHTML(t, browsertest.Document{Name: "page with budgets", HTML: page.body})

	bctx := browsertest.New(t)
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	console := browsertest.WatchConsole(ctx)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(""))))
	assert.Empty(t, browsertest.Axe(t, ctx), "axe-core violations")

	quote := `document.getElementById('` + string(id) + `-prompt')`
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](quote+`.textContent.length`))
	require.NoError(t, err)
	assert.Less(t, shown, len(prompt), "shown in part")

	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#card-`+string(id)+` [data-testid="prompt-all"]').click() === undefined`))
	require.NoError(t, err)
	// Wait in the page for the fetched prompt to be in place.
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`(%s.querySelector('p') || {textContent: ''}).textContent.length === %d`, quote, len(prompt)),
		chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the whole prompt never arrived")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](quote+`.querySelector('p').textContent`))
	require.NoError(t, err)
	assert.Equal(t, prompt, got, "the whole prompt, as text")
	blocks, err := chromedp.Run(ctx, chromedp.Evaluate[int](quote+`.children.length`))
	require.NoError(t, err)
	assert.Equal(t, 1, blocks, "the whole prompt replaces the part shown (its Markdown blocks)")
	bold, err := chromedp.Run(ctx, chromedp.Evaluate[int](quote+`.querySelectorAll('b').length`))
	require.NoError(t, err)
	assert.Zero(t, bold, "markup in the prompt stays text")
	state, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const a = document.querySelector('#card-`+string(id)+` [data-testid="prompt-all"]'); return [a.textContent, a.getAttribute('aria-expanded'), String(`+quote+`.classList.contains('is-collapsed'))]; })()`))
	require.NoError(t, err)
	assert.Equal(t, []string{"Show less", "true", "false"}, state)

	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "console errors")
}
