package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// The page script reads the card's verdict (the attributes the server
// rendered from inbox.Card.Verdict) and decides nothing itself. These
// tests drive Chromium through what the operator saw go wrong when it
// did decide: an empty page 2, a keyboard send that looked unsent, an
// informational card counted as pending, a card locked by the browser's
// clock in the script's own words.

// browse opens a tab on the harness's page at path, waits until its push
// stream is live and returns the tab with a deadline.
func browse(t *testing.T, h *harness, path string) context.Context {
	t.Helper()
	bctx := browsertest.New(t)
	tab, cancel := chromedp.NewContext(bctx)
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(path)), chromedp.WaitVisible(`#connection[data-state="live"]`)))
	return ctx
}

// poll waits until the JavaScript expression cond is true in ctx's page.
func poll(t *testing.T, ctx context.Context, cond, what string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(15*time.Second)))
	require.NoError(t, err, what)
}

// With the script on, a later page of a long inbox (rows only, no full
// card) shows its rows: the script hid every group without a full card.
func TestLaterPageShowsItsRowsWithTheScriptInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 5; c.PageRows = 10 }))
	askMany(h, 40, 2)
	next := h.getPage(nil, "").doc(t).Find(`[data-testid="next-page"]`)
	href, ok := next.Attr("href")
	require.True(t, ok, "the first page links to the next")

	ctx := browse(t, h, h.relative(href))
	rows := `Array.from(document.querySelectorAll('#open .row')).filter(function (r) { return r.offsetParent !== null; }).length`
	poll(t, ctx, rows+` === 10`, "page 2 never showed its 10 rows")
	assert.Equal(t, 10, eval[int](t, ctx, rows), "page 2 shows its rows")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#open .group[hidden]').length`), "no group is hidden")
	assert.Equal(t, "40 pending", eval[string](t, ctx, `document.getElementById('pending-count').textContent`))
}

// A card sent with Ctrl+Enter and one sent by clicking Send end in the
// same place: each shows what was sent, with no form left to fill.
// Several pairs, as the keyboard path went wrong in 5 runs of 6.
func TestKeyboardAndMouseSendsEndAlikeInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	// The agent takes each answer at once, as a live one does: its
	// accepted version is pushed while the post's own answer is on its
	// way to the browser.
	h.sub.then = func(s inbox.Submission) {
		h.in.SettleSubmission(s.Card, s.CommandID, inbox.SubmissionAccepted, "", "")
	}
	const pairs = 3
	for i := range pairs {
		h.ask(fmt.Sprintf("s%d", i), fmt.Sprintf("key%d", i), nameForm())
		h.ask(fmt.Sprintf("s%d", i), fmt.Sprintf("mouse%d", i), nameForm())
	}
	ctx := browse(t, h, "")
	type end struct {
		Form, Open, State, Draft string
		Version                  string
		Typed                    bool
	}
	endOf := func(sel string) end {
		return eval[end](t, ctx, `(function () {
			var c = document.querySelector('`+sel+`');
			return { Form: String(!!c.querySelector('form[data-card]')), Open: c.dataset.open, State: c.dataset.state,
				Draft: c.dataset.dropDraft || '', Version: c.dataset.version, Typed: !!c.querySelector('input[name="f0"]') };
		})()`)
	}
	for i := range pairs {
		s := fmt.Sprintf("s%d", i)
		key, mouse := "#"+domID(cardID(s, fmt.Sprintf("key%d", i))), "#"+domID(cardID(s, fmt.Sprintf("mouse%d", i)))
		require.NoError(t, chromedp.Do(ctx, chromedp.Focus(key+` [name="f0"]`)), "focus")
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(key+` [name="f0"]`, "by-keyboard")), "type")
		require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl))), "ctrl+enter")
		waitSubmissions(t, h, 2*i+1)
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(mouse+` [name="f0"]`, "by-mouse")), "type")
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(mouse+` button[data-testid="submit"]`)), "click")
		waitSubmissions(t, h, 2*i+2)
		for _, sel := range []string{key, mouse} {
			poll(t, ctx, `!document.querySelector('`+sel+` form[data-card]')`, sel+" still shows its form")
		}
		k, m := endOf(key), endOf(mouse)
		assert.Equal(t, m, k, "pair %d: the keyboard send ends where the mouse send does", i)
		assert.Equal(t, "false", k.Form, "no form left on the card sent")
		assert.Equal(t, "true", k.Draft, "the server holds the answer")
	}
}

