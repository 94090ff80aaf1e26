package web

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/oidctest"
)

// In Chromium, an operator opening the inbox signed out is sent to the
// sign-in page, goes on to the provider, signs in at its login form and
// comes back to the inbox signed in: the header names them and their
// role from their groups.
func TestOIDCSignInInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h, _ := oidcHarness(t, func(c *OIDC) { c.Roles = map[Role][]string{RoleAnswerer: {"oncall"}} })
	ctx, cancel := chromedp.NewContext(browsertest.New(t))
	defer cancel()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(h.url("")),
		chromedp.WaitVisible(`[data-testid="signin-provider"]`),
		chromedp.Click(`[data-testid="signin-provider"]`),
		chromedp.WaitVisible(`#username`),
		chromedp.SendKeys(`#username`, "ann"),
		chromedp.SendKeys(`#password`, oidctest.Password),
		chromedp.Click(`button[type="submit"]`),
		chromedp.WaitVisible(`[data-testid="operator"]`),
	))
	who, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="account"]').textContent`))
	require.NoError(t, err)
	assert.Contains(t, who, "Signed in as ann")
	assert.Contains(t, who, "(answerer)")
	where, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	require.NoError(t, err)
	assert.Equal(t, h.url(""), where, "back at the inbox")
}
