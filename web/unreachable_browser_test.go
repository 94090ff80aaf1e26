package web

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// With this UI's server gone, an open page says so plainly, disables
// sending and keeps what the operator typed (in the form and in the
// browser's draft); once the server is back, sending comes back and the
// draft is still there.
func TestOpenPageWithTheServerGoneKeepsTheAnswerAndDisablesSending(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	h := newHarness(t)
	card := "#" + domID(h.ask("s1", "r1", nameForm()))
	input, send := card+` [name="f0"]`, card+` button[data-testid="submit"]`

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

	addr := h.srv.Listener.Addr().String()
	h.die()

	type view struct {
		Banner   bool   `json:"banner"`
		Disabled bool   `json:"disabled"`
		Typed    string `json:"typed"`
		Draft    bool   `json:"draft"`
	}
	look := `({
		banner: !document.getElementById('unreachable').hidden,
		disabled: document.querySelector('` + send + `').disabled,
		typed: document.querySelector('` + input + `').value,
		draft: Object.keys(localStorage).some(k => k.startsWith('aepforms:draft:') && localStorage.getItem(k).includes('payments')),
	})`
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById('unreachable').hidden`))
	require.NoError(t, err, "no unreachable banner")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[view](look))
	require.NoError(t, err)
	assert.Equal(t, view{Banner: true, Disabled: true, Typed: "payments", Draft: true}, got, "while the server is gone")
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('unreachable').textContent.trim()`))
	require.NoError(t, err)
	assert.Contains(t, text, "what you typed is kept in this browser")

	// The server comes back on the same address.
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	go func() { _ = h.srv.Config.Serve(ln) }()
	t.Cleanup(func() { ln.Close() })

	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('unreachable').hidden`))
	require.NoError(t, err, "the banner never went away")
	got, err = chromedp.Run(ctx, chromedp.Evaluate[view](look))
	require.NoError(t, err)
	assert.Equal(t, view{Banner: false, Disabled: false, Typed: "payments", Draft: true}, got, "after the server is back")

	// Sent: the draft goes only once the server shows it holds the answer.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(send)))
	require.Len(t, waitSubmissions(t, h, 1), 1)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(card+`[data-drop-draft="true"]`)), "the page after the post")
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`!Object.keys(localStorage).some(k => k.startsWith('aepforms:draft:'))`))
	require.NoError(t, err, "the draft outlived the server's confirmation")
}
