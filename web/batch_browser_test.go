package web

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/inbox"
)

// pickOf is card id's "Select for a batch answer" checkbox, in JS.
func pickOf(id inbox.CardID) string {
	return `document.querySelector('#` + domID(id) + ` [data-batch-pick]')`
}

// Keyboard only: x selects the focused card for a batch, "Answer the 2
// selected" takes the operator to the region's answer, Enter sends it
// once for both; each card gets its own command and settles by push.
func TestBatchSelectAndAnswerInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	ids := askInOrder(h, permissionReq(), permissionReq(), permissionReq(), envForm())
	ctx, console := flowTab(t, h, "")

	assert.Equal(t, "3 waiting", eval[string](t, ctx, `document.querySelector('[data-testid="batch-region"] [data-testid="batch-count"]').textContent`))
	assert.False(t, eval[bool](t, ctx, `document.querySelector('[data-testid="batch-details"]').open`), "the region is folded until used")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#`+domID(ids[3])+` [data-testid="batch-pick"]').hidden`), "a form alone in its shape offers no pick")

	press(t, ctx, "j")
	press(t, ctx, "x")
	assert.True(t, eval[bool](t, ctx, pickOf(ids[0])+`.checked`), "x picks the focused card")
	press(t, ctx, "j")
	press(t, ctx, "x")
	assert.True(t, eval[bool](t, ctx, pickOf(ids[1])+`.checked`))
	press(t, ctx, "x")
	assert.False(t, eval[bool](t, ctx, pickOf(ids[1])+`.checked`), "x again unpicks")
	press(t, ctx, "x")
	assert.Equal(t, "2 selected", eval[string](t, ctx, `document.querySelector('[data-testid="batch-selected"]').textContent`))
	assert.True(t, eval[bool](t, ctx, `document.querySelector('[data-testid="batch-details"]').open`), "a pick opens the region")

	// Tab: the pick, then "Answer the 2 selected"; Enter goes to the
	// region's answer (its first control: the note), Tab to "Allow once".
	press(t, ctx, kb.Tab)
	assert.Equal(t, "batch-pick-input", eval[string](t, ctx, `document.activeElement.dataset.testid`))
	press(t, ctx, kb.Tab)
	assert.Equal(t, "Answer the 2 selected", eval[string](t, ctx, `document.activeElement.textContent`))
	press(t, ctx, kb.Enter)
	assert.True(t, eval[bool](t, ctx, `!!document.activeElement.closest('#batch-region')`), "focus in the region")
	press(t, ctx, kb.Tab)
	assert.Equal(t, "Allow once", eval[string](t, ctx, `document.activeElement.textContent.trim()`))
	press(t, ctx, kb.Enter)

	subs := waitSubmissions(t, h, 2)
	got := map[inbox.CardID]string{}
	for _, s := range subs {
		got[s.Card] = s.Answer.Option
	}
	assert.Equal(t, map[inbox.CardID]string{ids[0]: "allow", ids[1]: "allow"}, got, "one command each, the picked ones only")
	waitFor(t, ctx, `document.querySelectorAll('[data-testid="batch-outcome"][data-sent="true"]').length === 2`, "the outcome list under the form")
	waitFor(t, ctx, `document.getElementById('`+domID(ids[0])+`').dataset.state === 'sending' && document.getElementById('`+domID(ids[1])+`').dataset.state === 'sending'`, "each card shows its answer on its way")

	// The agent records each answer: each card settles, by push.
	for i, id := range ids[:2] {
		h.lifecycle("s1", "r"+string(rune('a'+i)), "attention.answered", map[string]any{"answer": map[string]any{"option": "allow"}, "by": "op"})
		waitFor(t, ctx, `document.getElementById('`+domID(id)+`').dataset.state === 'answered'`, "card "+string(id)+" answered")
	}
	assert.Equal(t, "pending", eval[string](t, ctx, `document.getElementById('`+domID(ids[2])+`').dataset.state`), "the card not picked is left alone")
	assert.Len(t, h.sub.all(), 2)
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "no page load")
	violations := browsertest.Axe(t, ctx)
	assert.Empty(t, violations, "axe-core violations with the region open:\n%s", violations)
	stopTab(t, ctx, console)
}

