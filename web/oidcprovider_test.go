package web

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/oidctest"
)

// The identity provider of the OIDC tests is ZITADEL's example OP, run
// in-process on loopback by internal/oidctest: its login form, its code
// flow with PKCE, its signed ID tokens, each user's groups claim, and for
// the negative cases what a broken or hostile provider would issue.

// withOP makes the harness sign in at the provider: it is served on a
// listener taken first, so its public URL is the redirect the provider
// registers.
func withOP(t *testing.T, configure func(*OIDC)) (option, func() *oidctest.Provider) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	public := "http://" + ln.Addr().String()
	o := oidctest.Start(t, public+"/auth/callback")
	return func(s *setup) {
		cfg := &OIDC{Issuer: o.Issuer, ClientID: oidctest.ClientID, ClientSecret: oidctest.ClientSecret, PublicURL: public}
		if configure != nil {
			configure(cfg)
		}
		s.cfg.OIDC = cfg
		s.listener = ln
	}, func() *oidctest.Provider { return o }
}

// browser is a browser's cookie jar and HTTP client for the OIDC flow:
// it follows the provider's redirects and stops at any answer of the UI.
func (h *harness) browser() *http.Client {
	c := h.client()
	ui := h.srv.Listener.Addr().String()
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host == ui {
			return http.ErrUseLastResponse
		}
		return nil
	}
	return c
}

// loginAtOP starts a sign-in from the UI with c and signs in at the
// provider's login form as user; it returns the callback URL the
// provider sends the browser back to (not yet visited).
func (h *harness) loginAtOP(c *http.Client, user string) string {
	h.t.Helper()
	return h.loginAtOPFrom(c, "auth/login", user)
}

// loginAtOPFrom is loginAtOP from the start address start (relative to
// the base path).
func (h *harness) loginAtOPFrom(c *http.Client, start, user string) string {
	h.t.Helper()
	r := h.startAt(c, start)
	require.Equal(h.t, http.StatusSeeOther, r.StatusCode, "sign-in start: %s", r.body)
	back := oidctest.Login(h.t, c, r.Header.Get("Location"), user)
	require.True(h.t, strings.HasPrefix(back, h.url("auth/callback?")), "back to the callback: %s", back)
	return back
}

// startAt asks the UI to start a sign-in at start (relative to the base
// path), with c's cookies, and does not follow the answer.
func (h *harness) startAt(c *http.Client, start string) response {
	h.t.Helper()
	return h.do(stay(c), h.request(http.MethodGet, h.url(start), nil, "Accept", "text/html"))
}

// stay is c (its cookies) following no redirect.
func stay(c *http.Client) *http.Client {
	here := *c
	here.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &here
}

// callback visits the provider's callback URL with c.
func (h *harness) callback(c *http.Client, back string) response {
	h.t.Helper()
	return h.do(c, h.request(http.MethodGet, back, nil, "Accept", "text/html"))
}

// signInAtOP signs user in through the provider and returns the
// session cookie.
func (h *harness) signInAtOP(c *http.Client, user string) *http.Cookie {
	h.t.Helper()
	r := h.callback(c, h.loginAtOP(c, user))
	require.Equal(h.t, http.StatusSeeOther, r.StatusCode, "callback: %s", r.body)
	ck := sessionCookie(r.Response)
	require.NotNil(h.t, ck, "a sign-in at the provider opens a session")
	return ck
}
