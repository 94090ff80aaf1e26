package web

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/store"
)

// tabTo presses Tab until the element matching sel has focus (at most
// limit presses) and reports whether it got there.
func tabTo(t *testing.T, ctx context.Context, sel string, limit int) bool {
	t.Helper()
	q, err := json.Marshal(sel)
	require.NoError(t, err)
	for range limit {
		require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\t")))
		on, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.activeElement && document.activeElement.matches(`+string(q)+`)`))
		require.NoError(t, err)
		if on {
			return true
		}
	}
	return false
}

// The rules are kept with the keyboard alone, in Chromium: on a card,
// Tab reaches "Answer like this from now on…", Enter opens it, Space
// ticks "Keep answering", and pressing the option makes the rule; on the
// Rules page Tab reaches Pause and Enter pauses it.
func TestRulesByKeyboardInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	rh := newRulesHarness(t)
	id := rh.ask("s1", "r1", permissionReq())
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(rh.url(""))))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`#`+domID(id)+` [data-testid="rule-maker-summary"]`)))

	require.True(t, tabTo(t, ctx, `[data-testid="rule-maker-summary"]`, 40), "Tab reaches the rule's disclosure")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\r")))
	require.True(t, tabTo(t, ctx, `[data-testid="rule-make"]`, 3), "Tab reaches 'Keep answering'")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(" ")))
	ticked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="rule-make"]').checked`))
	require.NoError(t, err)
	require.True(t, ticked)
	require.True(t, tabTo(t, ctx, `#`+domID(id)+` [data-testid="option"]`, 10), "Tab reaches the options")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\r")))

	deadline := time.Now().Add(10 * time.Second)
	var list []store.Rule
	for time.Now().Before(deadline) && len(list) == 0 {
		rh.sub.wait(100 * time.Millisecond)
		list, err = rh.j.Rules(context.Background())
		require.NoError(t, err)
	}
	require.Len(t, list, 1, "the keyboard made the rule")
	assert.Equal(t, "allow", list[0].Answer.Option)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(rh.url("rules"))))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`[data-testid="rule-pause"]`)))
	require.True(t, tabTo(t, ctx, `[data-testid="rule-pause"]`, 20), "Tab reaches Pause")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\r")))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`[data-testid="rule-resume"]`)))
	got, _, err := rh.j.Rule(context.Background(), list[0].ID)
	require.NoError(t, err)
	assert.Equal(t, store.RulePaused, got.State)
}
