package web

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secret = "operator-secret-for-tests"

// signIn signs c in with the operator secret and name and returns the
// session cookie the server set.
func (h *harness) signIn(c *http.Client, name string) *http.Cookie {
	h.t.Helper()
	r := h.postForm(c, "signin", url.Values{"token": {h.cfg.OperatorToken}, "name": {name}})
	require.Equal(h.t, http.StatusSeeOther, r.StatusCode, "sign-in status: got %d, want 303; body: %s", r.StatusCode, r.body)
	ck := sessionCookie(r.Response)
	require.NotNil(h.t, ck, "sign-in set no session cookie")
	return ck
}

func sessionCookie(r *http.Response) *http.Cookie {
	for _, c := range r.Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	return nil
}

func TestSignedOutRequestsAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	id := h.ask("s1", "r1", nameForm())
	routes := []struct {
		name, method, path string
		html               bool // a browser page load: sent to sign-in
	}{
		{"page", http.MethodGet, "", true},
		{"panel", http.MethodGet, "panel", true},
		{"card", http.MethodGet, "cards/" + string(id), true},
		{"page as a script", http.MethodGet, "", false},
		{"panel as a script", http.MethodGet, "panel?agent=deployer", false},
		{"card as a script", http.MethodGet, "cards/" + string(id), false},
		{"push", http.MethodGet, "push?since=0", false},
		{"answer", http.MethodPost, "cards/" + string(id) + "/answer", false},
		{"metrics", http.MethodGet, "metrics", false},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			hdr := []string{"Accept", "*/*"}
			if rt.html {
				hdr = []string{"Accept", "text/html,application/xhtml+xml"}
			}
			if rt.name == "push" {
				hdr = []string{"Accept", "text/event-stream"}
			}
			var r response
			if rt.method == http.MethodPost {
				r = h.postForm(nil, rt.path, url.Values{"token": {"t"}, "f0": {"x"}}, hdr...)
			} else {
				r = h.do(nil, h.request(rt.method, h.url(rt.path), nil, hdr...))
			}
			if rt.html {
				require.Equal(t, http.StatusSeeOther, r.StatusCode, "status: got %d, want 303 to sign-in", r.StatusCode)
				loc, err := url.Parse(r.Header.Get("Location"))
				require.NoError(t, err)
				assert.Equal(t, "/signin", loc.Path, "redirect: got %q", r.Header.Get("Location"))
				assert.Equal(t, rt.path, loc.Query().Get("next"), "next: got %q, want the page asked for", loc.Query().Get("next"))
			} else {
				assert.Equal(t, http.StatusUnauthorized, r.StatusCode, "status: got %d, want 401; body %q", r.StatusCode, r.body)
				assert.Contains(t, r.Header.Get("WWW-Authenticate"), "Bearer")
				assert.NotContains(t, r.body, "pending", "a refused request must not show the inbox")
			}
			assert.Nil(t, sessionCookie(r.Response), "a refused request set a session cookie")
		})
	}
	assert.Empty(t, h.sub.all(), "a signed-out answer post reached the respond path")
	assert.Zero(t, h.metrics.Browsers.Load(), "a signed-out push connection was counted as a browser")
}

func TestOpenRoutesNeedNoSignIn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	for _, path := range []string{"healthz", "readyz", "static/app.css", "static/app.js", "signin"} {
		t.Run(path, func(t *testing.T) {
			r := h.do(nil, h.request(http.MethodGet, h.url(path), nil, "Accept", "text/html"))
			assert.Equal(t, http.StatusOK, r.StatusCode, "status of %s signed out: got %d, want 200", path, r.StatusCode)
		})
	}
}

