package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/agent"
)

// TestEmbedPanelInCrossOriginFrame embeds the panel as Mission Control
// does, in headless Chromium with its default cookie settings (third-party
// cookies blocked): a console page on https://localhost:P2 frames
// https://127.0.0.1:P1/panel of a UI started with TLS, an operator secret
// and --embed-origin https://localhost:P2. Inside the frame the operator
// signs in and lands on the panel with its filter and theme; the panel
// shows the pending cards and tells the console their count by
// postMessage; a permission answered inside the frame reaches the agent
// and the count falls. A page on a third origin is refused by
// frame-ancestors, and top-level sign-in still works.
func TestEmbedPanelInCrossOriginFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	certFile, keyFile, cert := selfSignedCert(t)
	console := startConsole(t, cert)
	third := startConsole(t, cert)
	const operatorToken = "embed-operator-secret"
	s := startEmbedStack(t, certFile, keyFile, operatorToken, console)
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission, agent.ScenarioAskUser}})
	perm, permReq := askedRequest(t, ag, agent.ScenarioPermission)
	askedRequest(t, ag, agent.ScenarioAskUser)

	const panelQuery = "agent=aepforms-demo&theme=dark"
	panelURL := s.uiURL + "panel?" + panelQuery
	bctx := embedBrowser(t)

	// The console frames the panel; signed out, the frame shows the
	// sign-in form.
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(console+"/console?"+url.Values{"frame": {panelURL}}.Encode())))
	frameLoads(t, tab, 1)
	frame := attachFrame(t, tab, s.origin)
	require.Equal(t, "/signin", frameEval[string](t, frame, `location.pathname`), "the signed-out frame shows the sign-in page")

	// Sign in inside the frame.
	frameEval[bool](t, frame, signInScript(operatorToken, "Ann"))
	frameLoads(t, tab, 2)
	where := frameEval[string](t, frame, `location.pathname + location.search`)
	if frameEval[bool](t, frame, `!!document.querySelector('[data-testid="signin-not-kept"]')`) {
		t.Fatalf("Chromium refused the session cookie inside the frame: the frame shows %s, the page saying the sign-in was not kept", where)
	}
	require.Equal(t, "/panel?"+panelQuery, where, "after signing in inside the frame: the panel with its query")
	assert.Equal(t, "dark", frameEval[string](t, frame, `document.documentElement.dataset.theme || ''`), "the panel keeps its theme")
	assert.Equal(t, "Ann", frameEval[string](t, frame, `(document.querySelector('[data-testid="operator"]') || {}).textContent || ''`),
		"the panel says who signed in")

	// The panel is live (its push stream carries the cookie too), shows
	// the pending cards and tells the console how many.
	framePoll(t, frame, `document.querySelector('[data-testid="connection"]').dataset.state === 'live'`, "the panel's push stream")
	framePoll(t, frame, `document.querySelector('[data-testid="pending-count"]').dataset.pending === '2' &&
		document.querySelectorAll('[data-testid="card"][data-settled="false"]').length === 2`, "two pending cards in the panel")
	seen := consolePoll(t, tab, 2, s.origin, 0)

	// Answer the permission inside the frame: the agent records it.
	frameEval[bool](t, frame, `(() => {
		const card = document.querySelector('[data-testid="card"][data-kind="permission"]');
		const allow = Array.from(card.querySelectorAll('button[data-testid="option"]')).find(b => b.textContent.trim() === 'Allow once');
		allow.click();
		return true;
	})()`)
	// The panel's script posts it with fetch: the card updates in place,
	// the frame loads nothing more.
	got := awaitCommands(t, ag, perm.ID, 1, nil)
	require.Len(t, got, 1, "commands the agent received for the permission")
	assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "the agent's decision: %+v", got[0].Decision)
	assert.Equal(t, permReq.ID, got[0].Subject, "the command answers the permission request")
	assert.JSONEq(t, `{"option":"allow"}`, answerOf(t, got[0].Raw), "the answer the agent received")

	// The count falls, in the frame and in the console.
	framePoll(t, frame, `document.querySelector('[data-testid="pending-count"]').dataset.pending === '1'`, "one pending card left in the panel")
	consolePoll(t, tab, 1, s.origin, seen)
	loads, loadErr := chromedp.Run(tab, chromedp.Evaluate[int](`window.__loads`))
	require.NoError(t, loadErr)
	assert.Equal(t, 2, loads, "the answer sent without a page load in the frame")

	// A page on a third origin may not frame the UI: Chromium refuses the
	// frame and says why in that page's console.
	thirdTab, cancelThird := chromedp.NewContext(bctx)
	defer cancelThird()
	require.NoError(t, chromedp.Do(thirdTab, chromedp.Navigate("about:blank")))
	watch, stopWatch := context.WithTimeout(thirdTab, stackWait)
	defer stopWatch()
	messages := chromedp.Console(watch)
	require.NoError(t, chromedp.Do(thirdTab, chromedp.Navigate(third+"/console?"+url.Values{"frame": {panelURL}}.Encode())))
	refusal := ""
	for m, err := range messages {
		if err != nil {
			break
		}
		if strings.Contains(m.Text, "frame-ancestors") && strings.Contains(m.Text, s.origin) {
			refusal = m.Text
			break
		}
	}
	if refusal == "" {
		t.Errorf("a page on %s framed the panel: no frame-ancestors refusal in its console within %v", third, stackWait)
	} else {
		assert.Contains(t, refusal, "frame-ancestors 'self' "+console, "the refusal names the allowed ancestors")
	}

	// Top-level, the panel's own tab is signed out (the frame's cookie is
	// partitioned to the console's site) and signs in as before.
	top, cancelTop := chromedp.NewContext(bctx)
	defer cancelTop()
	require.NoError(t, chromedp.Do(top, chromedp.Navigate(panelURL)))
	where, err := chromedp.Run(top, chromedp.Evaluate[string](`location.pathname`))
	require.NoError(t, err)
	require.Equal(t, "/signin", where, "the panel's own tab, before signing in there")
	loaded := chromedp.Events(top, page.LoadEventFired)
	_, err = chromedp.Run(top, chromedp.Evaluate[bool](signInScript(operatorToken, "Bo")))
	require.NoError(t, err)
	for _, err := range loaded {
		require.NoError(t, err, "waiting for the page after signing in")
		break
	}
	where, err = chromedp.Run(top, chromedp.Evaluate[string](`location.pathname + location.search`))
	require.NoError(t, err)
	assert.Equal(t, "/panel?"+panelQuery, where, "after signing in top-level")
	who, err := chromedp.Run(top, chromedp.Evaluate[string](`(document.querySelector('[data-testid="operator"]') || {}).textContent || ''`))
	require.NoError(t, err)
	assert.Equal(t, "Bo", who, "the panel's own tab says who signed in there")
}

