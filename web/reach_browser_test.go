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

// A card the operator is typing in is never replaced by a push, but what
// the push says of its agent still reaches it: after a relay outage the
// roster comes back and the card being answered knows its agent is
// connected (the meta line's data-reach), not the unknown of the outage
// until a reload; and, the agent gone, it says "not connected". The
// typed text stays.
func TestBusyCardFollowsItsAgentsReach(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	h := newHarness(t)
	card := "#" + domID(h.ask("s1", "r1", nameForm()))
	input, meta, reach := card+` [name="f0"]`, card+` [data-testid="meta"]`, card+` [data-testid="reach"]`

	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, time.Minute)
	defer stop()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(h.url("")),
		chromedp.WaitVisible(input),
		chromedp.SendKeys(input, "payments"),
	))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('connection').dataset.state === 'live'`))
	require.NoError(t, err, "the page never went live")
	kind, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+meta+`').dataset.reach`))
	require.NoError(t, err)
	require.Equal(t, "unknown", kind, "no roster yet: the relay is away")

	// The relay is back: its roster lists the agent, and the inbox
	// republishes the card.
	h.roster.mu.Lock()
	h.roster.up["s1"] = true
	h.roster.mu.Unlock()
	h.in.RefreshReach(h.roster.Reach)

	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+meta+`').dataset.reach === 'yes'`))
	require.NoError(t, err, "the card being typed in still holds its agent's connection as unknown")
	badges, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+reach+`').length`))
	require.NoError(t, err)
	assert.Zero(t, badges, "connected is the usual case: the card says nothing of it")

	// The agent leaves while the relay is fine: that is the card's own
	// news, said on the card.
	h.roster.mu.Lock()
	h.roster.up["s1"] = false
	h.roster.mu.Unlock()
	h.in.RefreshReach(h.roster.Reach)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+meta+`').dataset.reach === 'no'`))
	require.NoError(t, err, "the card being typed in never heard its agent left")
	type view struct {
		Typed string `json:"typed"`
		Focus bool   `json:"focus"`
		Text  string `json:"text"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[view](`({
		typed: document.querySelector('`+input+`').value,
		focus: document.activeElement === document.querySelector('`+input+`'),
		text: document.querySelector('`+reach+`').textContent.trim(),
	})`))
	require.NoError(t, err)
	assert.Equal(t, view{Typed: "payments", Focus: true, Text: "not connected"}, got, "the card keeps the operator's text and focus")
}
