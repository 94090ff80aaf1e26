package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/oidctest"
	"github.com/aepforms/aepforms/internal/render/form"
)

// oidcStack is a relay and a UI signing operators in at an identity
// provider running in this process (internal/oidctest), its roles
// mapped from the provider's groups: ada is an admin, ann an answerer,
// vera (an auditor) a viewer.
type oidcStack struct {
	*stack
	provider *oidctest.Provider
	host     string // the UI's host:port
}

// startOIDCStack starts the provider, a relay and serve with
// --oidc-issuer on a port taken first: the provider registers the UI's
// callback before the UI starts, and the UI reads the provider's
// discovery document as it starts. args come after the OIDC flags.
func startOIDCStack(t *testing.T, args ...string) *oidcStack {
	t.Helper()
	return startOIDCStackEnv(t, nil, args...)
}

// startOIDCStackEnv is startOIDCStack with env added to the UI's
// environment.
func startOIDCStackEnv(t *testing.T, env map[string]string, args ...string) *oidcStack {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	host := ln.Addr().String()
	require.NoError(t, ln.Close())
	public := "http://" + host
	o := oidctest.Start(t, public+"/auth/callback")
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(oidctest.ClientSecret+"\n"), 0o600))

	s := &stack{token: "e2e-oidc-" + fmt.Sprint(time.Now().UnixNano()), relayEnv: map[string]string{}}
	s.relayEnv["AEP_TOKEN"] = s.token
	s.relayURL, _, s.stopRelay = runApp(t, "relay", []string{"relay", "--port", "0"}, s.relayEnv, relayReady)
	argv := append([]string{"serve", "--relay", s.relayURL, "--addr", host, "--ack-window", stackAckWindow,
		"--public-url", public, "--oidc-issuer", o.Issuer, "--oidc-client-id", oidctest.ClientID,
		"--oidc-client-secret-file", secretFile,
		"--oidc-role", "admin=aepforms-admins", "--oidc-role", "answerer=oncall"}, args...)
	uiEnv := map[string]string{"AEP_TOKEN": s.token, "HOME": t.TempDir()}
	for k, v := range env {
		uiEnv[k] = v
	}
	s.uiURL, s.ctx, _ = runApp(t, "ui", argv, uiEnv, uiReady)
	s.origin = originOf(t, s.uiURL)
	return &oidcStack{stack: s, provider: o, host: host}
}

// signInAtOP signs user in as a browser does, through the code flow:
// the UI's sign-in start sends it to the provider, whose login form it
// fills, and the provider back to the UI's callback, which opens the
// session. It returns a copy of the stack whose requests carry that
// session's cookie. quick, when set, bounds each of the UI's answers.
func (o *oidcStack) signInAtOP(t *testing.T, user string, quick time.Duration) *stack {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: stackWait, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host == o.host {
			return http.ErrUseLastResponse // the UI's answers are read here
		}
		return nil
	}}
	ui := *c // the UI's own answers, each read here
	ui.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if quick > 0 {
		ui.Timeout = quick
	}
	start, err := ui.Get(o.uiURL + "auth/login")
	require.NoError(t, err, "the UI's sign-in start")
	start.Body.Close()
	require.Equal(t, http.StatusSeeOther, start.StatusCode, "the sign-in start sends the browser to the provider")
	back := oidctest.Login(t, c, start.Header.Get("Location"), user)
	require.True(t, strings.HasPrefix(back, o.uiURL+"auth/callback?"), "back to the UI's callback: %s", back)
	done, err := ui.Get(back)
	require.NoError(t, err, "the UI's callback")
	done.Body.Close()
	require.Equal(t, http.StatusSeeOther, done.StatusCode, "the callback opens a session")
	var cookies []string
	for _, ck := range done.Cookies() {
		cookies = append(cookies, ck.Name+"="+ck.Value)
	}
	require.NotEmpty(t, cookies, "the callback sets the session cookie")
	signed := *o.stack
	signed.cookie = strings.Join(cookies, "; ")
	return &signed
}

