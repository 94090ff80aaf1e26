package web

import (
	"net"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// After the server restarts (a new process: another push epoch, an inbox
// that holds only what it was told since), an open page follows it
// without a reload: the question the new server does not hold is
// withdrawn with a clear line, what the operator typed stays (in the
// card and in the browser's draft) and cannot be sent; the question both
// hold stays answerable, and the new one appears.
func TestOpenPageFollowsTheServerThroughARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	old := newHarness(t)
	gone := domID(old.ask("s1", "r1", nameForm()))
	kept := domID(old.ask("s1", "r2", permissionReq()))
	ctx, _ := flowTab(t, old, "")
	input, send := "#"+gone+` [name="f0"]`, "#"+gone+` button[data-testid="submit"]`
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(input, "payments")))
	waitFor(t, ctx, `document.getElementById('connection').dataset.state === 'live'`, "the page to go live")

	// The process ends; a new one (another epoch) comes up on the same
	// address, holding r2 (the relay still had it) and a new r3.
	addr := old.srv.Listener.Addr().String()
	old.die()
	restarted := newHarness(t, withConfig(func(c *Config) { c.PushEpoch = "e2" }))
	require.Equal(t, kept, domID(restarted.ask("s1", "r2", permissionReq())), "the same question has the same card")
	added := domID(restarted.ask("s1", "r3", envForm()))
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: restarted.srv.Config.Handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	waitFor(t, ctx, `!!document.querySelector('#`+gone+` [data-testid="withdrawn"]')`, "the missing question to be withdrawn")
	waitFor(t, ctx, `!!document.getElementById('`+added+`')`, "the new server's question to appear")
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "reconciled in place, not reloaded")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#`+gone+` [data-testid="withdrawn"]').textContent`),
		"This question is no longer open; your draft is kept below.")
	assert.Equal(t, "payments", eval[string](t, ctx, `document.querySelector('`+input+`').value`), "the typed answer stays")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('`+input+`').readOnly`), "and is read-only")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('`+send+`').disabled`), "nothing to send")
	assert.True(t, eval[bool](t, ctx, `Object.keys(localStorage).some(k => k.startsWith('aepforms:draft:') && localStorage.getItem(k).includes('payments'))`),
		"the draft is kept in the browser")
	assert.False(t, eval[bool](t, ctx, `!!document.querySelector('#`+kept+` [data-testid="withdrawn"]')`), "the question both hold is not withdrawn")
	assert.Equal(t, "2 pending", eval[string](t, ctx, `document.getElementById('pending-count').textContent`), "the withdrawn one is not counted")

	// Ctrl+Enter on the withdrawn card sends nothing, to either server.
	require.NoError(t, chromedp.Do(ctx, chromedp.Focus(input)))
	press(t, ctx, kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl))
	assert.False(t, eval[bool](t, ctx, `document.querySelector('#`+gone+` form').dataset.sent === 'true'`), "no post begun")
	// The page follows the new server's stream: a question asked now
	// arrives by push.
	later := domID(restarted.ask("s1", "r4", nameForm()))
	waitFor(t, ctx, `!!document.getElementById('`+later+`')`, "a question pushed by the new server")
	assert.Empty(t, old.sub.all(), "nothing sent to the old server")
	assert.Empty(t, restarted.sub.all(), "nothing stale sent to the new one")
}

// A question the restarted server did not hold at first (its agent had
// not reconnected yet) and then holds again (the agent asked it again):
// the open page makes its withdrawn card answerable again without a
// reload, with what the operator typed, and the answer goes to the new
// server.
func TestWithdrawnCardComesBackWhenTheServerHoldsItAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	old := newHarness(t)
	late := old.ask("s2", "r1", nameForm())
	card := domID(late)
	old.ask("s1", "r2", permissionReq())
	ctx, _ := flowTab(t, old, "")
	input, send := "#"+card+` [name="f0"]`, "#"+card+` button[data-testid="submit"]`
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(input, "payments")))
	waitFor(t, ctx, `document.getElementById('connection').dataset.state === 'live'`, "the page to go live")

	addr := old.srv.Listener.Addr().String()
	old.die()
	restarted := newHarness(t, withConfig(func(c *Config) { c.PushEpoch = "e2" }))
	restarted.ask("s1", "r2", permissionReq())
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: restarted.srv.Config.Handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	waitFor(t, ctx, `!!document.querySelector('#`+card+` [data-testid="withdrawn"]')`, "the question not held yet to be withdrawn")
	waitFor(t, ctx, `document.getElementById('connection').dataset.state === 'live'`, "the page to follow the new server")

	// The agent reconnects and asks its question again: the same card.
	require.Equal(t, late, restarted.ask("s2", "r1", nameForm()))
	waitFor(t, ctx, `!document.querySelector('#`+card+` [data-testid="withdrawn"]') && !document.querySelector('`+send+`').disabled`,
		"the card to be answerable again")
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "without a reload")
	assert.Equal(t, "payments", eval[string](t, ctx, `document.querySelector('`+input+`').value`), "what was typed is kept")
	assert.False(t, eval[bool](t, ctx, `document.querySelector('`+input+`').readOnly`), "and can be changed")
	assert.Equal(t, "2 pending", eval[string](t, ctx, `document.getElementById('pending-count').textContent`), "it is counted again")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(send)))
	restarted.sub.wait(5e9)
	subs := restarted.sub.all()
	require.Len(t, subs, 1, "the answer reaches the new server")
	assert.Equal(t, late, subs[0].Card)
	assert.Equal(t, "payments", subs[0].Answer.Values["name"])
	assert.Empty(t, old.sub.all())
}
