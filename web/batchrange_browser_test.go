package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// On the batch page, Shift+click ticks the range from the box clicked
// before to this one, and unticks a range the same way.
func TestBatchShiftClickSelectsARange(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	askInOrder(h, nameForm(), nameForm(), nameForm(), nameForm(), nameForm(), nameForm())
	tab, cancel := chromedp.NewContext(browsertest.New(t))
	t.Cleanup(cancel)
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 30*time.Second)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url("batches")), chromedp.WaitVisible(`.batch__check`)))
	boxes, err := chromedp.Run(ctx, chromedp.Nodes(`.batch__check`))
	require.NoError(t, err)
	require.Len(t, boxes, 6)
	click := func(i int, shift bool) {
		t.Helper()
		var opts []chromedp.MouseOption
		if shift {
			opts = append(opts, chromedp.ButtonModifiers(chromedp.ModifierShift))
		}
		require.NoError(t, chromedp.Do(ctx, chromedp.ScrollIntoView(`#`+boxes[i].AttributeValue("id")), chromedp.MouseClickNode(boxes[i], opts...)), "box %d", i)
	}
	const ticked = `Array.from(document.querySelectorAll('.batch__check')).map(b => b.checked)`
	click(1, false)
	click(4, true)
	assert.Equal(t, []bool{false, true, true, true, true, false}, eval[[]bool](t, ctx, ticked), "Shift+click: the second to the fifth")
	click(3, false)
	click(2, true)
	assert.Equal(t, []bool{false, true, false, false, true, false}, eval[[]bool](t, ctx, ticked), "a range unticked the same way")
	stopTab(t, ctx, console)
}

// In the inbox, a Shift+click range ticks only the questions the page
// shows: one the operator hid from the page, between the two clicked,
// stays unticked, so no batch answers a question they did not see.
func TestShiftClickRangeSkipsHiddenQuestions(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	ids := askInOrder(h, nameForm(), nameForm(), nameForm())
	tab, cancel := chromedp.NewContext(browsertest.New(t))
	t.Cleanup(cancel)
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 30*time.Second)
	t.Cleanup(stop)
	pick := func(i int) string { return `#card-` + string(ids[i]) + `-pick` }
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url("")), chromedp.WaitVisible(pick(0))))
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#`+domID(ids[1])+` [data-action="hide"]`), chromedp.WaitNotVisible(`#`+domID(ids[1]))))
	require.NoError(t, chromedp.Do(ctx, chromedp.ScrollIntoView(pick(0)), chromedp.Click(pick(0))))
	ticked := `["` + pick(0) + `", "` + pick(1) + `", "` + pick(2) + `"].map(s => document.querySelector(s).checked)`
	boxes, err := chromedp.Run(ctx, chromedp.Nodes(pick(2)))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.ScrollIntoView(pick(2)), chromedp.MouseClickNode(boxes[0], chromedp.ButtonModifiers(chromedp.ModifierShift))))
	assert.Equal(t, []bool{true, false, true}, eval[[]bool](t, ctx, ticked), "the hidden question is not ticked, the one Shift+clicked is")
	stopTab(t, ctx, console)
}
