package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/rules"
)

// On a phone (360 px) the header reaches the Rules page and says how
// many requests rules answered since the operator last looked, both
// within the screen; the count opens them in History, after which the
// header no longer counts them.
func TestPhoneHeaderReachesRulesInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	rh := newRulesHarness(t)
	rh.keepRule("R1", "Allow once to permission requests", "alice")
	rh.ruleAnswered("c1", rules.By("R1"), testNow.Add(-time.Minute))
	rh.ruleAnswered("c2", rules.By("R1"), testNow)
	ctx := notifyTab(t, rh.harness, 360)

	visible := func(sel string) bool {
		return eval[bool](t, ctx, `(() => { const e = document.querySelector('header `+sel+`'); if (!e) return false;
			const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth; })()`)
	}
	assert.True(t, visible(`[data-testid="rules-link"]`), "the Rules link is on the phone's screen")
	assert.True(t, visible(`[data-testid="rule-answers"]`), "so is the count of what rules answered")
	assert.Equal(t, "2 answered by rules", eval[string](t, ctx, `document.querySelector('[data-testid="rule-answers"]').textContent.trim()`))
	assert.False(t, eval[bool](t, ctx, `document.documentElement.scrollWidth > document.documentElement.clientWidth`), "nothing wider than the phone")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="rule-answers"]`), chromedp.WaitReady(`[data-testid="history"]`)))
	assert.Equal(t, "?rule=any", eval[string](t, ctx, `location.search`))
	assert.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll('[data-testid="history-rows"] > li').length`), "the answers rules sent")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(rh.url("")), chromedp.WaitReady(`[data-testid="header"]`)))
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('[data-testid="rule-answers"]').length`), "looked at: nothing new to count")
	assert.True(t, visible(`[data-testid="rules-link"]`))
}