// A question of a batch's shape arriving by push joins the batch (its
// pick shows, the count follows), and two questions of a new shape make
// a new group without a reload; one leaving lowers the count.
func TestBatchJoinsByPushInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	ids := askInOrder(h, permissionReq(), permissionReq())
	ctx, console := flowTab(t, h, "")
	count := `document.querySelector('[data-testid="batch-region"] [data-testid="batch"] [data-testid="batch-count"]').textContent`
	assert.Equal(t, "2 waiting", eval[string](t, ctx, count))

	third := h.ask("s2", "late", permissionReq())
	waitFor(t, ctx, pickOf(third)+` && !`+pickOf(third)+`.closest('[data-testid="batch-pick"]').hidden`, "the new card's pick")
	waitFor(t, ctx, count+` === '3 waiting'`, "the count follows")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click("#"+domID(third)+" [data-batch-pick]")))
	waitFor(t, ctx, `document.querySelector('[data-testid="batch-selected"]').textContent === '1 selected'`, "picked by click")

	h.ask("s3", "f1", envForm())
	h.ask("s3", "f2", envForm())
	waitFor(t, ctx, `document.querySelectorAll('[data-testid="batch-region"] [data-testid="batch"]').length === 2`, "a new group by push")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('[data-testid="batch-region-count"]').textContent`), "in 2 groups")

	h.lifecycle("s1", "ra", "attention.resolved", map[string]any{"resolution": "dismissed"})
	waitFor(t, ctx, count+` === '2 waiting'`, "a card leaving lowers the count")
	assert.True(t, eval[bool](t, ctx, pickOf(third)+`.checked`), "what was picked stays picked")
	_ = ids
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "no page load")
	stopTab(t, ctx, console)
}

// Past the cards shown in full, a question of a group arriving as a row
// still counts: the region's count follows it.
func TestBatchCountFollowsRowsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 2 }))
	askInOrder(h, permissionReq(), permissionReq())
	ctx, console := flowTab(t, h, "")
	count := `document.querySelector('[data-testid="batch-region"] [data-testid="batch-count"]').textContent`
	assert.Equal(t, "2 waiting", eval[string](t, ctx, count))
	h.ask("s9", "late", permissionReq())
	waitFor(t, ctx, `document.querySelectorAll('#open [data-row]').length === 1`, "the new question as a row")
	waitFor(t, ctx, count+` === '3 waiting'`, "the count follows the row")
	stopTab(t, ctx, console)
}

// Many questions of a group the page has drawn arrive one after another:
// the region's counts follow the pushed summary, and the page fetches the
// region not once (every open page re-fetching on every change is what a
// fleet of browsers cannot afford).
func TestBatchCountsComeByPushNotFetchInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 5 }))
	askInOrder(h, permissionReq(), permissionReq())
	ctx, console := flowTab(t, h, "")
	fetches := `performance.getEntriesByType('resource').filter(function (e) { return e.name.indexOf('region=1') >= 0; }).length`
	count := `document.querySelector('[data-testid="batch-region"] [data-testid="batch-count"]').textContent`
	for i := range 20 {
		id := h.ask("s-many", "m"+strconv.Itoa(i), permissionReq())
		// Each arrives on its own (as a card or a row), so a page that
		// re-fetched on every change would fetch each time.
		waitFor(t, ctx, `!!document.getElementById('`+domID(id)+`')`, "question "+strconv.Itoa(i)+" on the page")
	}
	waitFor(t, ctx, count+` === '22 waiting'`, "the count follows by push")
	waitFor(t, ctx, `document.querySelector('[data-testid="batch-region-count"]').textContent === '22 questions in 1 group'`, "the region's count too")
	assert.Equal(t, 0, eval[int](t, ctx, fetches), "no fetch of the region for a group already drawn")

	// A group never drawn is fetched, once for the burst.
	for i := range 3 {
		h.ask("s-new", "f"+strconv.Itoa(i), envForm())
	}
	waitFor(t, ctx, `document.querySelectorAll('[data-testid="batch-region"] [data-testid="batch"]').length === 2`, "the new group")
	assert.Equal(t, 1, eval[int](t, ctx, fetches), "one fetch for the new group")
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "no page load")
	stopTab(t, ctx, console)
}
