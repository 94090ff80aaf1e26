package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/aep"
)

// In Chromium, "Showing 15 of 40 pending" stays true as the push changes
// the inbox: a request that arrives on a later page counts in the total,
// one that settles on this page leaves what the page shows, as the
// header's pending count does.
func TestPagerCountStaysTrueInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 5; c.PageRows = 10 }))
	askMany(h, 40, 2)
	tab, cancel := chromedp.NewContext(browsertest.New(t))
	defer cancel()
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	defer stop()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url("")), chromedp.WaitVisible(`#connection[data-state="live"]`)))
	pagerSays := func(want string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('[data-testid="pager-text"]').textContent === '`+want+`'`,
			chromedp.WithPollingTimeout(15*time.Second)))
		require.NoError(t, err, "the pager never said %q (it says %q)", want, text(t, ctx, `[data-testid="pager-text"]`))
	}
	pagerSays("Showing 15 of 40 pending: the 5 most urgent in full, the rest as rows.")

	req := nameForm()
	req.ExpiresAt = h.clk.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	h.ask("s-a0", "late", req)
	pagerSays("Showing 15 of 41 pending: the 5 most urgent in full, the rest as rows.")

	h.lifecycle("s-a0", "r000", "attention.timeout", aep.Timeout{AfterMS: aep.Int64(1000)})
	pagerSays("Showing 14 of 40 pending: the 5 most urgent in full, the rest as rows.")

	cancel()
	console.Wait()
	require.Empty(t, console.Problems(), "console errors")
}
