package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// An open page locks a card at the deadline the server rendered, with the
// server's own words, even when the server can no longer be reached: the
// script decides nothing, it reads data-deadline, data-lock-text and
// data-gives-way. The harness clock never moves, so no push can do it.
func TestOpenPageLocksACardAtItsDeadlineWithoutTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	h := newHarness(t)
	req := nameForm()
	req.ExpiresAt = testNow.Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	id := h.ask("s1", "r1", req)
	card := "#" + domID(id)

	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	input := card + ` input[name="f0"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(h.url("")),
		chromedp.WaitVisible(input),
		chromedp.SendKeys(input, "half-typed"),
	))
	lockText, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+card+` [data-lock-text]').dataset.lockText`))
	require.NoError(t, err)
	require.NotEmpty(t, lockText, "the server rendered the lock text")

	// The server goes away before the deadline.
	h.srv.CloseClientConnections()
	h.srv.Listener.Close()

	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+card+`').classList.contains('is-locked')`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the card never locked at its deadline")
	type seen struct {
		State    string `json:"state"`
		Typed    string `json:"typed"`
		ReadOnly bool   `json:"readOnly"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[seen](`({
		state: document.querySelector('`+card+` [data-testid="state"]').textContent.trim(),
		typed: document.querySelector('`+input+`').value,
		readOnly: document.querySelector('`+input+`').readOnly,
	})`))
	require.NoError(t, err)
	assert.Equal(t, lockText, got.State, "the state line shows the server's words")
	assert.Equal(t, "half-typed", got.Typed, "what the operator typed is kept")
	assert.True(t, got.ReadOnly, "the control is read-only")
}