// postEmpty posts an empty form to path as a browser on the UI's page
// does, and returns the status.
func (s *stack) postEmpty(t *testing.T, path string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.resolve(t, nil, path).String(), strings.NewReader(""))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Accept", "text/html")
	return s.do(t, req).status
}

// signedOutWithin reads the stream until the server ends it, at most
// limit: its one message is reload, "signed out".
func (p *pushStream) signedOutWithin(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	var said []string
	for _, it := range p.pending {
		if !it.IsComment && it.Event != "status" {
			said = append(said, it.Event+" "+it.Data)
		}
	}
	p.pending = nil
	for {
		select {
		case it, ok := <-p.items:
			if !ok {
				assert.Equal(t, []string{"reload signed out"}, said, "what the stream said before it ended")
				return
			}
			if !it.IsComment {
				said = append(said, it.Event+" "+it.Data)
			}
		case <-deadline:
			t.Fatalf("the stream of a signed-out session still runs %v later (it said %q)", limit, said)
		}
	}
}

// The "Done when" of sign-in with roles, through the real relay and the
// demo agent: three users sign in at the provider, their roles from
// their groups. The viewer's page offers no form and their hand-made
// answer is refused 403 and sends nothing; the answerer's answer reaches
// the agent once, History naming them as the provider does; only the
// admin makes a rule, and the answerer may pause it; sign-out revokes
// the session (its cookie meets the sign-in page) and ends its push
// stream within a second.
func TestRolesFromTheProviderEndToEnd(t *testing.T) {
	t.Parallel()
	o := startOIDCStack(t)
	vera, ann, ada := o.signInAtOP(t, "vera", 0), o.signInAtOP(t, "ann", 0), o.signInAtOP(t, "ada", 0)
	for s, want := range map[*stack]string{vera: "(viewer)", ann: "(answerer)", ada: "(admin)"} {
		p := s.getPage(t, "")
		require.Equal(t, http.StatusOK, p.status, "%s", p.body)
		assert.Equal(t, want, p.doc.Find(`[data-testid="role"]`).Text(), "the header says the role")
	}
	ag, sessions := ann.askAll(t, agent.ScenarioPermission, agent.ScenarioPermission)
	first, second := sessions[0], sessions[1]

	// The viewer: no form, and ann's form posted by hand is refused.
	_, _, f := ann.openForm(t, first)
	viewed := vera.getPage(t, "?session="+url.QueryEscape(first)).cardOf(t, first)
	assert.Zero(t, viewed.Find(`form[data-testid="answer-form"], [data-testid="option"]`).Length(), "the viewer is offered no answer")
	assert.Contains(t, viewed.Text(), "Your role here is viewer")
	allow := f.button(t, "Allow once")
	refused := vera.submit(t, f, allow, "")
	assert.Equal(t, http.StatusForbidden, refused.status, "the viewer's hand-made answer: %s", refused.body)

	// The answerer: offered no rule, and a rule added to the answer by
	// hand is refused; the answer alone reaches the agent once.
	assert.Zero(t, ann.getPage(t, "").cardOf(t, first).Find(`[data-testid="rule-maker"]`).Length(), "an answerer is offered no rule")
	withRule := *f
	withRule.controls = append(slices.Clone(f.controls), &formControl{tag: "input", typ: "checkbox", name: form.NameRule, value: "on", checked: true})
	assert.Equal(t, http.StatusForbidden, ann.submit(t, &withRule, allow, "").status, "an answerer makes no rule")
	got := ann.sendAndAccept(t, ag, first, f, allow)
	assert.Equal(t, 1, got.Count, "sent once")
	assert.Len(t, commandsTo(ag, first), 1, "the viewer's and the refused rule's posts sent nothing")
	hist := ada.getPage(t, "history")
	require.Equal(t, http.StatusOK, hist.status)
	assert.Contains(t, hist.doc.Find(`[data-testid="history-operator"]`).Text(), "ann", "History names the answerer as the provider does")

	// The admin makes a rule; the answerer pauses it, the viewer cannot.
	ada.makeRuleFromCard(t, ag, second)
	rows := ann.rulesPage(t)
	require.Equal(t, 1, rows.Length(), "the admin's rule is listed")
	assert.Contains(t, rows.Find(`[data-testid="rule-maker"]`).Text(), "ada")
	pause, ok := rows.Find(`[data-testid="rule-pause"]`).Closest("form").Attr("action")
	require.True(t, ok, "the answerer is offered pause")
	assert.Zero(t, rows.Find(`[data-testid="rule-resume"], [data-testid="rule-delete"]`).Length(), "the answerer is offered no resume or delete")
	assert.Zero(t, vera.rulesPage(t).Find(`[data-testid="rule-pause"]`).Length(), "the viewer is offered no pause")
	assert.Equal(t, http.StatusForbidden, vera.postEmpty(t, pause), "a viewer pauses nothing")
	ann.postRuleButton(t, rows, "rule-pause")
	paused := ada.rulesPage(t)
	assert.Equal(t, "paused", paused.AttrOr("data-state", ""))
	assert.Contains(t, paused.Find(`[data-testid="rule-change"]`).First().Text(), "Paused by ann", "the Rules page says who paused it")

	// Sign-out: the open stream ends within a second, the cookie meets
	// the sign-in page.
	ps := ann.openPush(t, "", "", false)
	assert.Equal(t, http.StatusSeeOther, ann.postEmpty(t, "signout"))
	ps.signedOutWithin(t, time.Second)
	old := ann.getPage(t, "")
	assert.Equal(t, http.StatusSeeOther, old.status)
	assert.True(t, strings.HasSuffix(old.header.Get("Location"), "signin"), "the old cookie meets the sign-in page: %s", old.header.Get("Location"))
}

