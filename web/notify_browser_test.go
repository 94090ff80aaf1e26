package web

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/render/view"
)

// notifyTab opens the inbox page at width x 740 px, after granting the
// page notifications (so no control can hide behind a prompt), and waits
// for push.js to have set up its controls.
func notifyTab(t *testing.T, h *harness, width int64) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browsertest.New(t))
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	_, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: h.srv.URL})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(width, 740),
		chromedp.Navigate(h.url("")),
		chromedp.WaitReady(`[data-testid="push-controls"]`),
	))
	return ctx
}

// notifyButtons counts the visible buttons on the page that offer
// notifications.
const notifyButtons = `Array.from(document.querySelectorAll('button')).filter(b => b.offsetParent !== null && /notif/i.test(b.textContent)).length`

// With push off (the default), the page offers no notification button
// and never shows the server's flags: at most one muted line in the
// operator's words. The header at 360 px stays under 140 px tall.
func TestPushOffShowsNoNotificationControl(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, func(s *setup) { s.deps.PushOff = view.PushWord("off-subject") })
	h.ask("s1", "r1", nameForm())
	ctx := notifyTab(t, h, 360)
	waitFor(t, ctx, `document.querySelector('[data-testid="push-controls"]').dataset.push === 'off'`, "push.js to read the server's config")

	assert.Zero(t, eval[int](t, ctx, notifyButtons), "no notification button with push off")
	header := eval[string](t, ctx, `document.querySelector('header').innerText`)
	assert.NotContains(t, header, "--", "no server flags on the page")
	assert.NotContains(t, header, "vapid")
	lines := eval[int](t, ctx, `Array.from(document.querySelectorAll('[data-testid="push-status"]')).filter(s => s.offsetParent !== null && s.textContent.trim() !== '').length`)
	assert.LessOrEqual(t, lines, 1, "at most one muted line")
	height := eval[float64](t, ctx, `document.querySelector('header').getBoundingClientRect().height`)
	assert.Less(t, height, 140.0, "the header at 360 px: got %.0f px tall", height)
}

// With push on, one control per device: a single "Notify me on this
// device" (not a second in-page opt-in beside it); pressing it says what
// is happening and, when the browser's push service cannot subscribe
// (headless Chromium has none), says so plainly and lets it be tried
// again.
func TestPushOnOffersOneControlThatSaysWhatHappened(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	j := openJournal(t)
	h := newHarness(t, withPush(j))
	ctx := notifyTab(t, h, 1440)
	waitFor(t, ctx, `document.querySelector('[data-testid="push-controls"]').dataset.push === 'on'`, "push.js to read the server's config")
	waitFor(t, ctx, `document.querySelector('[data-testid="push-toggle"]').textContent !== ''`, "the control's label")
	assert.Equal(t, 1, eval[int](t, ctx, notifyButtons), "one notification control")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="push-toggle"]`)))
	// Progress at once, then an outcome in words; the control comes back.
	status := `document.querySelector('[data-testid="push-status"]').textContent`
	assert.NotEmpty(t, eval[string](t, ctx, status), "progress while subscribing")
	waitFor(t, ctx, `!document.querySelector('[data-testid="push-toggle"]').disabled`, "the outcome")
	got := eval[string](t, ctx, status)
	assert.Contains(t, []string{view.PushWord("subscribed"), view.PushWord("failed"), view.PushWord("timeout")}, got, "a clear outcome")
}

// The page waits for the browser's push service as long as the server
// says (--push-subscribe-timeout, on the body), not a fixed 15 s: with
// a push service that never answers and a 400 ms timeout, the page says
// the service did not answer well before 15 s, and the control can be
// pressed again.
func TestSubscribeTimeoutComesFromTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	j := openJournal(t)
	h := newHarness(t, withPush(j), withConfig(func(c *Config) { c.PushSubscribeTimeout = 400 * time.Millisecond }))
	doc := h.getPage(nil, "").doc(t)
	got, _ := doc.Find("body").Attr("data-push-subscribe-timeout")
	assert.Equal(t, "400", got, "the server's value, in ms, on the page")

	tab, cancel := chromedp.NewContext(browsertest.New(t))
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	_, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: h.srv.URL})
	require.NoError(t, err)
	// A push service that never answers.
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `PushManager.prototype.subscribe = function () { return new Promise(function () {}); };`})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 740),
		chromedp.Navigate(h.url("")),
		chromedp.WaitReady(`[data-testid="push-controls"]`),
	))
	waitFor(t, ctx, `document.querySelector('[data-testid="push-controls"]').dataset.push === 'on'`, "push.js to read the server's config")
	waitFor(t, ctx, `document.querySelector('[data-testid="push-toggle"]').textContent !== ''`, "the control's label")

	start := time.Now()
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="push-toggle"]`)))
	status := `document.querySelector('[data-testid="push-status"]').textContent`
	waitFor(t, ctx, status+` === `+strconv.Quote(view.PushWord("timeout")), "the page to say the push service did not answer")
	assert.Less(t, time.Since(start), 10*time.Second, "the server's 400 ms, not the script's 15 s")
	waitFor(t, ctx, `!document.querySelector('[data-testid="push-toggle"]').disabled`, "the control to be pressable again")
}
