package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/agent"
)

// TestPageInChromium loads the UI the program serves (its own headers and
// CSP, not a test harness's) in headless Chromium with the demo agent's
// deploy form pending: the card is on the page, axe-core finds no
// violation, and the console shows no error (a CSP violation or a script
// error shows there).
func TestPageInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	browsertest.AxeJS(t) // skip before starting anything when axe-core is missing
	s := startStack(t, stackOptions{})
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	sess, _ := askedRequest(t, ag, agent.ScenarioDeploy)
	s.openForm(t, sess.ID) // the card is open on the page

	ctx, cancel := chromedp.NewContext(browsertest.New(t))
	defer cancel()
	console := browsertest.WatchConsole(ctx)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.uiURL)))
	cards, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-card] form[data-testid="answer-form"]').length`))
	require.NoError(t, err)
	assert.Equal(t, 1, cards, "the deploy form's card with its answer form")

	violations := browsertest.Axe(t, ctx)
	assert.Empty(t, violations, "axe-core violations:\n%s", violations)
	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "console errors (CSP violations, script errors)")
}
