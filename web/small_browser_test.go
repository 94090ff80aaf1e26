package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// Every small control of the inbox is at least 24×24 px to tap (WCAG
// 2.2 SC 2.5.8): the sound checkbox, "Hide from this page", "Clear
// settled", the shortcuts button.
func TestSmallControlsAreBigEnoughToTap(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, withPush(openJournal(t)))
	h.ask("s1", "r1", nameForm())
	h.ask("s1", "r2", nameForm())
	h.lifecycle("s1", "r2", "attention.resolved", aep.Resolved{Resolution: aep.ResolutionAnswered})
	ctx, console := flowTab(t, h, "")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(`[data-testid="push-sound"]`),
		chromedp.WaitVisible(`[data-testid="clear-settled"]`),
	))
	small := eval[[]string](t, ctx, `['[data-testid="push-sound"]', '[data-testid="hide"]',
		'[data-testid="clear-settled"]', '[data-testid="keys-button"]'].flatMap(sel => {
		const el = Array.from(document.querySelectorAll(sel)).find(e => e.offsetParent !== null);
		if (!el) return [sel + ' not shown'];
		const r = el.getBoundingClientRect();
		return r.width >= 24 && r.height >= 24 ? [] : [sel + ' ' + r.width + '×' + r.height];
	})`)
	assert.Empty(t, small, "controls under 24×24 px:\n%s", strings.Join(small, "\n"))
	stopTab(t, ctx, console)
}

// The option chosen with a digit key is the strong one: filled with the
// accent, the others not, in light and dark.
func TestSelectedOptionLooksSelected(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	branch := aep.Request{Kind: aep.KindInput, Prompt: "Merge into which branch?",
		Options: []aep.Option{{ID: "main", Label: "main"}, {ID: "rel", Label: "release/2.4"}}}
	id := h.ask("s1", "r1", branch)
	for _, theme := range []string{"", "?theme=dark"} {
		ctx, console := flowTab(t, h, theme)
		press(t, ctx, "j")
		press(t, ctx, "2")
		opt := `document.querySelectorAll('#` + domID(id) + ` button[data-testid="option"]')`
		require.Equal(t, "true", eval[string](t, ctx, opt+`[1].getAttribute('aria-pressed')`))
		accent := eval[string](t, ctx, `(() => { const d = document.createElement('div'); d.style.background = 'var(--accent)';
			document.body.append(d); const c = getComputedStyle(d).backgroundColor; d.remove(); return c; })()`)
		chosen := eval[string](t, ctx, `getComputedStyle(`+opt+`[1]).backgroundColor`)
		other := eval[string](t, ctx, `getComputedStyle(`+opt+`[0]).backgroundColor`)
		assert.Equal(t, accent, chosen, "theme %q: the chosen option is filled with the accent", theme)
		assert.NotEqual(t, accent, other, "theme %q: the other option is not", theme)
		stopTab(t, ctx, console)
	}
}

// A permission's command keeps its code formatting in the card's title,
// where the exact command matters most.
func TestPermissionCommandIsCodeInTheTitle(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	id := h.ask("s1", "r1", permissionReq())
	ctx, console := flowTab(t, h, "")
	title := `document.querySelector('#` + domID(id) + ` [data-testid="question"]')`
	assert.Equal(t, "make release", eval[string](t, ctx, `(`+title+`.querySelector('code') || {}).textContent || ''`), "the command as code")
	assert.Equal(t, "Run make release?", eval[string](t, ctx, title+`.textContent.trim()`), "the words around it as written")
	assert.Equal(t, "monospace", eval[string](t, ctx, `getComputedStyle(`+title+`.querySelector('code')).fontFamily.split(',').pop().trim()`), "set in a monospace face")
	stopTab(t, ctx, console)
}

// A long session id reads the same wherever the inbox names it: the
// "Showing only" line shortens it as the group heading and the card do
// (the whole id in its title).
func TestSessionLabelsShortenedAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	long := "ask-user-question-01JF3Q8Z5N2W4FBV7M3Y"
	id := h.ask(long, "r1", nameForm())
	ctx, console := flowTab(t, h, "?session="+long)
	group := eval[string](t, ctx, `document.querySelector('[data-testid="group"] .group__title').textContent`)
	meta := eval[string](t, ctx, `document.querySelector('#`+domID(id)+` [data-testid="prov-session"]').textContent`)
	filter := eval[string](t, ctx, `document.querySelector('[data-testid="filter-term"][data-name="session"] b').textContent`)
	require.NotEqual(t, long, meta, "the card shortens it")
	assert.True(t, strings.HasSuffix(group, "session "+meta), "group heading %q names session %q", group, meta)
	assert.Equal(t, meta, filter, "the filter line as the card")
	assert.Equal(t, long, eval[string](t, ctx, `document.querySelector('[data-testid="filter-term"][data-name="session"] b').title`), "whole in its title")
	stopTab(t, ctx, console)
}

// The Rules page and the "events may be missing" notice shorten a long
// session as its card does, the whole id in a title: they showed it whole.
func TestRulesPageAndGapNoticeShortenTheSession(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	rh := newRulesHarness(t)
	long := "ask-user-question-01JF3Q8Z5N2W4FBV7M3Y"
	id := rh.ask(long, "r1", permissionReq())
	rh.in.ReplayExhausted(long, aep.Position{Epoch: 1, Seq: 1})
	ctx, console := flowTab(t, rh.harness, "")
	card := "#" + domID(id)
	short := eval[string](t, ctx, `document.querySelector('`+card+` [data-testid="prov-session"]').textContent`)
	require.NotEqual(t, long, short, "the card shortens it")
	type label struct {
		Text  string `json:"text"`
		Title string `json:"title"`
	}
	notice := eval[label](t, ctx, `(() => { const p = document.querySelector('[data-testid="notice"] p'); return {text: p.textContent, title: p.title}; })()`)
	assert.True(t, strings.HasPrefix(notice.Text, "Events may be missing for session "+short+": "), "the notice %q names %q", notice.Text, short)
	assert.NotContains(t, notice.Text, long)
	assert.Equal(t, long, notice.Title, "whole in its title")

	// A rule held to the session, made from the card.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(card+` [data-testid="rule-maker-summary"]`),
		chromedp.Click(card+` [data-testid="rule-make"]`),
		chromedp.Click(card+` [data-testid="rule-session"]`),
		chromedp.Click(card+` button[data-testid="option"][value="0"]`),
	))
	waitSubmissions(t, rh.harness, 1)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(rh.url("rules")), chromedp.WaitVisible(`[data-testid="rule-held-to"]`)))
	held := eval[label](t, ctx, `(() => { const b = document.querySelector('[data-testid="rule-held-to"] bdi'); return {text: b.textContent, title: b.title}; })()`)
	assert.Equal(t, label{Text: short, Title: long}, held, "the Rules page: shortened as the card, whole in its title")
	assert.NotContains(t, eval[string](t, ctx, `document.querySelector('[data-testid="rules"], main').textContent`), long)
	stopTab(t, ctx, console)
}
