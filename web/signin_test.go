package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// embedded is the configuration of a UI that Mission Control frames,
// mounted under a base path.
func embedded(c *Config) {
	c.EmbedOrigins = []string{"https://mc.example"}
	c.BasePath = "/forms/"
}

// frameSignIn signs in from the sign-in page that the panel
// (panel?agent=deployer&theme=dark) sent a signed-out frame to, as a
// browser posts it with Sec-Fetch-Dest dest, and returns the response.
func frameSignIn(h *harness, dest string) response {
	h.t.Helper()
	r := h.postForm(nil, "signin?"+url.Values{"next": {"panel?agent=deployer&theme=dark"}}.Encode(),
		url.Values{"token": {secret}, "name": {"alice"}}, "Sec-Fetch-Dest", dest)
	require.Equal(h.t, http.StatusSeeOther, r.StatusCode, "sign-in status: got %d, want 303; body: %s", r.StatusCode, r.body)
	return r
}

// TestSignInInAFrameReturnsToThePanel: embedded, a sign-in inside a frame
// returns to the panel with its query, marked as "signed in just now";
// arriving with the session cookie, the mark is dropped by a redirect to
// the panel as it was asked for. A top-level sign-in is not marked.
func TestSignInInAFrameReturnsToThePanel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(embedded))
	r := frameSignIn(h, "iframe")
	loc, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "/forms/panel", loc.Path, "after sign-in in a frame: back to the panel")
	q := loc.Query()
	assert.Equal(t, "deployer", q.Get("agent"), "the panel's filter is kept")
	assert.Equal(t, "dark", q.Get("theme"), "the panel's theme is kept")
	require.NotEmpty(t, q.Get(signedInParam), "the way back is marked")

	ck := sessionCookie(r.Response)
	require.NotNil(t, ck)
	back := h.do(nil, h.request(http.MethodGet, h.srv.URL+loc.String(), nil, "Accept", "text/html", "Cookie", cookieName+"="+ck.Value))
	require.Equal(t, http.StatusSeeOther, back.StatusCode, "the marked panel with the cookie: got %d, want 303 without the mark", back.StatusCode)
	assert.Equal(t, "/forms/panel?agent=deployer&theme=dark", back.Header.Get("Location"), "the panel as it was asked for")

	top := frameSignIn(h, "document")
	assert.Equal(t, "/forms/panel?agent=deployer&theme=dark", top.Header.Get("Location"), "a top-level sign-in is not marked")

	plain := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BasePath = "/forms/" }))
	assert.Equal(t, "/forms/panel?agent=deployer&theme=dark", frameSignIn(plain, "iframe").Header.Get("Location"),
		"without --embed-origin nothing is marked")
}

// TestSignInInAFrameWhoseCookieIsRefused: when the marked panel arrives
// without the session cookie (the browser refused it in the frame), it
// says so, with the panel to open in its own tab, instead of the sign-in
// form; a mark that is stale or forged is a plain signed-out visit.
func TestSignInInAFrameWhoseCookieIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(embedded))
	marked := frameSignIn(h, "iframe").Header.Get("Location")
	require.Contains(t, marked, signedInParam+"=")

	r := h.do(nil, h.request(http.MethodGet, h.srv.URL+marked, nil, "Accept", "text/html", "Sec-Fetch-Dest", "iframe"))
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode, "the refused cookie's page: got %d, want 401", r.StatusCode)
	doc := r.doc(t)
	require.Equal(t, 1, doc.Find(`[data-testid="signin-not-kept"]`).Length(), "the frame says the sign-in was not kept; body: %s", r.body)
	assert.Zero(t, doc.Find(`[data-testid="signin-form"]`).Length(), "no sign-in form to loop back to")
	open := doc.Find(`a[data-testid="open-in-tab"]`)
	assert.Equal(t, "/forms/panel?agent=deployer&theme=dark", open.AttrOr("href", ""), "the panel to open, with its query, without the mark")
	assert.Equal(t, "_blank", open.AttrOr("target", ""), "opened in its own tab")
	assert.Equal(t, "/forms/signin?"+url.Values{"next": {"panel?agent=deployer&theme=dark"}}.Encode(),
		doc.Find(`a[data-testid="signin-again"]`).AttrOr("href", ""), "sign in again, back to the same panel")
	assert.Equal(t, "dark", doc.Find("html").AttrOr("data-theme", ""), "the panel's theme")

	loc, err := url.Parse(marked)
	require.NoError(t, err)
	forged := loc.Query()
	forged.Set(signedInParam, strings.Split(loc.Query().Get(signedInParam), ".")[0]+".forged")
	cases := []struct {
		name  string
		query url.Values
		later time.Duration
	}{
		{"forged", forged, 0},
		{"stale", loc.Query(), signedInMaxAge + time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.clk.Add(tc.later)
			r := h.do(nil, h.request(http.MethodGet, h.srv.URL+loc.Path+"?"+tc.query.Encode(), nil, "Accept", "text/html"))
			require.Equal(t, http.StatusSeeOther, r.StatusCode, "a %s mark without the cookie: got %d, want 303 to sign-in", tc.name, r.StatusCode)
			next, err := url.Parse(r.Header.Get("Location"))
			require.NoError(t, err)
			assert.Equal(t, "/forms/signin", next.Path)
			assert.Equal(t, "panel?agent=deployer&theme=dark", next.Query().Get("next"), "the mark is not carried into next")
		})
	}
}
