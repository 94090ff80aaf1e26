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
// roster comes back and the card being answered says "connected", not the
// "connection unknown" of the outage until a reload. The typed
// text stays.
func TestBusyCardFollowsItsAgentsReach(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	h := newHarness(t)
	card := "#" + domID(h.ask("s1", "r1", nameForm()))
	input, reach := card+` [name="f0"]`, card+` [data-testid="reach"]`

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
	kind, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+reach+`').dataset.reach`))
	require.NoError(t, err)
	require.Equal(t, "unknown", kind, "no roster yet: the relay is away")

	// The relay is back: its roster lists the agent, and the inbox
	// republishes the card.
	h.roster.mu.Lock()
	h.roster.up["s1"] = true
	h.roster.mu.Unlock()
	h.in.RefreshReach(h.roster.Reach)

	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+reach+`').dataset.reach === 'yes'`))
	require.NoError(t, err, "the card being typed in still says its agent's connection is unknown")
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
	assert.Equal(t, view{Typed: "payments", Focus: true, Text: "connected"}, got, "the card keeps the operator's text and focus")
}
