package web

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/oidctest"
)

// oidcHarness is a UI signing in at a provider of its own, its clock at
// the real time (the provider stamps its tokens with it).
func oidcHarness(t *testing.T, configure func(*OIDC), opts ...option) (*harness, *oidctest.Provider) {
	t.Helper()
	opt, provider := withOP(t, configure)
	h := newHarness(t, append([]option{opt}, opts...)...)
	h.clk.Add(time.Since(h.clk.Now()))
	return h, provider()
}

// The sign-in page offers the provider, and a sign-in through its login
// form opens a session under the name the provider gives
// (preferred_username): the inbox is shown, the header names the operator.
func TestOIDCSignInOpensASession(t *testing.T) {
	t.Parallel()
	h, _ := oidcHarness(t, nil)
	page := h.getPage(nil, "signin")
	require.Equal(t, http.StatusOK, page.StatusCode)
	link := page.doc(t).Find(`[data-testid="signin-provider"]`)
	require.Equal(t, 1, link.Length(), "the page offers the provider")
	assert.Contains(t, link.Text(), "Sign in with localhost:")
	assert.Zero(t, page.doc(t).Find(`[data-testid="signin-form"]`).Length(), "no secret to type")

	c := h.browser()
	ck := h.signInAtOP(c, "ann")
	assert.True(t, ck.HttpOnly)
	inbox := h.getPage(c, "")
	require.Equal(t, http.StatusOK, inbox.StatusCode)
	assert.Contains(t, inbox.doc(t).Find(`[data-testid="header"]`).Text(), "ann")
}

// A sign-in returns to the page it was asked from.
func TestOIDCSignInReturnsToNext(t *testing.T) {
	t.Parallel()
	h, _ := oidcHarness(t, nil)
	c := h.browser()
	r := h.callback(c, h.loginAtOPFrom(c, "auth/login?next=history", "ann"))
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.body)
	assert.Equal(t, "/history", r.Header.Get("Location"))
}

// refused asserts a callback opened no session and said why, in a page.
func refused(t *testing.T, r response, status int, words string) {
	t.Helper()
	assert.Equal(t, status, r.StatusCode, "body: %.300s", r.body)
	assert.Nil(t, sessionCookie(r.Response), "no session")
	assert.Contains(t, r.doc(t).Find(`[data-testid="error-summary"]`).Text(), words)
}

// An ID token past its expiry signs no one in.
func TestOIDCRefusesAnExpiredIDToken(t *testing.T) {
	t.Parallel()
	h, _ := oidcHarness(t, nil)
	// The provider's ID tokens last an hour: to the UI, whose clock runs
	// 61 minutes ahead of the provider's, each is expired when issued
	// (and the sign-in under way is not: it began on the UI's clock).
	h.clk.Add(61 * time.Minute)
	c := h.browser()
	refused(t, h.callback(c, h.loginAtOP(c, "ann")), http.StatusUnauthorized, "did not hold up")
}

// An ID token for another client (audience) signs no one in.
func TestOIDCRefusesAnotherAudience(t *testing.T) {
	t.Parallel()
	h, o := oidcHarness(t, nil)
	o.IssueAudience([]string{"another-client"})
	c := h.browser()
	refused(t, h.callback(c, h.loginAtOP(c, "ann")), http.StatusUnauthorized, "did not hold up")
}

// An ID token signed by a key the provider does not publish signs no one
// in.
func TestOIDCRefusesATokenSignedByAnotherKey(t *testing.T) {
	t.Parallel()
	h, o := oidcHarness(t, nil)
	o.SignWith(oidctest.NewRSAKey(t))
	c := h.browser()
	refused(t, h.callback(c, h.loginAtOP(c, "ann")), http.StatusUnauthorized, "did not hold up")
}

// An ID token whose nonce is not the one this sign-in sent signs no one
// in (a token of another sign-in, replayed into this one).
func TestOIDCRefusesANonceMismatch(t *testing.T) {
	t.Parallel()
	h, o := oidcHarness(t, nil)
	o.IssueNonce("another-sign-ins-nonce")
	c := h.browser()
	refused(t, h.callback(c, h.loginAtOP(c, "ann")), http.StatusUnauthorized, "did not hold up")
}

// A callback whose state is not this browser's sign-in's (a forged
// link, or one of another browser) signs no one in, and the code is not
// even exchanged.
func TestOIDCRefusesAStateMismatch(t *testing.T) {
	t.Parallel()
	h, _ := oidcHarness(t, nil)
	c := h.browser()
	back, err := url.Parse(h.loginAtOP(c, "ann"))
	require.NoError(t, err)
	q := back.Query()
	q.Set("state", "forged")
	back.RawQuery = q.Encode()
	refused(t, h.callback(c, back.String()), http.StatusBadRequest, "did not start in this browser")

	// Another browser, with no sign-in under way, given the real link.
	c2 := h.browser()
	q.Set("state", "")
	refused(t, h.callback(c2, h.loginAtOP(c, "ann")), http.StatusBadRequest, "did not start in this browser")
}