func TestSignInSetsSessionCookie(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		opt         option
		secure      bool
		sameSite    http.SameSite
		partitioned bool
		cookiePath  string
	}{
		{"plain http", withConfig(func(*Config) {}), false, http.SameSiteLaxMode, false, "/"},
		{"TLS or trusted proxy", withConfig(func(c *Config) { c.SecureCookies = true }), true, http.SameSiteLaxMode, false, "/"},
		// In the console's frame, a third-party context: browsers that
		// block third-party cookies keep a partitioned (CHIPS) one.
		{"embedded in Mission Control", withConfig(func(c *Config) { c.EmbedOrigins = []string{"https://mc.example"} }), true, http.SameSiteNoneMode, true, "/"},
		{"under a base path", withConfig(func(c *Config) { c.BasePath = "/forms/" }), false, http.SameSiteLaxMode, false, "/forms/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, withToken(secret), tc.opt)
			c := h.client()
			ck := h.signIn(c, "alice")
			assert.True(t, ck.HttpOnly, "cookie HttpOnly: got false")
			assert.Equal(t, tc.secure, ck.Secure, "cookie Secure: got %v, want %v", ck.Secure, tc.secure)
			assert.Equal(t, tc.sameSite, ck.SameSite, "cookie SameSite: got %v, want %v", ck.SameSite, tc.sameSite)
			assert.Equal(t, tc.partitioned, ck.Partitioned, "cookie Partitioned: got %v, want %v", ck.Partitioned, tc.partitioned)
			assert.Equal(t, tc.cookiePath, ck.Path, "cookie Path")
			assert.Equal(t, int((7 * 24 * time.Hour).Seconds()), ck.MaxAge, "cookie Max-Age: the default absolute expiry")
			assert.NotContains(t, ck.Value, secret, "the cookie must not carry the secret")

			// The browser sends the cookie back (a Secure cookie over plain
			// http is not, so send it by hand as a TLS proxy would).
			r := h.do(nil, h.request(http.MethodGet, h.url(""), nil, "Accept", "text/html", "Cookie", cookieName+"="+ck.Value))
			assert.Equal(t, http.StatusOK, r.StatusCode, "page with the session cookie: got %d, want 200", r.StatusCode)
			acct := r.doc(t).Find(`[data-testid="account"]`)
			assert.Contains(t, acct.Text(), "alice", "the page says who is signed in")
			assert.Equal(t, 1, acct.Find(`[data-testid="signout"]`).Length(), "and offers a sign-out")
		})
	}
}

func TestSignInWithWrongSecretIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	for _, bad := range []string{"", "wrong", secret + "x", strings.ToUpper(secret), secret[:len(secret)-1]} {
		r := h.postForm(h.client(), "signin", url.Values{"token": {bad}, "name": {"mallory"}})
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, "secret %q: got %d, want 401", bad, r.StatusCode)
		assert.Nil(t, sessionCookie(r.Response), "secret %q: a refused sign-in set a cookie", bad)
		d := r.doc(t)
		assert.Equal(t, 1, d.Find(`[data-testid="error-summary"]`).Length(), "the refused sign-in names the problem")
		name, _ := d.Find(`input[name="name"]`).Attr("value")
		assert.Equal(t, "mallory", name, "the name typed is kept")
		assert.Zero(t, d.Find(`input[name="token"][value]`).Length(), "the secret typed must not be echoed")
	}
}

// A name beginning "rule:" is how answers sent by a rule are recorded
// ("Answered by rule ‘…’"): an operator who signs in with one, with the
// right secret, is refused with a reason and no session, and a script's
// X-Operator-Name of that form is no name; an operators file cannot name
// one either.
func TestNoOperatorTakesARulesName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	for _, name := range []string{"rule:01JABC", " Rule:x", "RULE:"} {
		r := h.postForm(h.client(), "signin", url.Values{"token": {secret}, "name": {name}})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "name %q: got %d, want 422", name, r.StatusCode)
		assert.Nil(t, sessionCookie(r.Response), "name %q: a session was opened", name)
		assert.Contains(t, r.doc(t).Find(`[data-testid="error-summary"]`).Text(), "rule:", "name %q: the problem names the reserved start", name)
	}
	assert.Empty(t, operatorName("rule:01JABC"), "X-Operator-Name")
	assert.Equal(t, "rules fan", operatorName("rules fan"), "a name merely starting with the word")
	assert.False(t, ValidOperatorName("rule:1"))
	_, err := ParseOperators(strings.NewReader("rule:1 " + bcryptHash(t, annSecret) + "\n"))
	assert.ErrorIs(t, err, ErrOperatorsFile)
}

