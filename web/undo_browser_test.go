package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In Chromium, after a send by the page script: the undo bar shows what
// was sent and Undo with the time left, in view wherever the page is
// scrolled, and nothing is sent; pressing Undo brings the page back with
// the card open again, the answer in its form, the bar gone, and still
// nothing sent. With a short window the bar leaves by itself once the
// command has left (the push brings the card).
func TestUndoButtonInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Run("undo", func(t *testing.T) {
		h := newHarness(t, withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
		ids := askInOrder(h, nameForm(), permissionReq(), nameForm(), nameForm())
		id := ids[0]
		ctx := browse(t, h, "")
		card := "#" + domID(id)
		require.NoError(t, chromedp.Do(ctx,
			chromedp.SendKeys(card+` input[name="f0"]`, "billing-api"),
			chromedp.Click(card+` button[data-testid="submit"]`)))
		bar := `document.querySelector('#undo-bar form[data-testid="bar-undo"]')`
		waitFor(t, ctx, bar+` !== null && !document.getElementById('undo-bar').hidden`, "the undo bar")
		assert.Contains(t, eval[string](t, ctx, bar+`.textContent`), "billing-api", "what was sent")
		assert.Contains(t, eval[string](t, ctx, bar+`.querySelector('[data-undo-left]').textContent`), "min", "the time left")
		inView := `(function () { var r = document.getElementById('undo-bar').getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; })()`
		assert.True(t, eval[bool](t, ctx, inView), "in view")
		eval[bool](t, ctx, `(window.scrollTo(0, document.body.scrollHeight), true)`)
		assert.True(t, eval[bool](t, ctx, inView), "in view at the bottom of the page too")
		assert.Empty(t, h.sub.all(), "held: nothing sent")

		require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#undo-bar button[data-testid="undo"]`)))
		waitFor(t, ctx, `(function () { var c = document.querySelector('`+card+`'); return !!c && c.dataset.state === 'undone'; })()`, "the card undone")
		assert.Equal(t, "billing-api", eval[string](t, ctx, `document.querySelector('`+card+` input[name="f0"]').value`), "the answer kept in the form")
		assert.True(t, eval[bool](t, ctx, `!document.getElementById('undo-bar') || document.getElementById('undo-bar').hidden`), "nothing left to undo")
		assert.Empty(t, h.sub.all(), "nothing was sent")
	})
	t.Run("window passes", func(t *testing.T) {
		h := newHarness(t, withConfig(func(c *Config) { c.UndoWindow = 2 * time.Second }))
		id := askInOrder(h, nameForm())[0]
		ctx := browse(t, h, "")
		card := "#" + domID(id)
		require.NoError(t, chromedp.Do(ctx,
			chromedp.SendKeys(card+` input[name="f0"]`, "billing-api"),
			chromedp.Click(card+` button[data-testid="submit"]`)))
		h.sub.wait(15 * time.Second)
		require.Len(t, h.sub.all(), 1, "sent once the window passed")
		waitFor(t, ctx, `document.getElementById('undo-bar').hidden && document.querySelector('`+card+`').dataset.state === 'sending'`, "the bar to leave with the sent answer")
	})
}