// A code used once does not sign in again: replayed in a new sign-in of
// the same browser (its state then current), the provider refuses it;
// replayed as it was, the state is spent.
func TestOIDCRefusesAReplayedCode(t *testing.T) {
	t.Parallel()
	h, _ := oidcHarness(t, nil)
	c := h.browser()
	back := h.loginAtOP(c, "ann")
	first := h.callback(c, back)
	require.Equal(t, http.StatusSeeOther, first.StatusCode)

	refused(t, h.callback(h.browser(), back), http.StatusBadRequest, "did not start in this browser")

	// A new sign-in under way in c; the old code under its new state.
	start := h.startAt(c, "auth/login")
	require.Equal(t, http.StatusSeeOther, start.StatusCode)
	loc, err := url.Parse(start.Header.Get("Location"))
	require.NoError(t, err)
	old, err := url.Parse(back)
	require.NoError(t, err)
	q := old.Query()
	q.Set("state", loc.Query().Get("state"))
	old.RawQuery = q.Encode()
	refused(t, h.callback(c, old.String()), http.StatusUnauthorized, "did not hold up")
}

// logBuffer is a slog handler's output, safe to read while written.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A provider down when the UI starts: the sign-in page is served, and a
// sign-in says the provider did not answer (503), until it is back; then
// it signs in.
func TestOIDCProviderDownAtStart(t *testing.T) {
	t.Parallel()
	opt, provider := withOP(t, nil)
	o := provider()
	o.Down(true)
	h := newHarness(t, opt)
	h.clk.Add(time.Since(h.clk.Now()))

	require.Equal(t, http.StatusOK, h.getPage(nil, "signin").StatusCode)
	c := h.browser()
	r := h.startAt(c, "auth/login")
	refused(t, r, http.StatusServiceUnavailable, "did not answer")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))

	o.Down(false)
	h.signInAtOP(c, "ann")
}

// A provider that goes down between its login form and the code's
// exchange: a page says it did not answer, no session, and the log holds
// neither the code nor a token.
func TestOIDCProviderDownAtSignIn(t *testing.T) {
	t.Parallel()
	var log logBuffer
	h, o := oidcHarness(t, nil, withConfig(func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) }))
	c := h.browser()
	back := h.loginAtOP(c, "ann")
	o.Down(true)
	refused(t, h.callback(c, back), http.StatusServiceUnavailable, "did not answer")
	code, err := url.Parse(back)
	require.NoError(t, err)
	assert.Contains(t, log.String(), "did not answer")
	assert.NotContains(t, log.String(), code.Query().Get("code"))
	assert.NotContains(t, log.String(), "eyJ", "no JWT in the log")
}

// A provider too slow to answer within the timeout is one that did not
// answer.
func TestOIDCProviderTooSlow(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-release:
			return nil, http.ErrHandlerTimeout
		}
	})}
	h, _ := oidcHarness(t, func(c *OIDC) { c.Timeout = 100 * time.Millisecond; c.HTTPClient = slow })
	refused(t, h.startAt(h.browser(), "auth/login"), http.StatusServiceUnavailable, "did not answer")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Sign-out ends the session (the old cookie gets the sign-in page) and
// sends the browser to the provider's end_session_endpoint, so the
// provider's own session ends too.
func TestOIDCSignOutEndsTheSessionAndTheProvidersToo(t *testing.T) {
	t.Parallel()
	h, o := oidcHarness(t, nil)
	c := h.browser()
	ck := h.signInAtOP(c, "ann")
	r := h.postForm(stay(c), "signout", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	to, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, o.Issuer+"/end_session", to.Scheme+"://"+to.Host+to.Path)
	assert.Equal(t, oidctest.ClientID, to.Query().Get("client_id"))
	assert.Equal(t, h.url("signin"), to.Query().Get("post_logout_redirect_uri"))

	page := h.getPage(nil, "", "Cookie", cookieName+"="+ck.Value)
	assert.Equal(t, http.StatusSeeOther, page.StatusCode)
	assert.True(t, strings.HasSuffix(page.Header.Get("Location"), "/signin"), "the old cookie gets the sign-in page")
}

// A name is one person: with named operators beside the provider, a
// provider user whose name is a named operator's (whatever its case) is
// not signed in as them. The provider's preferred_username is not unique
// and may be the user's to edit; signed in, they would answer as Ann, and
// "sign out my other sessions" would end hers.
func TestOIDCNameOfANamedOperatorSignsNoOneIn(t *testing.T) {
	t.Parallel()
	h, _ := oidcHarness(t, nil, withOperators(t))
	c := h.browser()
	r := h.callback(c, h.loginAtOP(c, "ann"))
	refused(t, r, http.StatusForbidden, "signs in here with a secret")
}
