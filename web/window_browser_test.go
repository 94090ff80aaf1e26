package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/aep"
)

// In Chromium, on a page of many requests: a row's link opens its card in
// place (its fragment, fetched) and the card can be answered; a pushed
// request more urgent than every card shown enters as a card and the
// least urgent card becomes a row, so the page keeps its N cards; the
// page passes axe-core with no console error (a CSP violation shows there).
func TestRowsOpenInPlaceAndPushKeepsTheShapeInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	browsertest.AxeJS(t)
	bctx := browsertest.New(t)
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 5 }))
	ids := askMany(h, 40, 2)
	browsertest.ValidateHTML(t,
		browsertest.Document{Name: "page of many", HTML: h.getPage(nil, "").body},
		browsertest.Document{Name: "a later page", HTML: h.getPage(nil, "?after=0").body},
		browsertest.Document{Name: "a card's own page", HTML: h.getPage(nil, "cards/"+string(ids[39])+"/page").body},
		browsertest.Fragment("a row", h.getPage(nil, "cards/"+string(ids[39])+"/row").body),
	)

	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	defer stop()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(""))))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`#connection[data-state="live"]`)))
	assert.Empty(t, browsertest.Axe(t, ctx), "axe-core violations")
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`))
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 5, count(`#open article.card`))
	require.Equal(t, 35, count(`#open .row`))

	// Open a row: its card takes its place.
	row := "#" + domID(ids[30])
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(row+` [data-testid="row-link"]`)))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`article`+row+` [name="f0"]`)))
	assert.Equal(t, 34, count(`#open .row`), "the row became its card")
	assert.Equal(t, 6, count(`#open article.card`))
	assert.Equal(t, "40 pending", text(t, ctx, "#pending-count"))

	// A more urgent request arrives: it is a card, the least urgent of the
	// five becomes a row (the opened card stays open).
	req := nameForm()
	req.Prompt = "The most urgent of all"
	req.ExpiresAt = h.clk.Now().Add(30 * time.Second).UTC().Format(time.RFC3339)
	urgent := "#" + domID(h.ask("s-a0", "urgent", req))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`article`+urgent)))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#`+domID(ids[4])+`').classList.contains('row')`,
		chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the least urgent card never became a row")
	assert.Equal(t, 6, count(`#open article.card`), "five cards and the one opened")
	assert.Equal(t, 35, count(`#open .row`))
	assert.Equal(t, "41 pending", text(t, ctx, "#pending-count"))

	// Answer the opened card in the browser.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`article`+row+` [name="f0"]`, "payments"),
		chromedp.Click(`article`+row+` button[data-testid="submit"]`),
	))
	subs := waitSubmissions(t, h, 1)
	assert.Equal(t, ids[30], subs[0].Card)
	assert.Equal(t, aep.Values{"name": "payments"}, normalise(subs[0].Answer.Values))

	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "console errors")
}

// text is the text content of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+`').textContent`))
	require.NoError(t, err)
	return s
}

// In Chromium, on a first page with more pages after it, a request that
// belongs to a later page is counted, not shown; one that settles there
// stops counting; an update of one already counted changes nothing.
func TestOtherPagesAreCountedInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 5; c.PageRows = 10 }))
	ids := askMany(h, 40, 2)

	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	defer stop()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(""))))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`#connection[data-state="live"]`)))
	waitText := func(want string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('pending-count').textContent === '`+want+`'`,
			chromedp.WithPollingTimeout(10*time.Second)))
		require.NoError(t, err, "pending count never became %q (it is %q)", want, text(t, ctx, "#pending-count"))
	}
	waitText("40 pending")

	req := nameForm()
	req.ExpiresAt = h.clk.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	late := h.ask("s-a0", "late", req)
	waitText("41 pending")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#`+domID(late)+`').length`))
	require.NoError(t, err)
	assert.Zero(t, n, "a request of a later page is not shown on the first")

	// An update of a request counted at load: no change. Then it settles.
	h.lifecycle("s-a1", "r039", "attention.routed", aep.Routed{To: "someone"})
	h.lifecycle("s-a1", "r039", "attention.timeout", aep.Timeout{AfterMS: aep.Int64(1000)})
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector('#settled-list #`+domID(ids[39])+`')`,
		chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the settled request never reached the settled list")
	waitText("40 pending")

	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "console errors")
}
