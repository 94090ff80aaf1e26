package web

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/store"
)

// The service worker registers under the page's CSP at the base path's
// scope, the page offers "Notify me on this device", and a push the
// browser's push service delivers (DevTools: a headless browser cannot
// reach a real one) shows the server's notification: its title, body
// and tag (the card id), and a second push with the tag replaces it.
func TestServiceWorkerShowsPushedNotification(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withPush(j), withConfig(func(c *Config) { c.BasePath = "/forms/" }))
	tab, cancel := chromedp.NewContext(browsertest.New(t))
	t.Cleanup(cancel)
	console := browsertest.WatchConsole(tab)
	// A deadline, not a wait: under CI's load (the race detector in
	// parallel packages) Chromium and its worker can take a while.
	ctx, stop := context.WithTimeout(tab, 90*time.Second)
	t.Cleanup(stop)

	// Registrations, as DevTools reports them.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	regs := make(chan serviceworker.RegistrationID, 16)
	go func() {
		for ev, err := range chromedp.Events(ctx, serviceworker.WorkerRegistrationUpdated) {
			if err != nil {
				return
			}
			for _, r := range ev.Registrations {
				if !r.IsDeleted && r.ScopeURL == h.base() {
					select {
					case regs <- r.RegistrationID:
					default:
					}
				}
			}
		}
	}()
	_, err := chromedp.Call(ctx, serviceworker.Enable, cdp.Empty{})
	require.NoError(t, err)
	_, err = chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: h.srv.URL})
	require.NoError(t, err)

	// Another device of this operator whose last push failed: the page
	// lists it with the failure.
	bg := context.Background()
	require.NoError(t, j.SavePushSubscription(bg, store.PushSubscription{Endpoint: "https://push.example/phone", P256dh: "p", Auth: "a", Created: testNow}))
	require.NoError(t, j.PushFailed(bg, "https://push.example/phone", "The push service refused the last notification (HTTP 500).", testNow.Add(time.Minute)))

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url("")), chromedp.WaitVisible(`[data-testid="push-toggle"]`)))
	waitFor(t, ctx, `!!document.querySelector('[data-testid="push-devices"] li')`, "the device list")
	assert.Equal(t, "Another device, since 2026-03-01. Last failure (2026-03-01 12:01): The push service refused the last notification (HTTP 500).",
		eval[string](t, ctx, `document.querySelector('[data-testid="push-devices"] li').textContent`))
	scope, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.serviceWorker.ready.then(r => r.scope)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, h.base(), scope)
	assert.Equal(t, "Notify me on this device", eval[string](t, ctx, `document.querySelector('[data-testid="push-toggle"]').textContent`))

	// The tab icon carries the pending count the title shows.
	plain := eval[string](t, ctx, `document.querySelector('link[rel="icon"]').href`)
	eval[string](t, ctx, `document.title = '(3) aepforms'`)
	waitFor(t, ctx, `document.querySelector('link[rel="icon"]').href.startsWith('data:image/png')`, "the badged icon")
	eval[string](t, ctx, `document.title = 'aepforms'`)
	waitFor(t, ctx, `document.querySelector('link[rel="icon"]').href === '`+plain+`'`, "the plain icon back")

	var id serviceworker.RegistrationID
	select {
	case id = <-regs:
	case <-ctx.Done():
		t.Fatal("DevTools reported no service worker registration")
	}
	deliver := func(m map[string]any) {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		_, err = chromedp.Call(ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{Origin: h.srv.URL, RegistrationID: id, Data: string(b)})
		require.NoError(t, err)
	}
	shown := `navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns => JSON.stringify(ns.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url}))))`
	// DevTools' DeliverPushMessage is best effort: under CI's load a
	// message handed over while the worker is being started again can be
	// lost (seen once in CI: the second message never shown in 80 s). A
	// push service delivers again too; the same message (same tag) only
	// replaces the same notification, so the wait hands the last one over
	// again each redeliverEvery until the notifications are as wanted.
	const redeliverEvery = 5 * time.Second
	var last map[string]any
	lastAt := time.Now()
	deliverOnce := deliver
	deliver = func(m map[string]any) { deliverOnce(m); last, lastAt = m, time.Now() }
	deliver(map[string]any{"tag": "c1", "title": "builder asks", "body": "Deploy v1.2?", "url": "/forms/#card-c1"})
	waitNotifications := func(want string) {
		t.Helper()
		var got string
		for ctx.Err() == nil {
			// One look at a time, bounded: a look that waits on a worker
			// being started again is given up and made anew.
			look, done := context.WithTimeout(ctx, redeliverEvery)
			got, err = chromedp.Run(look, chromedp.Evaluate[string](shown, chromedp.EvalAwaitPromise))
			done()
			if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				err = nil
			}
			require.NoError(t, err)
			if got == want {
				return
			}
			if last != nil && time.Since(lastAt) > redeliverEvery {
				t.Logf("notifications still %s after %v: delivering the last message again", got, redeliverEvery)
				deliver(last)
			}
			// Showing is asynchronous in the worker: let the page's
			// event loop turn once (a message to itself: unlike a frame,
			// never held back in a background tab), not a fixed time.
			_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](yieldJS, chromedp.EvalAwaitPromise))
		}
		t.Fatalf("notifications: got %s, want %s", got, want)
	}
	waitNotifications(`[{"title":"builder asks","body":"Deploy v1.2?","tag":"c1","url":"` + h.srv.URL + `/forms/#card-c1"}]`)
	deliver(map[string]any{"tag": "c1", "title": "builder asks", "body": "Answered by alice", "url": "/forms/#card-c1", "closed": true})
	waitNotifications(`[{"title":"builder asks","body":"Answered by alice","tag":"c1","url":"` + h.srv.URL + `/forms/#card-c1"}]`)

	// Answering from the notification: a permission's options as the
	// actions, in their own words; the worker's action handler (called
	// inside the worker through DevTools, as a click on the action would)
	// posts the answer once and replaces the notification.
	card := h.ask("s1", "r1", permissionReq())
	deliver(map[string]any{"tag": string(card), "title": "builder asks", "body": "Run make release?", "url": "/forms/#card-" + string(card),
		"actions": []map[string]string{{"action": "o0", "title": "Allow once", "sent": "Sent: Allow once"}, {"action": "o1", "title": "Deny", "sent": "Sent: Deny"}},
		"answer":  map[string]string{"url": "/forms/cards/" + string(card) + "/notification-answer", "token": "ok:" + string(card) + ":", "failed": "Not sent"}})
	actions := `navigator.serviceWorker.ready.then(r => r.getNotifications({tag: '` + string(card) + `'})).then(ns => JSON.stringify(ns.map(n => n.actions.map(a => a.action + '=' + a.title))))`
	var got string
	for ctx.Err() == nil && got != `[["o0=Allow once","o1=Deny"]]` {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](actions, chromedp.EvalAwaitPromise))
		require.NoError(t, err, "the notification's actions, last seen: %s", got)
		_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](yieldJS, chromedp.EvalAwaitPromise))
	}
	require.Equal(t, `[["o0=Allow once","o1=Deny"]]`, got)

	targets, err := chromedp.Targets(ctx)
	require.NoError(t, err)
	var worker context.Context
	for _, ti := range targets {
		if ti.Type == "service_worker" {
			wctx, wcancel := chromedp.NewContext(ctx, chromedp.WithTargetID(ti.TargetID))
			t.Cleanup(wcancel)
			worker = wctx
		}
	}
	require.NotNil(t, worker, "no service worker target")
	done, err := chromedp.Run(worker, chromedp.Evaluate[bool](`self.registration.getNotifications({tag: '`+string(card)+`'}).then(ns => self.aepformsAnswer(ns[0], 'o1')).then(() => true)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.True(t, done)
	subs := h.sub.all()
	require.Len(t, subs, 1, "one command")
	assert.Equal(t, "deny", subs[0].Answer.Option)
	waitNotifications(`[{"title":"builder asks","body":"Answered by alice","tag":"c1","url":"` + h.srv.URL + `/forms/#card-c1"},` +
		`{"title":"builder asks","body":"Sent: Deny","tag":"` + string(card) + `","url":"` + h.srv.URL + `/forms/#card-` + string(card) + `"}]`)

	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "no CSP violation or script error")
}

// yieldJS resolves once the page's event loop has turned: a message the
// page posts to itself (a frame would wait forever in a background tab).
const yieldJS = `new Promise(r => { const c = new MessageChannel(); c.port1.onmessage = () => r(true); c.port2.postMessage(0); })`
