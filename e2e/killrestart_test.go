//go:build unix

package e2e

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// A restart, as an operator lives it: `serve --demo` (embedded
// relay, demo agent, all in one process) with a page open and an answer
// half typed; serve is killed with SIGKILL and started again on the same
// address. The new process holds only its own new questions: the open
// page withdraws every card it no longer has ("This question is no
// longer open; your draft is kept below"), keeps the typed text on
// screen, sends nothing stale (not by click, not by Ctrl+Enter), and
// shows the new questions. Without the script, the old form posted to
// the new process is a styled page with the typed text and the way back.
func TestKilledServeRestartWithdrawsWhatItNoLongerHas(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: builds serve and starts Chromium")
	}
	t.Parallel()
	bctx := browsertest.New(t)
	dir := t.TempDir()
	bin := buildCrashBinary(t, dir) // no crash point is armed: a plain serve
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	db := filepath.Join(dir, "journal.db")
	start := func(name string) (*stack, *process) {
		t.Helper()
		p := startProcess(t, name, bin, []string{"serve", "--demo", "--demo-every", "0", "--addr", addr, "--relay-port", "0", "--db", db},
			[]string{"HOME=" + dir}, uiReady)
		uiURL := p.listening(t)
		return &stack{ctx: context.WithoutCancel(t.Context()), uiURL: uiURL, origin: originOf(t, uiURL)}, p
	}
	first, proc := start("serve")

	// The deploy form, as the demo asks it, on the first process's page.
	var deploy *goquery.Selection
	var before *uiPage
	tick := time.NewTicker(20 * time.Millisecond) // the demo agent asks at start: polled, with a deadline
	defer tick.Stop()
	deadline := time.After(stackWait)
	for deploy == nil || deploy.Length() != 1 {
		before = first.getPage(t, "")
		deploy = before.doc.Find(`#open [data-testid="card"][data-open="true"]`).FilterFunction(func(_ int, c *goquery.Selection) bool {
			return strings.Contains(c.Find(`[data-testid="question"]`).Text(), "Configure the new service deployment")
		})
		if deploy.Length() == 1 {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the demo's deploy form never showed within %v", stackWait)
		}
	}
	gone := deploy.AttrOr("id", "")
	require.NotEmpty(t, gone)
	field := fieldNamed(t, deploy, "Service name")
	noScript := formOf(t, before, deploy).fill(t, field, "payments-api")
	oldCards := before.doc.Find(`#open [data-testid="card"]`).Map(func(_ int, c *goquery.Selection) string { return c.AttrOr("id", "") })
	require.NotEmpty(t, oldCards)

	tab, cancel := chromedp.NewContext(bctx)
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(tab, 2*time.Minute)
	t.Cleanup(stop)
	input := "#" + gone + ` [name="` + field + `"]`
	send := "#" + gone + ` button[data-testid="submit"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(first.uiURL),
		chromedp.WaitVisible(`#connection[data-state="live"]`),
		chromedp.SendKeys(input, "payments-api"),
	))
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__samePage = true`)))

	// kill -9, then the same command on the same address.
	require.NoError(t, proc.cmd.Process.Kill())
	<-proc.done
	var exit *exec.ExitError
	require.True(t, errors.As(proc.err, &exit), "serve ended with %v", proc.err)
	ws, _ := exit.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "serve ended with %v, want SIGKILL", proc.err)
	second, _ := start("serve again")

	// The page follows the new process in place.
	poll := func(cond, what string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second)))
		require.NoError(t, err, "waiting for %s (%s)", what, cond)
	}
	poll(`!!document.querySelector('#`+gone+` [data-testid="withdrawn"]')`, "the question the new process does not hold to be withdrawn")
	poll(`Array.from(document.querySelectorAll('#open [data-testid="card"]')).some(c => !`+jsList(oldCards)+`.includes(c.id))`, "the new process's questions to appear")
	poll(`document.getElementById('connection').dataset.state === 'live'`, "the page to be live again")
	got := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		require.NoError(t, err, expr)
		return v
	}
	yes := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		require.NoError(t, err, expr)
		return v
	}
	assert.True(t, yes(`window.__samePage === true`), "reconciled in place, not reloaded")
	assert.Contains(t, got(`document.querySelector('#`+gone+` [data-testid="withdrawn"]').textContent`),
		"This question is no longer open; your draft is kept below.")
	assert.Equal(t, "payments-api", got(`document.querySelector('`+input+`').value`), "the draft is still on screen")
	assert.True(t, yes(`document.querySelector('`+input+`').readOnly`), "read-only")
	// Every card of the old process still on the page is withdrawn, with
	// nothing to press.
	for _, id := range oldCards {
		if !yes(`!!document.getElementById('` + id + `')`) {
			continue
		}
		assert.True(t, yes(`!!document.querySelector('#`+id+` [data-testid="withdrawn"]')`), "%s withdrawn", id)
		assert.True(t, yes(`Array.from(document.querySelectorAll('#`+id+` form[data-testid="answer-form"] button')).every(b => b.disabled)`),
			"%s: no button to send with", id)
	}
	// Ctrl+Enter in the withdrawn card sends nothing either.
	require.NoError(t, chromedp.Do(ctx, chromedp.Focus(input), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl))))
	assert.True(t, yes(`document.querySelector('`+send+`').disabled`))
	assert.False(t, yes(`document.querySelector('#`+gone+` form').dataset.sent === 'true'`), "no post begun")
	assert.Empty(t, historyRows(t, second), "nothing was sent to the new process")

	// Without the script: the old page's form, posted to the new process.
	r := second.submit(t, noScript, nil, "")
	require.Equal(t, http.StatusNotFound, r.status, "body: %s", r.body)
	require.NotNil(t, r.doc, "an HTML page")
	assert.Equal(t, 1, r.doc.Find(`[data-testid="gone"]`).Length(), "the styled refusal page")
	assert.Equal(t, 1, r.doc.Find(`link[rel="stylesheet"]`).Length())
	assert.Contains(t, r.doc.Find(`[data-testid="gone-typed"]`).Text(), "payments-api", "the operator's text")
	link, ok := r.doc.Find(`a[data-testid="gone-inbox"]`).Attr("href")
	require.True(t, ok, "the inbox link")
	assert.Equal(t, second.uiURL, second.resolve(t, r.url, link).String())
}

// jsList is ids as a JavaScript array literal (ids are [a-z0-9-]).
func jsList(ids []string) string {
	return `['` + strings.Join(ids, `','`) + `']`
}