// An informational request (answered in the agent's own interface) is
// shown, never counted as pending, also after the script recounts.
func TestInformationalCardIsNotPendingInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	h.ask("s1", "r1", nameForm())
	oob := h.ask("s2", "r2", aep.Request{Kind: aep.KindPermission, Prompt: "Approve the pipeline in the CI dashboard.",
		Options: []aep.Option{{ID: "ok", Label: "Approve"}}, RespondVia: []string{aep.ViaOOB}})
	assert.Equal(t, "1 pending", h.getPage(nil, "").doc(t).Find(`#pending-count`).Text(), "the server's count")

	ctx := browse(t, h, "")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible("#"+domID(oob))))
	// A push makes the script recount.
	third := h.ask("s3", "r3", nameForm())
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible("#"+domID(third))))
	assert.Equal(t, "2 pending", eval[string](t, ctx, `document.getElementById('pending-count').textContent`),
		"the script counts the two questions, not the informational card")
	assert.Equal(t, "(2) aepforms", eval[string](t, ctx, `document.title`))
}

// A deadline passing is the server's event: the browser counts down to
// it and then shows the server's words, but locks nothing by its own
// clock; the inbox sweep settles the card and its locked version, with
// the server's state line, arrives by push, keeping what was typed.
func TestDeadlineLocksByTheServersSweepInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	req := nameForm()
	req.ExpiresAt = testNow.Add(5 * time.Second).UTC().Format(time.RFC3339Nano)
	card := "#" + domID(h.ask("s1", "r1", req))
	input := card + ` input[name="f0"]`
	ctx := browse(t, h, "")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(input), chromedp.SendKeys(input, "half-typed")))
	passed := eval[string](t, ctx, `document.querySelector('`+card+` [data-passed-text]').dataset.passedText`)
	require.NotEmpty(t, passed, "the server rendered the countdown's words at zero")

	// The browser's clock reaches the deadline; the server's has not moved.
	poll(t, ctx, `document.querySelector('`+card+` time[data-deadline]').textContent === '`+passed+`'`,
		"the countdown never reached zero")
	assert.Equal(t, "true", eval[string](t, ctx, `document.querySelector('`+card+`').dataset.open`), "the script locked nothing")
	assert.False(t, eval[bool](t, ctx, `document.querySelector('`+input+`').readOnly`), "the script locked nothing")

	// The server's clock passes the deadline and its sweep runs.
	h.clk.Add(6 * time.Second)
	h.in.Sweep()
	poll(t, ctx, `document.querySelector('`+card+`').dataset.open === 'false'`, "the server's locked version never arrived")
	type seen struct {
		State, Kind, Typed string
		ReadOnly           bool
	}
	got := eval[seen](t, ctx, `({
		State: document.querySelector('`+card+` [data-testid="state"]').textContent.trim(),
		Kind: document.querySelector('`+card+` [data-testid="state"]').dataset.state,
		Typed: document.querySelector('`+input+`').value,
		ReadOnly: document.querySelector('`+input+`').readOnly,
	})`)
	want := h.getPage(nil, "").doc(t).Find(card + ` [data-testid="state"]`)
	assert.Equal(t, strings.TrimSpace(want.Text()), got.State, "the state line is the server's")
	assert.Equal(t, "expired", got.Kind)
	assert.Equal(t, "half-typed", got.Typed, "what the operator typed is kept")
	assert.True(t, got.ReadOnly, "the control is read-only")
}
