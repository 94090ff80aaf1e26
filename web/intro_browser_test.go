package web

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// On a phone (360 px) a page's line under its title starts where the
// title does: History's "This UI has no operator secret…" sat against the
// screen's left edge, 16 px left of its title (newcomer run), while the
// Rules and batch pages, which share its classes, were indented.
func TestIntroLinesAlignWithTheirTitleOnAPhoneInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	bctx := browsertest.New(t, chromedp.WindowSize(360, 800))
	type edges struct{ Title, Intro float64 }
	for _, p := range []struct{ path, intro string }{
		{"history", "history-who"},
		{"rules", "rules-intro"},
		{"batches", "batches-intro"},
	} {
		t.Run(p.path, func(t *testing.T) {
			ctx, cancel := chromedp.NewContext(bctx)
			defer cancel()
			sel := `[data-testid="` + p.intro + `"]`
			require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(360, 800), chromedp.Navigate(h.url(p.path)), chromedp.WaitVisible(sel)))
			got, err := chromedp.Run(ctx, chromedp.Evaluate[edges](`(() => {
				const x = s => document.querySelector(s).getBoundingClientRect().left;
				return { title: x('h1'), intro: x('`+sel+`') };
			})()`))
			require.NoError(t, err)
			assert.Greater(t, got.Intro, 0.0, "the line is not against the screen's edge")
			assert.Equal(t, got.Title, got.Intro, "the line starts where its title does")
		})
	}
}
