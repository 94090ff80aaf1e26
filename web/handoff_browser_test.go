package web

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/oidctest"
)

// frameWait bounds each wait of the panel's browser tests: generous, as
// the machine may be busy; each waits on what the page shows, not on time.
const frameWait = 60 * time.Second

// panelConsolePage is the embedding console: it frames the URL in ?frame=.
const panelConsolePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mission Control</title></head>
<body><h1>Mission Control</h1>
<iframe id="panel" title="aepforms" width="960" height="720"></iframe>
<script>document.getElementById('panel').src = new URLSearchParams(location.search).get('frame');</script>
</body></html>`

// startPanelConsole serves panelConsolePage over TLS and returns its
// origin, https://localhost:PORT: another site than the UI's 127.0.0.1.
func startPanelConsole(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(panelConsolePage))
	}))
	srv.TLS = &tls.Config{}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	return "https://localhost:" + port
}

// pollTarget waits for a browser target of kind whose URL begins with
// prefix and returns a context attached to it.
func pollTarget(t *testing.T, tab context.Context, kind, prefix string) context.Context {
	t.Helper()
	deadline := time.Now().Add(frameWait)
	var seen []string
	for time.Now().Before(deadline) {
		infos, err := chromedp.Targets(tab)
		require.NoError(t, err)
		seen = seen[:0]
		for _, info := range infos {
			if info.Type == kind && strings.HasPrefix(info.URL, prefix) {
				ctx, cancel := chromedp.NewContext(tab, chromedp.WithTargetID(info.TargetID))
				t.Cleanup(cancel)
				return ctx
			}
			seen = append(seen, info.Type+" "+info.URL)
		}
		waitTargetChange(tab)
	}
	t.Fatalf("no %s target at %s within %v; the browser's targets: %v", kind, prefix, frameWait, seen)
	return nil
}

// waitTargetChange waits until a target is created or changes (or a
// second passes, for one created before the wait began).
func waitTargetChange(tab context.Context) {
	changed := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(tab, time.Second)
	defer cancel()
	chromedp.ListenBrowser(ctx, func(ev any) {
		switch ev.(type) {
		case *target.EventTargetCreated, *target.EventTargetInfoChanged:
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	select {
	case <-changed:
	case <-ctx.Done():
	}
}

// inFrame waits until expr is true in the frame, across its navigations.
func inFrame(t *testing.T, frame context.Context, expr, what string) {
	t.Helper()
	deadline := time.Now().Add(frameWait)
	var err error
	for time.Now().Before(deadline) {
		_, err = chromedp.Run(frame, chromedp.Poll[bool](expr,
			chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		// A navigation ends the page a poll runs in (-32000): poll the next.
		if err == nil || !strings.Contains(err.Error(), "-32000") {
			break
		}
	}
	if err != nil {
		body, _ := chromedp.Run(frame, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText`))
		t.Fatalf("waiting for %s: %v; the frame shows %s", what, err, body)
	}
}