func TestBearerTokenForScripts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	ok := h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, "Authorization", "Bearer "+secret))
	assert.Equal(t, http.StatusOK, ok.StatusCode, "right bearer: got %d, want 200", ok.StatusCode)
	page := h.do(nil, h.request(http.MethodGet, h.url(""), nil, "Authorization", "Bearer "+secret, "Accept", "text/html"))
	assert.Equal(t, http.StatusOK, page.StatusCode, "page with the right bearer: got %d, want 200", page.StatusCode)

	// A wrong bearer is refused even beside a valid session cookie: the
	// request said who it is, and it is not.
	ck := h.signIn(h.client(), "alice")
	for _, hv := range []string{"Bearer wrong", "Bearer " + secret + "x", "bearer", "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+secret))} {
		r := h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, "Authorization", hv))
		assert.Equal(t, http.StatusUnauthorized, r.StatusCode, "Authorization %q: got %d, want 401", hv, r.StatusCode)
	}
	r := h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, "Authorization", "Bearer wrong", "Cookie", cookieName+"="+ck.Value))
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode, "wrong bearer with a cookie: got %d, want 401", r.StatusCode)
}

func TestForgedSessionIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	real := h.signIn(h.client(), "alice").Value
	require.GreaterOrEqual(t, len(real), 22, "the id holds 128 bits or more: got %q", real)

	// A session of another UI, with another secret.
	other := newHarness(t, withToken("another-secret-0123"))
	foreign := other.signIn(other.client(), "alice").Value

	forged := map[string]string{
		"garbage":       "not-a-session",
		"empty":         "",
		"truncated":     real[:len(real)-2],
		"extended":      real + "A",
		"the id's hash": hashSessionID(real),
		"another UI's":  foreign,
		"very long":     strings.Repeat(real, 20),
	}
	for name, v := range forged {
		t.Run(name, func(t *testing.T) {
			r := h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, "Cookie", cookieName+"="+v))
			assert.Equal(t, http.StatusUnauthorized, r.StatusCode, "cookie %q: got %d, want 401", v, r.StatusCode)
		})
	}
	r := h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, "Cookie", cookieName+"="+real))
	assert.Equal(t, http.StatusOK, r.StatusCode, "the genuine cookie: got %d, want 200", r.StatusCode)
}

func TestSignOutClearsTheSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	c := h.client()
	h.signIn(c, "alice")
	require.Equal(t, http.StatusOK, h.do(c, h.request(http.MethodGet, h.url("metrics"), nil)).StatusCode)

	r := h.postForm(c, "signout", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	ck := sessionCookie(r.Response)
	require.NotNil(t, ck, "sign-out sets the cookie to clear it")
	assert.Empty(t, ck.Value)
	assert.Negative(t, ck.MaxAge, "sign-out cookie Max-Age: got %d, want < 0", ck.MaxAge)
	assert.Equal(t, http.StatusUnauthorized, h.do(c, h.request(http.MethodGet, h.url("metrics"), nil)).StatusCode, "after sign-out")
}

// TestSignOutClearsThePartitionedCookie: embedded, the cookie that clears
// the session has the attributes of the one set (a partitioned cookie is
// replaced only by a partitioned one).
func TestSignOutClearsThePartitionedCookie(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.EmbedOrigins = []string{"https://mc.example"} }))
	in := h.signIn(h.client(), "alice")
	out := sessionCookie(h.postForm(h.client(), "signout", nil, "Cookie", cookieName+"="+in.Value).Response)
	require.NotNil(t, out, "sign-out sets the cookie to clear it")
	assert.Negative(t, out.MaxAge, "sign-out cookie Max-Age: got %d, want < 0", out.MaxAge)
	assert.Equal(t, [4]any{in.Path, in.Secure, in.SameSite, in.Partitioned}, [4]any{out.Path, out.Secure, out.SameSite, out.Partitioned},
		"the clearing cookie's Path, Secure, SameSite, Partitioned")
}

