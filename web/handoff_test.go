package web

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/oidctest"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// The panel inside an embedding console's frame signs in with the
// identity provider through a window of its own (handoff.go). Over HTTP
// the frame and the window are two cookie jars, as they are two jars in
// a browser that partitions the frame's cookies by the console's site.

// panelConsole is the console that embeds the panel in these tests.
const panelConsole = "https://mc.example"

// panelHandoffMaxAge is the panel harness's --panel-signin-max-age.
const panelHandoffMaxAge = 3 * time.Minute

// panelHarness starts a UI served over TLS (its cookies are Secure) that
// panelConsole may frame, signing in at the in-process provider, where
// the group oncall makes an answerer; the harness clock is now, as the
// provider's is.
func panelHarness(t *testing.T, opts ...option) (*harness, *oidctest.Provider) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	public := "https://" + ln.Addr().String()
	o := oidctest.Start(t, public+"/auth/callback")
	h := newHarness(t, append([]option{func(s *setup) {
		s.cfg.OIDC = &OIDC{Issuer: o.Issuer, ClientID: oidctest.ClientID, ClientSecret: oidctest.ClientSecret, PublicURL: public,
			Roles: map[Role][]string{RoleAnswerer: {"oncall"}}}
		s.cfg.EmbedOrigins = []string{panelConsole}
		s.cfg.HandoffMaxAge, s.cfg.SignInWindowWait, s.cfg.SignInWindowPoll = panelHandoffMaxAge, 7*time.Second, 150*time.Millisecond
		s.listener = ln
		s.tls = true
	}}, opts...)...)
	h.clk.Add(time.Since(h.clk.Now()))
	return h, o
}

// scriptPost posts form to path as this UI's own script or page does,
// from its own origin.
func (h *harness) scriptPost(c *http.Client, path string, form url.Values, header ...string) response {
	h.t.Helper()
	hdr := append([]string{"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json",
		"Origin", h.srv.URL, "Sec-Fetch-Site", "same-origin"}, header...)
	return h.do(c, h.request(http.MethodPost, h.url(path), strings.NewReader(form.Encode()), hdr...))
}

// handoffAns reads a hand-off post's JSON answer.
func handoffAns(t *testing.T, r response) handoffAnswer {
	t.Helper()
	var a handoffAnswer
	require.NoError(t, json.Unmarshal([]byte(r.body), &a), "a hand-off's answer is JSON: %s", r.body)
	return a
}

// startHandoff starts a hand-off from the frame (its jar c), returning to
// next, and returns the window's ticket.
func (h *harness) startHandoff(c *http.Client, next string) string {
	h.t.Helper()
	path := "auth/handoff"
	if next != "" {
		path += "?" + url.Values{"next": {next}}.Encode()
	}
	r := h.scriptPost(c, path, nil)
	require.Equal(h.t, http.StatusOK, r.StatusCode, "start a hand-off: %s", r.body)
	a := handoffAns(h.t, r)
	require.Equal(h.t, "started", a.State)
	require.NotEmpty(h.t, a.Ticket)
	return a.Ticket
}

// redeem redeems the frame's hand-off (its jar c).
func (h *harness) redeem(c *http.Client) (response, handoffAnswer) {
	h.t.Helper()
	r := h.scriptPost(c, "auth/handoff/redeem", nil)
	if r.Header.Get("Content-Type") != "application/json" {
		return r, handoffAnswer{}
	}
	return r, handoffAns(h.t, r)
}

// windowSignIn signs user in at the provider in the window (its jar c,
// h.browser's) for the frame's ticket, and returns the callback's answer.
func (h *harness) windowSignIn(c *http.Client, ticket, user string) response {
	h.t.Helper()
	start := h.scriptPost(stay(c), "auth/popup", url.Values{"handoff": {ticket}})
	require.Equal(h.t, http.StatusSeeOther, start.StatusCode, "the window goes on to the provider: %s", start.body)
	to := start.Header.Get("Location")
	require.True(h.t, strings.HasPrefix(to, h.op()+"/"), "to the provider: %s", to)
	id, _, _ := strings.Cut(ticket, ".")
	assert.NotContains(h.t, to, id, "the hand-off is in no address")
	return h.callback(c, oidctest.Login(h.t, c, to, user))
}