// In Chromium as shipped (third-party cookies blocked), a console on
// https://localhost frames the panel of a UI on https://127.0.0.1 that
// signs in with the in-process provider. A window the browser blocks is
// said so in the frame. The operator's click opens the window; they sign in at the provider's
// form there; the window closes and the frame is the panel, signed in as
// them, whose answer reaches the agent under their name. The window
// (top-level, its own cookie jar) was not signed in.
func TestPanelSignInThroughAWindowInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	console := startPanelConsole(t)
	h, _ := panelHarness(t, withConfig(func(c *Config) { c.EmbedOrigins = []string{console} }))
	id := h.ask("s1", "r1", nameForm())
	bctx := browsertest.NewAsShipped(t, chromedp.IgnoreCertErrors)
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(console+"/console?"+url.Values{"frame": {h.url("panel?theme=dark")}}.Encode())))
	frame := pollTarget(t, tab, "iframe", h.url("signin"))
	inFrame(t, frame, `!document.querySelector('[data-testid="signin-window"]').hidden`, "the frame's sign-in through a window")

	// A pop-up blocker's refusal: window.open gives no window.
	_, err := chromedp.Run(frame, chromedp.Evaluate[bool](`(() => {
		const open = window.open;
		window.open = () => null;
		document.querySelector('[data-testid="signin-popup"]').click();
		window.open = open;
		return true;
	})()`))
	require.NoError(t, err)
	inFrame(t, frame, `document.querySelector('[data-testid="signin-window"]').dataset.state === 'blocked' &&
		!document.querySelector('[data-when="blocked"]').hidden`, "the frame saying the window was blocked")

	// The operator's click.
	require.NoError(t, chromedp.Do(frame, chromedp.Click(`[data-testid="signin-popup"]`)))
	inFrame(t, frame, `document.querySelector('[data-testid="signin-window"]').dataset.state === 'open' &&
		!document.querySelector('[data-when="open"]').hidden &&
		document.querySelector('[data-testid="signin-popup"]').textContent === 'Show the sign-in window'`,
		"the frame saying the window is open, its button bringing the window to the front")
	popup := pollTarget(t, tab, "page", h.op()+"/")
	require.NoError(t, chromedp.Do(popup,
		chromedp.WaitVisible(`#username`),
		chromedp.SendKeys(`#username`, "ann"),
		chromedp.SendKeys(`#password`, oidctest.Password),
		chromedp.Click(`button[type="submit"]`),
	))

	inFrame(t, frame, `location.pathname === '/panel' && !!document.querySelector('[data-testid="operator"]')`, "the panel, signed in")
	who, err := chromedp.Run(frame, chromedp.Evaluate[string](`document.querySelector('[data-testid="operator"]').textContent`))
	require.NoError(t, err)
	assert.Equal(t, "ann", who, "the panel names the operator the window signed in")
	theme, err := chromedp.Run(frame, chromedp.Evaluate[string](`document.documentElement.dataset.theme || ''`))
	require.NoError(t, err)
	assert.Equal(t, "dark", theme, "the panel as it was asked for")
	require.Eventually(t, func() bool {
		infos, err := chromedp.Targets(tab)
		if err != nil {
			return false
		}
		for _, info := range infos {
			if info.Type == "page" && (strings.HasPrefix(info.URL, h.op()) || strings.HasPrefix(info.URL, h.url("auth/"))) {
				return false
			}
		}
		return true
	}, frameWait, 50*time.Millisecond, "the sign-in window closed itself")

	// Answer in the frame: the answer is sent under the operator's name.
	_, err = chromedp.Run(frame, chromedp.Evaluate[bool](`(() => {
		const card = document.getElementById(`+"`"+domID(id)+"`"+`);
		card.querySelector('input[type="text"]').value = 'billing';
		card.querySelector('form[data-testid="answer-form"] button[type="submit"]').click();
		return true;
	})()`))
	require.NoError(t, err)
	h.sub.wait(frameWait)
	got := h.sub.all()
	require.Len(t, got, 1, "answers sent")
	assert.Equal(t, "ann", got[0].By, "the answer's operator")
}

// The sign-in window waits for the panel that opened it as long as the
// server says (--panel-signin-wait, data-wait-ms), not a wait of the
// script's own: opened by a page that never hands it a sign-in, it says
// no panel did once that wait has passed.
func TestSignInWindowWaitsAsConfiguredInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h, _ := panelHarness(t, withConfig(func(c *Config) { c.SignInWindowWait = 200 * time.Millisecond }))
	bctx := browsertest.NewAsShipped(t, chromedp.IgnoreCertErrors)
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(h.url("signin"))))
	// A button of its own that opens the window on a click (a browser
	// opens windows on a click only).
	_, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(() => {
		const b = document.createElement('button');
		b.id = 'open-window';
		b.textContent = 'Open';
		b.addEventListener('click', () => window.open(`+"`"+h.url("auth/popup")+"`"+`, 'w', 'popup'));
		document.body.prepend(b);
		return true;
	})()`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tab, chromedp.Click(`#open-window`)))
	popup := pollTarget(t, tab, "page", h.url("auth/popup"))
	// Far less than the script's own 15 s, far more than the 200 ms set.
	ctx, stop := context.WithTimeout(popup, 8*time.Second)
	defer stop()
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('[data-testid="signin-popup-window"]').dataset.state === 'orphan' &&
		!document.querySelector('[data-testid="signin-popup-orphan"]').hidden`, chromedp.WithPollingInterval(20*time.Millisecond)))
	require.NoError(t, err, "the window says no panel handed it a sign-in, after the configured wait")
}
