package web

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The header counts the questions pushed since the operator looked: one
// that arrives below what is in view is "1 new since you looked" until
// it is brought into view (the header's button goes to it); one that
// arrives while the operator types is held out of the page and counted
// the same, and the button shows it.
func TestHeaderCountsTheQuestionsNewSinceYouLooked(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	first := askInOrder(h, nameForm(), nameForm(), nameForm(), nameForm(), nameForm())
	ctx, console := flowTab(t, h, "")
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1440, 600)))
	waitFor(t, ctx, `document.getElementById('connection').dataset.state === 'live'`, "the page live")
	const newSince = `(() => { const b = document.querySelector('[data-testid="new-since"]'); return b.hidden ? '' : b.textContent; })()`
	assert.Empty(t, eval[string](t, ctx, newSince), "nothing new yet")

	// A question with no deadline goes below the five waiting: out of view.
	late := domID(h.ask("s9", "late", nameForm()))
	waitFor(t, ctx, `!!document.getElementById('`+late+`')`, "the pushed card")
	waitFor(t, ctx, newSince+` === '1 new since you looked'`, "the header's count of the new one")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="new-since"]`)))
	waitFor(t, ctx, `document.activeElement.closest('.card') && document.activeElement.closest('.card').id === '`+late+`'`, "the button took the operator to it")
	waitFor(t, ctx, newSince+` === ''`, "seen: no longer new")
	bottom := eval[float64](t, ctx, `document.querySelector('#`+late+` .card__title').getBoundingClientRect().top - document.querySelector('[data-testid="header"]').getBoundingClientRect().bottom`)
	assert.GreaterOrEqual(t, bottom, 0.0, "its heading shows below the header")

	// Typing in a card: a new question is held out of the page, counted.
	input := "#" + domID(first[0]) + ` [name="f0"]`
	require.NoError(t, chromedp.Do(ctx, chromedp.ScrollIntoView(input), chromedp.Click(input), chromedp.SendKeys(input, "pay")))
	held := domID(h.ask("s8", "held", nameForm()))
	waitFor(t, ctx, `!!document.getElementById('`+held+`')`, "the pushed card, held")
	waitFor(t, ctx, newSince+` === '1 new since you looked'`, "the header counts the held one")
	assert.True(t, eval[bool](t, ctx, `document.getElementById('`+held+`').hidden`), "held out of the page while typing")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="new-since"]`)))
	waitFor(t, ctx, `!document.getElementById('`+held+`').hidden`, "the button shows it")
	waitFor(t, ctx, newSince+` === ''`, "seen")
	assert.Equal(t, "pay", eval[string](t, ctx, `document.querySelector('`+input+`').value`), "what was typed stays")
	stopTab(t, ctx, console)
}