// op is the provider's address, from the configuration.
func (h *harness) op() string { return h.cfg.OIDC.Issuer }

// cookieOf is the response's cookie name, nil when it sets none.
func cookieOf(r response, name string) *http.Cookie {
	for _, c := range r.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Inside the console's frame, the sign-in page offers a sign-in in a
// window of its own (no link that would take the frame to the provider,
// which refuses to be framed), in the panel's theme, and says without
// JavaScript how to sign in: in the panel's own tab. Top-level, it links
// to the provider as before; and the provider's start asked for inside
// the frame comes back to the frame's sign-in page.
func TestPanelSignInPageInAFrame(t *testing.T) {
	t.Parallel()
	h, _ := panelHarness(t)
	next := url.Values{"next": {"panel?agent=deployer&theme=dark"}}.Encode()
	framed := h.getPage(h.client(), "signin?"+next, "Sec-Fetch-Dest", "iframe")
	require.Equal(t, http.StatusOK, framed.StatusCode)
	d := framed.doc(t)
	win := d.Find(`[data-testid="signin-window"]`)
	require.Equal(t, 1, win.Length(), "the framed sign-in signs in through a window")
	assert.Equal(t, "/auth/handoff?"+next, win.AttrOr("data-handoff", ""), "the hand-off returns to the panel as asked for")
	assert.Equal(t, "/auth/popup", win.AttrOr("data-popup", ""))
	assert.Equal(t, "/auth/handoff/redeem", win.AttrOr("data-redeem", ""))
	assert.Equal(t, "150", win.AttrOr("data-poll-ms", ""), "the frame looks whether its window closed as often as configured")
	assert.Contains(t, win.Find(`[data-when="expired"]`).Text(), "took more than 3 min", "the hand-off's time as configured")
	_, hidden := win.Attr("hidden")
	assert.True(t, hidden, "without JavaScript the window's button is not offered")
	assert.Contains(t, win.Find(`[data-testid="signin-popup"]`).Text(), "Sign in with localhost:")
	assert.Zero(t, d.Find(`a[data-testid="signin-provider"]`).Length(), "no link takes the frame to the provider")
	noscript := d.Find("noscript").Text()
	assert.Contains(t, noscript, "needs JavaScript")
	assert.Contains(t, noscript, `href="/panel?agent=deployer&amp;theme=dark" target="_blank"`, "without JavaScript: the panel in its own tab")
	assert.Equal(t, "dark", d.Find("html").AttrOr("data-theme", ""), "the panel's theme")
	assert.Equal(t, 1, d.Find(`script[src^="/static/signin.js?v="]`).Length(), "the window's script, from a file")

	top := h.getPage(h.client(), "signin?"+next, "Sec-Fetch-Dest", "document").doc(t)
	assert.Zero(t, top.Find(`[data-testid="signin-window"]`).Length(), "top-level: no window")
	assert.Equal(t, "/auth/login?"+next, top.Find(`a[data-testid="signin-provider"]`).AttrOr("href", ""))

	start := h.getPage(h.client(), "auth/login?"+next, "Sec-Fetch-Dest", "iframe")
	require.Equal(t, http.StatusSeeOther, start.StatusCode)
	assert.Equal(t, "/signin?"+next, start.Header.Get("Location"), "inside the frame, the provider's start goes to the frame's sign-in")
}

// The frame starts a hand-off, the window it opens signs in at the
// provider and says who signed in, without being signed in itself; the
// frame redeems the hand-off and holds a session of its own, partitioned
// as the frame's cookies are: the panel names the operator.
func TestPanelSignsInThroughAWindow(t *testing.T) {
	t.Parallel()
	h, _ := panelHarness(t)
	frame, window := h.client(), h.browser()

	ticket := h.startHandoff(frame, "panel?theme=dark")
	hc := cookieOf(h.scriptPost(h.client(), "auth/handoff", nil), handoffCookie)
	require.NotNil(t, hc, "a hand-off cookie")
	assert.True(t, hc.Partitioned && hc.Secure && hc.HttpOnly && hc.SameSite == http.SameSiteNoneMode,
		"the hand-off cookie is the frame's: Partitioned, Secure, HttpOnly, SameSite=None (%+v)", hc)
	assert.Equal(t, "/auth/handoff", hc.Path)
	assert.Equal(t, int(panelHandoffMaxAge/time.Second), hc.MaxAge)

	r, a := h.redeem(frame)
	assert.Equal(t, http.StatusAccepted, r.StatusCode, "before the window signed in")
	assert.Equal(t, "pending", a.State)
	assert.Nil(t, sessionCookie(r.Response))

	page := h.getPage(window, "auth/popup")
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Equal(t, "7000", page.doc(t).Find(`[data-testid="signin-popup-window"]`).AttrOr("data-wait-ms", ""), "the window waits for its panel as long as configured")
	assert.Equal(t, 1, page.doc(t).Find(`[data-testid="signin-popup-window"] form[method="post"][action="/auth/popup"]`).Length())
	assert.Contains(t, page.Header.Get("Content-Security-Policy"), "form-action 'self' "+h.op()+";",
		"the window's form, sent on to the provider, may go there")

	done := h.windowSignIn(window, ticket, "ann")
	require.Equal(t, http.StatusOK, done.StatusCode, "the window's callback: %s", done.body)
	dd := done.doc(t)
	assert.Equal(t, "ann", dd.Find(`[data-testid="signin-popup-done"] [data-testid="operator"]`).Text(), "the window says who signed in")
	assert.Contains(t, dd.Find(`[data-testid="signin-popup-done"]`).Text(), "(answerer)")
	assert.Nil(t, sessionCookie(done.Response), "the window itself is not signed in")
	assert.Equal(t, http.StatusSeeOther, h.getPage(window, "panel").StatusCode, "the window's own panel: still signed out")

	r, a = h.redeem(frame)
	require.Equal(t, http.StatusOK, r.StatusCode, "redeem: %s", r.body)
	assert.Equal(t, "signed-in", a.State)
	assert.Equal(t, "/panel?theme=dark", a.Next, "back to the panel as it was asked for")
	ck := sessionCookie(r.Response)
	require.NotNil(t, ck, "the frame's own session")
	assert.True(t, ck.Partitioned && ck.SameSite == http.SameSiteNoneMode, "partitioned, as the frame's session cookie is")
	cleared := cookieOf(r, handoffCookie)
	require.NotNil(t, cleared)
	assert.Equal(t, -1, cleared.MaxAge, "the hand-off cookie is cleared")

	panel := h.getPage(frame, "panel?theme=dark")
	require.Equal(t, http.StatusOK, panel.StatusCode)
	assert.Equal(t, "ann", panel.doc(t).Find(`[data-testid="operator"]`).Text(), "the frame's panel names the operator")
}

// A hand-off is redeemed once: its cookie sent again (a copy kept, a
// replayed request) opens no second session, and the session the window
// opened for it is gone.
func TestPanelHandoffIsRedeemedOnce(t *testing.T) {
	t.Parallel()
	h, _ := panelHarness(t)
	frame, window := h.client(), h.browser()
	ticket := h.startHandoff(frame, "panel")
	u, err := url.Parse(h.url("auth/handoff/redeem"))
	require.NoError(t, err)
	var kept *http.Cookie
	for _, c := range frame.Jar.Cookies(u) {
		if c.Name == handoffCookie {
			kept = c
		}
	}
	require.NotNil(t, kept, "the frame holds its hand-off cookie")
	require.Equal(t, http.StatusOK, h.windowSignIn(window, ticket, "ann").StatusCode)
	r, a := h.redeem(frame)
	require.Equal(t, "signed-in", a.State, "the first redeeming: %s", r.body)

	again := h.scriptPost(h.client(), "auth/handoff/redeem", nil, "Cookie", handoffCookie+"="+kept.Value)
	assert.Equal(t, http.StatusAccepted, again.StatusCode, "the same hand-off again: %s", again.body)
	assert.Equal(t, "pending", handoffAns(t, again).State)
	assert.Nil(t, sessionCookie(again.Response), "no second session")
}

// A hand-off lasts panelHandoffMaxAge: redeemed later, it opens no session
// (410) and its cookie is cleared; a window whose ticket is past its time
// is not taken to the provider.
func TestPanelHandoffExpires(t *testing.T) {
	t.Parallel()
	h, _ := panelHarness(t)
	frame, window := h.client(), h.browser()
	ticket := h.startHandoff(frame, "panel")
	require.Equal(t, http.StatusOK, h.windowSignIn(window, ticket, "ann").StatusCode)
	h.clk.Add(panelHandoffMaxAge + time.Second)
	r, a := h.redeem(frame)
	assert.Equal(t, http.StatusGone, r.StatusCode, "redeemed too late: %s", r.body)
	assert.Equal(t, "expired", a.State)
	assert.Nil(t, sessionCookie(r.Response), "no session")
	if c := cookieOf(r, handoffCookie); assert.NotNil(t, c) {
		assert.Equal(t, -1, c.MaxAge, "the ended hand-off's cookie is cleared")
	}

	late := h.startHandoff(frame, "panel")
	h.clk.Add(panelHandoffMaxAge + time.Second)
	start := h.scriptPost(stay(window), "auth/popup", url.Values{"handoff": {late}})
	assert.Equal(t, http.StatusBadRequest, start.StatusCode, "a window with an ended ticket")
	assert.Contains(t, start.doc(t).Find(`[data-testid="error-summary"]`).Text(), "has ended")
	assert.Empty(t, start.Header.Get("Location"), "not taken to the provider")
}

// Only the browser that started a hand-off redeems it: another browser
// gets nothing for it, with no hand-off of its own, with its own, or with
// a hand-off cookie it made up from the hand-off's id.
func TestPanelHandoffOnlyForTheBrowserThatStartedIt(t *testing.T) {
	t.Parallel()
	h, _ := panelHarness(t)
	frame, window, other := h.client(), h.browser(), h.client()
	ticket := h.startHandoff(frame, "panel")
	require.Equal(t, http.StatusOK, h.windowSignIn(window, ticket, "ann").StatusCode)

	r, a := h.redeem(other)
	assert.Equal(t, http.StatusBadRequest, r.StatusCode, "no hand-off of its own")
	assert.Equal(t, "none", a.State)
	assert.Nil(t, sessionCookie(r.Response))

	h.startHandoff(other, "panel")
	r, a = h.redeem(other)
	assert.Equal(t, "pending", a.State, "its own hand-off, which no window signed in")
	assert.Nil(t, sessionCookie(r.Response))

	id, _, _ := strings.Cut(ticket, ".")
	made := h.scriptPost(h.client(), "auth/handoff/redeem", nil, "Cookie", handoffCookie+"="+id)
	assert.Equal(t, http.StatusBadRequest, made.StatusCode, "a made-up hand-off cookie")
	assert.Nil(t, sessionCookie(made.Response))

	r, a = h.redeem(frame)
	assert.Equal(t, "signed-in", a.State, "the browser that started it: %s", r.body)
}

// An attacker who starts a hand-off and gets someone else to sign in for
// it would receive their session. A ticket is taken only from this UI's
// own pages: the window opened by a link takes nothing from its address,
// and a post of the ticket from another site, the embedding console (which
// may post answers) included, is refused; the attacker's hand-off stays
// unsigned. Cross-site starts and redeemings are refused too.
func TestPanelHandoffTicketSentToAnotherSignsNoOneIn(t *testing.T) {
	t.Parallel()
	h, _ := panelHarness(t)
	attacker, victim := h.client(), h.browser()
	ticket := h.startHandoff(attacker, "panel")

	link := h.getPage(victim, "auth/popup?"+url.Values{"handoff": {ticket}}.Encode())
	require.Equal(t, http.StatusOK, link.StatusCode)
	assert.NotContains(t, link.body, ticket, "the window opened by a link carries no ticket from its address")
	assert.Equal(t, "", link.doc(t).Find(`input[name="handoff"]`).AttrOr("value", "x"), "its form holds none")

	for _, from := range []struct{ name, origin, site string }{
		{"another site", "https://attacker.example", "cross-site"},
		{"the embedding console", panelConsole, "cross-site"},
		{"a sibling site", "https://other.127.0.0.1", "same-site"},
	} {
		r := h.scriptPost(stay(victim), "auth/popup", url.Values{"handoff": {ticket}}, "Origin", from.origin, "Sec-Fetch-Site", from.site)
		assert.Equal(t, http.StatusForbidden, r.StatusCode, "the ticket posted from %s", from.name)
		assert.Empty(t, r.Header.Get("Location"), "from %s: not taken to the provider", from.name)
	}
	bare := h.do(stay(victim), h.request(http.MethodPost, h.url("auth/popup"), strings.NewReader(url.Values{"handoff": {ticket}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded"))
	assert.Equal(t, http.StatusForbidden, bare.StatusCode, "a post that names no origin")

	r, a := h.redeem(attacker)
	assert.Equal(t, "pending", a.State, "the attacker's hand-off: no one signed in for it")
	assert.Nil(t, sessionCookie(r.Response))

	for _, path := range []string{"auth/handoff", "auth/handoff/redeem"} {
		r := h.scriptPost(attacker, path, nil, "Origin", panelConsole, "Sec-Fetch-Site", "cross-site")
		assert.Equal(t, http.StatusForbidden, r.StatusCode, "%s posted from the console's page", path)
	}
}

// A window whose hand-off ends while its operator is at the provider
// opens no session for it: the window says the sign-in took too long,
// and the frame's hand-off stays unsigned.
func TestPanelHandoffEndsWhileAtTheProvider(t *testing.T) {
	t.Parallel()
	h, _ := panelHarness(t)
	frame, window := h.client(), h.browser()
	ticket := h.startHandoff(frame, "panel")
	h.clk.Add(panelHandoffMaxAge - time.Second)
	start := h.scriptPost(stay(window), "auth/popup", url.Values{"handoff": {ticket}})
	require.Equal(t, http.StatusSeeOther, start.StatusCode, "the ticket is still good: %s", start.body)
	back := oidctest.Login(t, window, start.Header.Get("Location"), "ann")
	h.clk.Add(2 * time.Second)
	done := h.callback(window, back)
	assert.Equal(t, http.StatusBadRequest, done.StatusCode, "the callback past the hand-off's time: %s", done.body)
	assert.Contains(t, done.doc(t).Find(`[data-testid="error-summary"]`).Text(), "took more than 3 min", "the hand-off's time as configured")
	assert.Nil(t, sessionCookie(done.Response))
	r, a := h.redeem(frame)
	assert.Equal(t, "expired", a.State, "the frame's hand-off has ended: %s", r.body)
	assert.Nil(t, sessionCookie(r.Response))
}

// The session a window opens for a frame that never redeems it (the
// console closed, the operator gone) lasts panelHandoffMaxAge, not a session's
// idle expiry: after it, the next sign-in's clean-up ends it.
func TestPanelUnredeemedHandoffSessionEnds(t *testing.T) {
	t.Parallel()
	sessions := newMemorySessions()
	h, _ := panelHarness(t, withSessions(sessions))
	ticket := h.startHandoff(h.client(), "panel")
	require.Equal(t, http.StatusOK, h.windowSignIn(h.browser(), ticket, "ann").StatusCode)
	id, _, _ := strings.Cut(ticket, ".")
	_, ok, err := sessions.LookupSession(context.Background(), id)
	require.NoError(t, err)
	require.True(t, ok, "the window opened the frame's session")

	h.clk.Add(panelHandoffMaxAge + time.Second)
	h.signInAtOP(h.browser(), "ada")
	_, ok, err = sessions.LookupSession(context.Background(), id)
	require.NoError(t, err)
	assert.False(t, ok, "the unredeemed hand-off's session is gone %v after it was opened", panelHandoffMaxAge)
}

// A hand-off is redeemed once even when its redeemings race (a double
// click, two polls in flight, a replayed request beside the frame's own):
// of many posts of one hand-off cookie at once, exactly one is given a
// session, the others are told it is pending, and the store holds one
// session of the operator's; in memory and in the journal alike.
func TestPanelHandoffConcurrentRedeemsOpenOneSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) Sessions
	}{
		{"in memory", func(*testing.T) Sessions { return newMemorySessions() }},
		{"in the journal", func(t *testing.T) Sessions {
			j, err := sqlite.Open(filepath.Join(t.TempDir(), "aepforms.db"), sqlite.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = j.Close() })
			return j
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sessions := tc.store(t)
			h, _ := panelHarness(t, withSessions(sessions))
			frame, window := h.client(), h.browser()
			ticket := h.startHandoff(frame, "panel")
			require.Equal(t, http.StatusOK, h.windowSignIn(window, ticket, "ann").StatusCode)
			signedIn, pending := h.redeemAtOnce(frame, 16)
			assert.Equal(t, 1, signedIn, "redeemings given a session: got %d, want exactly 1", signedIn)
			assert.Equal(t, 15, pending, "the others are told the hand-off is pending")
			n, err := sessions.DeleteOtherSessions(context.Background(), "ann", "")
			require.NoError(t, err)
			assert.Equal(t, 1, n, "ann's sessions in the store")
		})
	}
}

// redeemAtOnce posts the frame's (jar c) hand-off cookie to be redeemed
// posts times at once, and counts the answers: 200 with a session, and
// 202 pending without one. Any other answer fails the test.
func (h *harness) redeemAtOnce(c *http.Client, posts int) (signedIn, pending int) {
	t := h.t
	t.Helper()
	u, err := url.Parse(h.url("auth/handoff/redeem"))
	require.NoError(t, err)
	var kept *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == handoffCookie {
			kept = ck
		}
	}
	require.NotNil(t, kept, "the frame holds its hand-off cookie")
	type result struct {
		status  int
		session bool
		err     error
	}
	results := make(chan result, posts)
	start := make(chan struct{})
	for range posts {
		req := h.request(http.MethodPost, u.String(), nil, "Accept", "application/json", "Origin", h.srv.URL,
			"Sec-Fetch-Site", "same-origin", "Cookie", handoffCookie+"="+kept.Value)
		one := h.client()
		go func() {
			<-start
			resp, err := one.Do(req)
			if err != nil {
				results <- result{err: err}
				return
			}
			_ = resp.Body.Close()
			results <- result{status: resp.StatusCode, session: sessionCookie(resp) != nil}
		}()
	}
	close(start)
	for range posts {
		r := <-results
		require.NoError(t, r.err)
		switch {
		case r.status == http.StatusOK && r.session:
			signedIn++
		case r.status == http.StatusAccepted && !r.session:
			pending++
		default:
			t.Errorf("a redeeming answered %d (session cookie: %v); want 200 with a session, or 202 without", r.status, r.session)
		}
	}
	return signedIn, pending
}
