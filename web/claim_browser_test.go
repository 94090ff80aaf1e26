package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// In Chromium, Ann (signed in at the sign-in page) goes to the question
// with j and presses c: Bo's open page (a push stream) is sent the card
// with "Ann is on it" in the next push, and Ann's own card says "You are
// on it" in place, without a page load; pressing its button again ends
// the claim for Bo too.
func TestClaimWithTheKeyInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	h := newHarness(t, withTeam(t))
	id := h.ask("s1", "r1", nameForm())
	_, boCookie := h.signInAs("Bo", boSecret)
	ps := h.openPush("?since="+seqID(h.in), "Cookie", cookieName+"="+boCookie)
	require.Equal(t, "status", ps.next().Event)

	tab, cancel := chromedp.NewContext(browsertest.New(t))
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(h.url("signin")),
		chromedp.WaitVisible(`#signin-name`),
		chromedp.SendKeys(`#signin-name`, "Ann"),
		chromedp.SendKeys(`#signin-secret`, annSecret),
		chromedp.Click(`[data-testid="submit"]`),
		chromedp.WaitVisible(`[data-testid="tools"]`),
	))
	eval[bool](t, ctx, `(window.__samePage = true)`)
	press(t, ctx, "j")
	waitFor(t, ctx, focusedCard+` === '`+domID(id)+`'`, "j goes to the question")
	press(t, ctx, "c")

	card := cardMsg(t, ps.next())
	assert.Equal(t, "Ann", card.Find(`[data-testid="claim"]`).AttrOr("data-claimant", ""), "Bo's page is told in the next push")
	waitFor(t, ctx, `(document.querySelector('#`+domID(id)+` .claim--mine') || {}).textContent === 'You are on it'`+
		` || /You are on it/.test((document.querySelector('#`+domID(id)+` .claim--mine') || {}).textContent || '')`, "Ann's card says she is on it")
	assert.Equal(t, "Not on it any more", eval[string](t, ctx, `document.querySelector('#`+domID(id)+` [data-testid="claim-button"]').textContent`))
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "no page load")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#`+domID(id)+` [data-testid="claim-button"]`)))
	card = cardMsg(t, ps.next())
	assert.Zero(t, card.Find(`[data-testid="claim"]`).Length(), "released: Bo's page is told")
	waitFor(t, ctx, `!document.querySelector('#`+domID(id)+` [data-testid="claim"]')`, "Ann's card says nobody is on it")
}
