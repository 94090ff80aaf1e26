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
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
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

// A person with the script on can walk every page of a 10 000-pending
// inbox: "Next 500 questions" from the first page to the last, each page
// new rows in order, none missed or shown twice, and on every page the
// header and the list count the same (the informational card shown, not
// counted), written "10 000".
func TestWalkEveryPageOfTenThousandPendingInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	const n = 10000
	h := newHarness(t, withInbox(func(o *inbox.Options) { o.MaxPending = 2 * n }))
	ids := askMany(h, n, 10)
	h.ask("s_ci", "r_oob", aep.Request{Kind: aep.KindPermission, Prompt: "Approve the pipeline in the CI dashboard.",
		Options: []aep.Option{{ID: "ok", Label: "Approve"}}, RespondVia: []string{aep.ViaOOB}})
	want := map[string]bool{}
	for _, id := range ids {
		want[string(id)] = true
	}

	tab, cancel := chromedp.NewContext(browsertest.New(t))
	defer cancel()
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 5*time.Minute)
	defer stop()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(""))))
	seen := map[string]bool{}
	pages := 0
	for {
		pages++
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`#connection[data-state="live"]`)), "page %d goes live", pages)
		assert.Equal(t, "10\u00a0000 pending", text(t, ctx, "#pending-count"), "the header's count, page %d", pages)
		pager := text(t, ctx, `[data-testid="pager-text"]`)
		assert.Contains(t, pager, " of 10\u00a0000 pending", "the list counts what the header counts, page %d", pages)
		onPage := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#open [data-testid="card"], #open [data-testid="row"]')).map(e => e.dataset.card)`)
		fresh := 0
		for _, id := range onPage {
			if !want[id] {
				continue // the informational card, on the first page
			}
			assert.False(t, seen[id], "%s shown twice (page %d)", id, pages)
			seen[id] = true
			fresh++
		}
		assert.Contains(t, pager, "Showing "+view.Count(fresh)+" ", "the list says how many it shows, page %d", pages)
		if !eval[bool](t, ctx, `!!document.querySelector('[data-testid="pager"] a[data-testid="next-page"]')`) {
			break
		}
		require.Less(t, pages, 40, "the pages end")
		_, err := chromedp.RunResponse(ctx, chromedp.Click(`[data-testid="pager"] a[data-testid="next-page"]`))
		require.NoError(t, err, "to page %d", pages+1)
	}
	assert.Len(t, seen, n, "every pending question was on a page")
	assert.Equal(t, 1+(n-550+499)/500, pages, "550 on the first page, 500 on each after")
	// The last page's first row follows the page before it: in order.
	last := eval[string](t, ctx, `document.querySelector('#open [data-testid="row"]').dataset.card`)
	assert.Equal(t, string(ids[550+500*(pages-2)]), last, "the pages are in order of urgency")
	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "console errors")
}

// At 360 px the header (name, History and Rules, count, connection state,
// sound) stays under 160 px tall, also with a filter in force and push
// off: the pages' links, the counts and the sound are a line each.
func TestFilteredHeaderFitsAPhoneInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, func(s *setup) { s.deps.PushOff = view.PushWord("off-subject") })
	askMany(h, 30, 3)
	for _, path := range []string{"", "?agent=a1", "?agent=a1&kind=form", "?session=s-a2"} {
		ctx := notifyTab(t, h, 360)
		if path != "" {
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(path)), chromedp.WaitReady(`[data-testid="push-controls"]`)))
		}
		waitFor(t, ctx, `document.querySelector('[data-testid="push-controls"]').dataset.push === 'off'`, "push.js to read the server's config")
		waitFor(t, ctx, `document.getElementById('connection').dataset.state === 'live'`, "the page to go live")
		height := eval[float64](t, ctx, `document.querySelector('header').getBoundingClientRect().height`)
		assert.Less(t, height, 160.0, "the header at 360 px with %q: %.0f px tall: %q", path, height,
			eval[string](t, ctx, `document.querySelector('header').innerText`))
		assert.False(t, eval[bool](t, ctx, `document.documentElement.scrollWidth > document.documentElement.clientWidth`), "nothing wider than the phone with %q", path)
		// The moment before the page is live (its longer word) moves
		// nothing: the count stays on the name's line.
		live := eval[float64](t, ctx, `document.getElementById('pending-count').getBoundingClientRect().top`)
		require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('connection').textContent = 'Not live'`)))
		assert.Equal(t, live, eval[float64](t, ctx, `document.getElementById('pending-count').getBoundingClientRect().top`),
			"the header keeps its shape while not live, with %q", path)
	}
}
