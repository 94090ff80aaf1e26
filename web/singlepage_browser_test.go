package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One question's own page (/cards/{id}/page: a row's link without the
// script, a notification's) follows the push for its card as the inbox
// does: it says "Live", its card changes when someone answers elsewhere
// or the agent withdraws it, the header's count follows the inbox, and
// the other questions arriving or settling are counted, never shown on
// it.
func TestACardsOwnPageFollowsItsCardInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	h := newHarness(t)
	mine := h.ask("s1", "r1", permissionReq())
	h.ask("s1", "r2", nameForm())
	other := h.ask("s2", "r3", permissionReq())

	ctx := browse(t, h, "cards/"+string(mine)+"/page") // waits for Live
	text := func(sel string) string {
		return strings.TrimSpace(eval[string](t, ctx, `(document.querySelector('`+sel+`') || {}).textContent || ''`))
	}
	assert.Equal(t, "Live", text(`[data-testid="connection"]`))
	assert.Equal(t, "3 pending", text(`[data-testid="pending-count"]`))

	// Another question arrives: counted, not shown here.
	arrived := h.ask("s3", "r4", permissionReq())
	poll(t, ctx, `document.getElementById('pending-count').textContent === '4 pending'`, "the new question is counted")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#`+domID(arrived)+`').length`), "nor shown on this card's page")
	assert.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('#inbox article.card').length`), "one card on its own page")

	// Another question settles elsewhere: no longer counted.
	h.lifecycle("s2", "r3", "attention.resolved", map[string]any{"resolution": "dismissed"})
	poll(t, ctx, `document.getElementById('pending-count').textContent === '3 pending'`, "the settled question is no longer counted")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#`+domID(other)+`').length`))

	// This one is answered elsewhere: the page shows it so, at once.
	h.lifecycle("s1", "r1", "attention.answered", map[string]any{"answer": map[string]any{"option": "allow"}, "by": "bob"})
	poll(t, ctx, `document.querySelector('#`+domID(mine)+`').dataset.settled === 'true'`, "the card follows the answer given elsewhere")
	assert.Contains(t, text(`#`+domID(mine)+` [data-testid="state-text"]`), "bob")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#`+domID(mine)+` form[data-card] button[type="submit"]:not([disabled])').length`), "nothing left to send")
	poll(t, ctx, `document.getElementById('pending-count').textContent === '2 pending'`, "the header counts it no more")
	assert.Equal(t, "Live", text(`[data-testid="connection"]`))
}

// The agent withdrawing the question while its page is open: the page
// shows it withdrawn, as the inbox does.
func TestACardsOwnPageShowsTheAgentsWithdrawalInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	h := newHarness(t)
	mine := h.ask("s1", "r1", nameForm())
	ctx := browse(t, h, "cards/"+string(mine)+"/page")
	require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('#`+domID(mine)+` form[data-card]').length`), "answerable at first")
	h.lifecycle("s1", "r1", "attention.resolved", map[string]any{"resolution": "dismissed"})
	poll(t, ctx, `document.querySelector('#`+domID(mine)+`').dataset.open === 'false'`, "the card follows the agent's withdrawal")
	assert.Equal(t, "0 pending", strings.TrimSpace(eval[string](t, ctx, `document.getElementById('pending-count').textContent`)))
}

// A question hidden from the inbox ("Hide from this page") still shows on
// its own page, which offers no "Hide": the operator opened the link (a
// row's, a notification's) to see that question, and hiding it there
// would leave the page empty.
func TestACardsOwnPageShowsTheCardTheInboxHidInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	h := newHarness(t)
	mine := h.ask("s1", "r1", permissionReq())
	h.ask("s1", "r2", nameForm())
	ctx := browse(t, h, "")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#`+domID(mine)+` [data-testid="hide"]`)))
	poll(t, ctx, `document.querySelector('#`+domID(mine)+`').classList.contains('is-hidden')`, "hidden from the inbox")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url("cards/"+string(mine)+"/page")), chromedp.WaitVisible(`#connection[data-state="live"]`)))
	assert.False(t, eval[bool](t, ctx, `document.querySelector('#`+domID(mine)+`').classList.contains('is-hidden')`), "the card shows on its own page")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#`+domID(mine)+`').getBoundingClientRect().height > 0`), "and takes room")
	assert.Zero(t, eval[int](t, ctx, `Array.from(document.querySelectorAll('[data-testid="hide"]')).filter(b => !b.hidden).length`), "no Hide on a question's own page")
}
