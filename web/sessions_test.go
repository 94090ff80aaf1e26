package web

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statusWith is /metrics's status for a request carrying only the cookie
// value v (as a copied cookie would arrive, from anywhere).
func (h *harness) statusWith(v string) int {
	h.t.Helper()
	return h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, "Cookie", cookieName+"="+v)).StatusCode
}

// A cookie copied before sign-out no longer signs in after it: sign-out
// ends the session, not only the browser's copy of the cookie.
func TestCopiedCookieIsRefusedAfterSignOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	c := h.client()
	copied := h.signIn(c, "alice").Value
	require.Equal(t, http.StatusOK, h.statusWith(copied), "the copy works while signed in")

	require.Equal(t, http.StatusSeeOther, h.postForm(c, "signout", nil).StatusCode)
	assert.Equal(t, http.StatusUnauthorized, h.statusWith(copied), "the copy after sign-out: want 401")
	page := h.getPage(nil, "", "Cookie", cookieName+"="+copied)
	assert.Equal(t, http.StatusSeeOther, page.StatusCode, "a page load with the copy goes to sign-in")
	assert.Equal(t, "/signin", page.Header.Get("Location"))
}

// "Sign out my other sessions" ends the operator's other browsers, keeps
// this one, and leaves other operators alone.
func TestSignOutOtherSessions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	here, there := h.client(), h.client()
	h.signIn(here, "alice")
	other := h.signIn(there, "alice").Value
	bob := h.signIn(h.client(), "bob").Value

	r := h.postForm(here, "signout/others", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "body: %s", r.body)
	assert.Equal(t, "/", r.Header.Get("Location"))
	assert.Equal(t, http.StatusOK, h.do(here, h.request(http.MethodGet, h.url("metrics"), nil)).StatusCode, "this session stays")
	assert.Equal(t, http.StatusUnauthorized, h.statusWith(other), "the other session ends")
	assert.Equal(t, http.StatusOK, h.statusWith(bob), "another operator's session stays")

	// Signed out, or with a Bearer secret (no session to keep), it is refused.
	assert.Equal(t, http.StatusUnauthorized, h.postForm(nil, "signout/others", nil).StatusCode)
	bearer := h.postForm(nil, "signout/others", nil, "Authorization", "Bearer "+secret)
	assert.Equal(t, http.StatusBadRequest, bearer.StatusCode)
	// Cross-site, it is refused like every post.
	cross := h.postForm(here, "signout/others", nil, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, cross.StatusCode)
}

// A session unused for SessionIdle ends; one in use ends SessionMax after
// its sign-in however much it is used.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	cfg := withConfig(func(c *Config) { c.SessionIdle = time.Hour; c.SessionMax = 3 * time.Hour })

	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, withToken(secret), cfg)
		ck := h.signIn(h.client(), "alice").Value
		h.clk.Add(59 * time.Minute)
		require.Equal(t, http.StatusOK, h.statusWith(ck), "used 59 min after sign-in")
		h.clk.Add(59 * time.Minute)
		require.Equal(t, http.StatusOK, h.statusWith(ck), "used again 59 min later: the idle time restarted")
		h.clk.Add(time.Hour)
		assert.Equal(t, http.StatusUnauthorized, h.statusWith(ck), "an hour unused: want 401")
	})
	t.Run("absolute", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, withToken(secret), cfg)
		ck := h.signIn(h.client(), "alice")
		assert.Equal(t, int((3 * time.Hour).Seconds()), ck.MaxAge, "the cookie lasts as long as the session can")
		for range 5 {
			h.clk.Add(35 * time.Minute)
			require.Equal(t, http.StatusOK, h.statusWith(ck.Value))
		}
		h.clk.Add(5*time.Minute - time.Second)
		require.Equal(t, http.StatusOK, h.statusWith(ck.Value), "a second before 3 h")
		h.clk.Add(time.Second)
		assert.Equal(t, http.StatusUnauthorized, h.statusWith(ck.Value), "3 h after sign-in, though used: want 401")
	})
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		var c Config
		c.defaults()
		assert.Equal(t, 12*time.Hour, c.SessionIdle)
		assert.Equal(t, 7*24*time.Hour, c.SessionMax)
	})
}

// Changing the shared operator secret ends the sessions the old one
// opened, even with the sessions kept (the journal, across a restart).
func TestChangedSecretEndsSessions(t *testing.T) {
	t.Parallel()
	store := newMemorySessions()
	before := newHarness(t, withToken(secret), withSessions(store))
	ck := before.signIn(before.client(), "alice").Value

	same := newHarness(t, withToken(secret), withSessions(store))
	require.Equal(t, http.StatusOK, same.statusWith(ck), "a restart with the same secret keeps the session")

	after := newHarness(t, withToken(secret+"-rotated"), withSessions(store))
	assert.Equal(t, http.StatusUnauthorized, after.statusWith(ck), "the secret changed: want 401")
	assert.Equal(t, http.StatusUnauthorized, same.statusWith(ck), "the refused session was deleted")
	for _, s := range store.m {
		assert.NotContains(t, s.Secret, secret, "the store keeps a fingerprint, never the secret")
	}
}

// countingSessions counts the writes of a session's last use.
type countingSessions struct {
	*memorySessions
	touches atomic.Int64
}

func (c *countingSessions) TouchSession(ctx context.Context, idHash string, at time.Time) error {
	c.touches.Add(1)
	return c.memorySessions.TouchSession(ctx, idHash, at)
}

// A session's last use is written at most once a minute, however many
// requests it makes.
func TestLastSeenIsWrittenAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	store := &countingSessions{memorySessions: newMemorySessions()}
	h := newHarness(t, withToken(secret), withSessions(store))
	ck := h.signIn(h.client(), "alice").Value
	stored := func() time.Time {
		s, ok, err := store.LookupSession(t.Context(), hashSessionID(ck))
		require.NoError(t, err)
		require.True(t, ok)
		return s.LastSeen
	}
	signedIn := stored()
	for range 5 {
		h.clk.Add(10 * time.Second)
		require.Equal(t, http.StatusOK, h.statusWith(ck))
	}
	assert.Equal(t, int64(0), store.touches.Load(), "50 s of requests: no write")
	assert.Equal(t, signedIn, stored())

	h.clk.Add(10 * time.Second)
	require.Equal(t, http.StatusOK, h.statusWith(ck))
	require.Equal(t, http.StatusOK, h.statusWith(ck))
	assert.Equal(t, int64(1), store.touches.Load(), "a minute after sign-in: one write")
	assert.Equal(t, h.clk.Now(), stored())
}

// A session keeps its operator and the browser's User-Agent, cut to
// maxUserAgent bytes.
func TestUserAgentIsKeptCut(t *testing.T) {
	t.Parallel()
	store := newMemorySessions()
	h := newHarness(t, withToken(secret), withSessions(store))
	long := make([]byte, 1000)
	for i := range long {
		long[i] = 'a'
	}
	r := h.postForm(nil, "signin", map[string][]string{"token": {secret}, "name": {"alice"}}, "User-Agent", string(long))
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	s, ok, err := store.LookupSession(t.Context(), hashSessionID(sessionCookie(r.Response).Value))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Len(t, s.UserAgent, maxUserAgent)
	assert.Equal(t, "alice", s.Operator)
}
