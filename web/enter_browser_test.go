package web

import (
	"context"
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

// Enter in a text box never sends an answer the operator did not finish
// or choose: not a form with more controls to fill, and not the first
// option of a card with a text box. Ctrl+Enter or a button sends.
func TestEnterSendsNoAnswerTheOperatorDidNotChoose(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	h := newHarness(t)
	two := aep.Request{Kind: aep.KindForm, Prompt: "Name and reason?", Fields: []aep.FieldSpec{
		{ID: "name", Type: aep.FieldString, Label: "Service name", Required: true},
		{ID: "why", Type: aep.FieldString, Label: "Reason"},
	}}
	formCard := "#" + domID(h.ask("s1", "r1", two))
	options := aep.Request{Kind: aep.KindInput, Prompt: "Merge into which branch?",
		Options: []aep.Option{{ID: "main", Label: "main"}, {ID: "none", Label: "Do not merge"}}}
	optionsCard := "#" + domID(h.ask("s2", "r2", options))

	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, 30*time.Second)
	defer stop()
	name, why := formCard+` [name="f0"]`, formCard+` [name="f1"]`
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(""))))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(name)))
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(name, "payments"+kb.Enter)))
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(why, "load")))
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl))))
	first := waitSubmissions(t, h, 1)
	// The post's own page (the card now sending) loads before the next one.
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(formCard+`[data-drop-draft="true"]`)))
	assert.Equal(t, aep.Values{"name": "payments", "why": "load"}, normalise(first[0].Answer.Values),
		"Enter in the first box sent nothing; Ctrl+Enter sent the whole form")

	reply := optionsCard + ` textarea[name="text"], ` + optionsCard + ` input[name="text"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(h.url("")),
		chromedp.WaitVisible(reply),
		chromedp.SendKeys(reply, "release-7"+kb.Enter),
		chromedp.Click(optionsCard+` button[name="option"][value="1"]`),
	))
	subs := waitSubmissions(t, h, 2)
	assert.Equal(t, "none", subs[1].Answer.Option, "the option pressed, not the first one by Enter")
}

// waitSubmissions waits until the fake respond path holds n submissions,
// then checks it holds no more.
func waitSubmissions(t *testing.T, h *harness, n int) []inbox.Submission {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(h.sub.all()) < n {
		require.True(t, time.Now().Before(deadline), "submissions: got %d, want %d", len(h.sub.all()), n)
		h.sub.wait(100 * time.Millisecond)
	}
	subs := h.sub.all()
	require.Len(t, subs, n, "exactly %d submissions", n)
	return subs
}