// signInScript fills the sign-in form with the secret and name and sends it.
func signInScript(secret, name string) string {
	return `(() => {
		document.getElementById('signin-secret').value = ` + strconv.Quote(secret) + `;
		document.getElementById('signin-name').value = ` + strconv.Quote(name) + `;
		document.querySelector('[data-testid="signin-form"] [data-testid="submit"]').click();
		return true;
	})()`
}

// TestEmbedPanelExplainsARefusedCookie: in a browser that still refuses
// the session cookie inside the frame (here one set to block all cookies,
// as a browser without partitioned cookies blocks third-party ones), a
// good sign-in inside the frame does not loop back to the sign-in form:
// the frame says the browser did not keep the sign-in, with the panel
// (its query kept) to open in its own tab.
func TestEmbedPanelExplainsARefusedCookie(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	certFile, keyFile, cert := selfSignedCert(t)
	console := startConsole(t, cert)
	const operatorToken = "embed-operator-secret"
	s := startEmbedStack(t, certFile, keyFile, operatorToken, console)
	// A profile whose content settings block every cookie (set in its
	// Preferences, as the browser's settings page would; no flag).
	profile := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(profile, "Default"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(profile, "Default", "Preferences"),
		[]byte(`{"profile":{"default_content_setting_values":{"cookies":2}}}`), 0o600))
	bctx := embedBrowser(t, chromedp.UserDataDir(profile))

	const panelQuery = "kind=permission&theme=dark"
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(console+"/console?"+url.Values{"frame": {s.uiURL + "panel?" + panelQuery}}.Encode())))
	frameLoads(t, tab, 1)
	frame := attachFrame(t, tab, s.origin)
	frameEval[bool](t, frame, signInScript(operatorToken, "Ann"))
	frameLoads(t, tab, 2)

	type notKept struct {
		Shown  bool   `json:"shown"`
		Form   bool   `json:"form"`
		Href   string `json:"href"`
		Target string `json:"target"`
		Theme  string `json:"theme"`
	}
	got := frameEval[notKept](t, frame, `(() => {
		const a = document.querySelector('[data-testid="signin-not-kept"] a[data-testid="open-in-tab"]');
		return {
			shown: !!document.querySelector('[data-testid="signin-not-kept"]'),
			form: !!document.querySelector('[data-testid="signin-form"]'),
			href: a ? a.href : '', target: a ? a.target : '',
			theme: document.documentElement.dataset.theme || '',
		};
	})()`)
	require.True(t, got.Shown, "the frame explains that the browser did not keep the sign-in; it shows %s",
		frameEval[string](t, frame, `location.href + '\n' + document.body.innerText`))
	assert.False(t, got.Form, "the frame does not show the sign-in form again")
	assert.Equal(t, s.uiURL+"panel?"+panelQuery, got.Href, "the way on: the panel, with its query, ...")
	assert.Equal(t, "_blank", got.Target, "... in its own tab")
	assert.Equal(t, "dark", got.Theme, "the explanation keeps the panel's theme")
}

