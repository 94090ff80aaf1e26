package web

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Until the feed has connected once, within the reference relay's ping
// bound, the page (after its script ran) says "Connecting to the relay",
// not "Relay unreachable" nor "Not live"; when the bound passes it says the
// relay is lost, and once the feed connects, that the page is live.
func TestOpenPageSaysConnectingToTheRelayUntilTheBoundPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browsertest.New(t)
	clk := &clock{t: testNow}
	in := inbox.New(inbox.Options{Now: clk.Now}) // its feed has never connected
	srv := httptest.NewServer(NewServer(Config{Now: clk.Now, Heartbeat: time.Hour, WriteTimeout: 5 * time.Second},
		Deps{Inbox: in, Submitter: &fakeSubmitter{}, Roster: &fakeRoster{up: map[string]bool{}}, Upstream: &fakeReady{}, Metrics: &Metrics{}}))
	t.Cleanup(srv.Close)

	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, time.Minute)
	defer stop()
	conn := `document.getElementById('connection')`
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#connection")))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](conn+`.dataset.state === 'connecting' && `+conn+`.textContent === 'Connecting to the relay'`))
	require.NoError(t, err, "the page does not say it is connecting to the relay")
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('[data-testid="relay-lost"]').length === 0`))
	require.NoError(t, err, "a relay-lost banner while connecting")

	clk.Add(inbox.DefaultConnectGrace)
	in.Sweep()
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](conn+`.dataset.state === 'relay-lost' && `+conn+`.textContent === 'Relay unreachable'`))
	require.NoError(t, err, "past the bound the page never said the relay is lost")

	in.FeedState(true, nil)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](conn+`.dataset.state === 'live'`))
	require.NoError(t, err, "connected, the page never went live")
}