func TestSignInReturnsToThePageAsked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BasePath = "/forms/" }))
	c := h.client()
	r := h.getPage(c, "panel?agent=deployer&theme=dark")
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	loc := r.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, "/forms/signin?"), "redirect: got %q, want the sign-in page under the base path", loc)

	page := h.do(c, h.request(http.MethodGet, h.srv.URL+loc, nil, "Accept", "text/html"))
	require.Equal(t, http.StatusOK, page.StatusCode)
	action, _ := page.doc(t).Find(`form[data-testid="signin-form"]`).Attr("action")
	u, err := url.Parse(action)
	require.NoError(t, err)
	assert.Equal(t, "/forms/signin", u.Path)

	in := h.do(c, h.request(http.MethodPost, h.srv.URL+action, strings.NewReader(url.Values{"token": {secret}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL))
	require.Equal(t, http.StatusSeeOther, in.StatusCode)
	assert.Equal(t, "/forms/panel?agent=deployer&theme=dark", in.Header.Get("Location"), "after sign-in: back to the page asked for")

	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", "\\\\evil.example"} {
		r := h.do(c, h.request(http.MethodPost, h.url("signin?")+url.Values{"next": {next}}.Encode(),
			strings.NewReader(url.Values{"token": {secret}}.Encode()), "Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL))
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		assert.Equal(t, "/forms/", r.Header.Get("Location"), "next %q must not lead out of the UI", next)
	}
}

func TestOperatorNameIsWhoAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	id := h.ask("s1", "r1", nameForm())
	id2 := h.ask("s1", "r2", nameForm())

	c := h.client()
	h.signIn(c, "Alice Operator")
	action, token := answerForm(t, h.getPage(c, "").doc(t), id)
	r := h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {"payments"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "answer: got %d; body %s", r.StatusCode, r.body)

	// A script names its operator beside the bearer.
	action2, token2 := answerForm(t, h.getPage(c, "").doc(t), id2)
	r = h.postForm(nil, h.relative(action2), url.Values{"token": {token2}, "f0": {"billing"}},
		"Authorization", "Bearer "+secret, "X-Operator-Name", "deploy-script")
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "scripted answer: got %d; body %s", r.StatusCode, r.body)

	subs := h.sub.all()
	require.Len(t, subs, 2)
	assert.Equal(t, "Alice Operator", subs[0].By)
	assert.Equal(t, "deploy-script", subs[1].By)
	card, _ := h.in.Card(id)
	require.NotNil(t, card.Submission)
	assert.Equal(t, "Alice Operator", card.Submission.By, "the inbox records who answered")
}

func TestOperatorNameAndBearerParsing(t *testing.T) {
	t.Parallel()
	names := map[string]string{
		"  Ada  ":               "Ada",
		"Zoë":                   "Zoë",
		strings.Repeat("x", 81): "",
		"bad\xffutf8":           "",
		"line\nbreak":           "",
		"tab\there":             "",
		strings.Repeat("é", 40): strings.Repeat("é", 40),
	}
	for in, want := range names {
		assert.Equal(t, want, operatorName(in), "operatorName(%q)", in)
	}
	for h, want := range map[string]string{"Bearer abc": "abc", "bearer abc": "abc", "BEARER  abc ": "abc"} {
		got, ok := bearer(h)
		assert.True(t, ok, h)
		assert.Equal(t, want, got, h)
	}
	for _, h := range []string{"", "Basic abc", "Bearerabc"} {
		_, ok := bearer(h)
		assert.False(t, ok, "bearer(%q)", h)
	}
}