// The attack run, signed in at the provider: 500 push streams from one
// session, on a UI capped at 500 connections. The session holds
// --max-streams-per-session (8) of them, the rest are refused 429 (or,
// at the cap, shed before their request is read: the crowd is the cap,
// and the harness holds connections of its own, so on a loaded machine
// the cap makes room by closing the connections that waited longest for
// a request), and /healthz and another operator's sign-in (each of the
// UI's answers of its code flow) are answered within a second.
func TestStreamsOfOneProviderSessionLeaveRoom(t *testing.T) {
	t.Parallel()
	const crowd = 500
	o := startOIDCStack(t, "--max-conns", fmt.Sprint(crowd))
	ann := o.signInAtOP(t, "ann", 0)

	const shed = -1 // closed with no answer
	status := make(map[int]int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range crowd {
		conn, err := net.Dial("tcp", o.host)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		wg.Go(func() {
			_ = conn.SetDeadline(time.Now().Add(stackWait))
			_, err := fmt.Fprintf(conn, "GET /push HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nCookie: %s\r\n\r\n", o.host, ann.cookie)
			code := shed
			if err == nil {
				if r, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
					code = r.StatusCode
				}
			}
			mu.Lock()
			status[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Equal(t, 8, status[http.StatusOK], "the session's streams: 8 served (%v)", status)
	assert.Equal(t, crowd-8, status[http.StatusTooManyRequests]+status[shed], "the rest refused, or shed at the cap before their request was read (%v)", status)
	assert.Greater(t, status[http.StatusTooManyRequests], crowd/2, "most refused 429 (%v)", status)

	quick := &http.Client{Timeout: time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.uiURL+"healthz", nil)
	require.NoError(t, err)
	h, err := quick.Do(req)
	require.NoError(t, err, "/healthz within a second")
	h.Body.Close()
	assert.Equal(t, http.StatusOK, h.StatusCode)
	ada := o.signInAtOP(t, "ada", time.Second)
	p := ada.getPage(t, "")
	assert.Equal(t, "(admin)", p.doc.Find(`[data-testid="role"]`).Text(), "another operator signed in")
}
