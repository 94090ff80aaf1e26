package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// In Chromium at 1440 px, the list of questions beside the cards says who
// is on each, so a glance down it shows what is taken: when Ann presses
// "I’m on it", Bo's line of that question reads "Ann" (her card's words,
// "Ann is on it · just now", in its title and for a screen reader) by
// push, without a page load; his own claim of another marks his line as
// his; Ann's release leaves her line.
func TestListLineSaysWhoIsOnIt(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	h := newHarness(t, withTeam(t))
	first := h.ask("s1", "r1", nameForm())
	second := h.ask("s2", "r2", permissionReq())
	ann, _ := h.signInAs("Ann", annSecret)

	tab, cancel := chromedp.NewContext(browsertest.New(t, chromedp.WindowSize(1440, 900)))
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(tab, 2*time.Minute)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(h.url("signin")),
		chromedp.WaitVisible(`#signin-name`),
		chromedp.SendKeys(`#signin-name`, "Bo"),
		chromedp.SendKeys(`#signin-secret`, boSecret),
		chromedp.Click(`[data-testid="submit"]`),
		chromedp.WaitVisible(`#connection[data-state="live"]`),
		chromedp.WaitVisible(`#qlist .qline`),
	))
	eval[bool](t, ctx, `(window.__samePage = true)`)
	line := func(id string) string { return `document.querySelector('#qlist .qline[data-for="` + id + `"]')` }
	claimOnLine := func(id string) string {
		return `((` + line(id) + ` || document).querySelector('.qline__claim') || {})`
	}
	assert.False(t, eval[bool](t, ctx, `!!`+line(domID(first))+`.querySelector('.qline__claim')`), "nobody is on it yet")

	r := h.postForm(ann, "cards/"+string(first)+"/claim", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	waitFor(t, ctx, `(`+claimOnLine(domID(first))+`.firstChild || {}).textContent === 'Ann'`, "Bo's line of the question says Ann is on it")
	assert.Equal(t, "Ann", eval[string](t, ctx, claimOnLine(domID(first))+`.firstChild.textContent`), "the line names her")
	assert.Equal(t, "Ann is on it · just now", eval[string](t, ctx, claimOnLine(domID(first))+`.title`), "the card's words in its title")
	assert.Equal(t, "Ann is on it · just now", eval[string](t, ctx, claimOnLine(domID(first))+`.querySelector('.visually-hidden').textContent`),
		"and for a screen reader")
	assert.False(t, eval[bool](t, ctx, claimOnLine(domID(first))+`.classList.contains('qline__claim--mine')`), "not his")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#`+domID(second)+` [data-testid="claim-button"]`)))
	waitFor(t, ctx, `!!`+claimOnLine(domID(second))+`.classList && `+claimOnLine(domID(second))+`.classList.contains('qline__claim--mine')`,
		"Bo's own claim marks his line as his")
	assert.Equal(t, "Bo", eval[string](t, ctx, claimOnLine(domID(second))+`.firstChild.textContent`))

	r = h.postForm(ann, "cards/"+string(first)+"/claim", url.Values{"release": {"1"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	waitFor(t, ctx, `!`+line(domID(first))+`.querySelector('.qline__claim')`, "released: the line says nobody is on it")
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "no page load")
}