// startEmbedStack starts a relay and a UI served over TLS with an operator
// secret that console may embed. (startStack's UI is plain HTTP with no
// operator secret; this is its UI half with the serve flags embedding
// needs.)
func startEmbedStack(t *testing.T, certFile, keyFile, operatorToken, console string) *stack {
	t.Helper()
	s := &stack{token: "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36), relayEnv: map[string]string{}}
	s.relayEnv["AEP_TOKEN"] = s.token
	s.relayURL, _, s.stopRelay = runApp(t, "relay", []string{"relay", "--port", "0"}, s.relayEnv, relayReady)
	s.uiURL, s.ctx, _ = runApp(t, "ui", []string{"serve", "--relay", s.relayURL, "--addr", "127.0.0.1:0", "--ack-window", stackAckWindow,
		"--operator-token", operatorToken, "--tls-cert", certFile, "--tls-key", keyFile, "--embed-origin", console},
		map[string]string{"AEP_TOKEN": s.token, "HOME": t.TempDir()}, `aepforms UI listening on (https://[^\s"]+)`)
	u, err := url.Parse(s.uiURL)
	require.NoError(t, err)
	s.origin = u.Scheme + "://" + u.Host
	return s
}

// consolePage is the embedding console: it frames the URL in ?frame=,
// counts the frame's loads and keeps every message posted to it.
const consolePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mission Control</title></head>
<body><h1>Mission Control</h1>
<iframe id="panel" title="aepforms" width="960" height="720"></iframe>
<script>
window.__loads = 0;
window.__messages = [];
window.addEventListener('message', function (e) { window.__messages.push({origin: e.origin, data: e.data}); });
var f = document.getElementById('panel');
f.addEventListener('load', function () { window.__loads++; });
f.src = new URLSearchParams(location.search).get('frame');
</script></body></html>`

// startConsole serves consolePage over TLS and returns its origin,
// https://localhost:PORT: another site than the UI's 127.0.0.1.
func startConsole(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(consolePage))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	return "https://localhost:" + port
}

// selfSignedCert writes a certificate for localhost and 127.0.0.1 and
// its key to PEM files and returns them with the pair.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "aepforms e2e"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return certFile, keyFile, pair
}

// embedBrowser starts headless Chromium as shipped (no flag that changes
// cookie policy; --ignore-certificate-errors only lets the test's
// self-signed certificate through) with a fresh profile.
func embedBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	return browsertest.NewAsShipped(t, append([]chromedp.ExecAllocatorOption{chromedp.IgnoreCertErrors}, extra...)...)
}

// frameLoads waits until the console's frame has loaded n documents.
func frameLoads(t *testing.T, tab context.Context, n int) {
	t.Helper()
	_, err := chromedp.Run(tab, chromedp.Poll[bool](fmt.Sprintf(`window.__loads >= %d`, n),
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stackWait)))
	require.NoError(t, err, "waiting for the frame's load number %d", n)
}

// attachFrame attaches to the console's frame from origin: another site,
// so Chromium runs it in its own process, as its own target.
func attachFrame(t *testing.T, tab context.Context, origin string) context.Context {
	t.Helper()
	infos, err := chromedp.Targets(tab)
	require.NoError(t, err)
	for _, info := range infos {
		if info.Type == "iframe" && strings.HasPrefix(info.URL, origin+"/") {
			ctx, cancel := chromedp.NewContext(tab, chromedp.WithTargetID(info.TargetID))
			t.Cleanup(cancel)
			return ctx
		}
	}
	var seen []string
	for _, info := range infos {
		seen = append(seen, info.Type+" "+info.URL)
	}
	t.Fatalf("no frame from %s among the browser's targets: %v", origin, seen)
	return nil
}

// frameEval evaluates expr in the frame.
func frameEval[T any](t *testing.T, frame context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(frame, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluating %s", expr)
	return v
}

// framePoll waits until expr is true in the frame.
func framePoll(t *testing.T, frame context.Context, expr, what string) {
	t.Helper()
	_, err := chromedp.Run(frame, chromedp.Poll[bool](expr,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stackWait)))
	if err != nil {
		body, _ := chromedp.Run(frame, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText`))
		t.Fatalf("waiting for %s: %v; the frame shows %s", what, err, body)
	}
}

// consolePoll waits until the console has received the message
// {type: "aepforms:pending", pending: n} from origin, after the first
// from messages, and returns how many it had received up to that one.
func consolePoll(t *testing.T, tab context.Context, n int, origin string, from int) int {
	t.Helper()
	expr := fmt.Sprintf(`window.__messages.findIndex((m, i) => i >= %d && m.origin === %q && m.data &&
		m.data.type === 'aepforms:pending' && m.data.pending === %d) + 1`, from, origin, n)
	upTo, err := chromedp.Run(tab, chromedp.Poll[int](expr,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stackWait)))
	if err != nil {
		got, _ := chromedp.Run(tab, chromedp.Evaluate[[]byte](`window.__messages`))
		t.Fatalf("waiting for {type: 'aepforms:pending', pending: %d} from %s in the console after message %d: %v; it received %s", n, origin, from, err, got)
	}
	return upTo
}
