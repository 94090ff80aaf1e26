package app

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionFlags: --session-idle and --session-max, and their env, with
// the documented defaults.
func TestSessionFlags(t *testing.T) {
	t.Parallel()
	c, err := parseServe(nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, [2]time.Duration{12 * time.Hour, 7 * 24 * time.Hour}, [2]time.Duration{c.sessionIdle, c.sessionMax}, "defaults")

	c, err = parseServe(nil, envMap(map[string]string{"AEPFORMS_SESSION_IDLE": "30m", "AEPFORMS_SESSION_MAX": "48h"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, [2]time.Duration{30 * time.Minute, 48 * time.Hour}, [2]time.Duration{c.sessionIdle, c.sessionMax}, "from env")

	c, err = parseServe([]string{"--session-idle", "1h", "--session-max", "2h"}, envMap(map[string]string{"AEPFORMS_SESSION_IDLE": "30m"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, [2]time.Duration{time.Hour, 2 * time.Hour}, [2]time.Duration{c.sessionIdle, c.sessionMax}, "flags over env")

	assert.Equal(t, 15*time.Second, c.sessionCheck, "--session-recheck's default")
	assert.Equal(t, 8, c.maxStreams, "--max-streams-per-session's default")
	c, err = parseServe(nil, envMap(map[string]string{"AEPFORMS_SESSION_RECHECK": "2s", "AEPFORMS_MAX_STREAMS_PER_SESSION": "3"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, c.sessionCheck, "from env")
	assert.Equal(t, 3, c.maxStreams, "from env")

	for _, args := range [][]string{{"--session-idle", "0s"}, {"--session-max", "-1h"}, {"--session-recheck", "0s"}, {"--max-streams-per-session", "0"}} {
		_, err := parseServe(args, envMap(nil), io.Discard)
		assert.ErrorIs(t, err, ErrUsage, "%v", args)
	}
}

// TestSessionsLiveInTheJournal: a session outlives a restart of serve on
// the same journal, and signing out ends it for good, copied cookie and
// all.
func TestSessionsLiveInTheJournal(t *testing.T) {
	t.Parallel()
	const operatorSecret = "correct-horse-battery-staple"
	db := filepath.Join(t.TempDir(), "aepforms.db")
	env := envMap(map[string]string{"HOME": t.TempDir()})
	start := func() (string, func()) {
		t.Helper()
		out := newNotifyBuffer()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", db, "--operator-token", operatorSecret}, env, nil, out, out)
		}()
		out.waitFor(t, "aepforms UI listening on http://")
		base := regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(out.String())[1]
		return base, func() { cancel(); require.NoError(t, <-done) }
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	metrics := func(base string, ck *http.Cookie) int {
		req, err := http.NewRequest(http.MethodGet, base+"metrics", nil)
		require.NoError(t, err)
		req.AddCookie(ck)
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	base, stop := start()
	resp, err := noRedirect.PostForm(base+"signin", url.Values{"token": {operatorSecret}, "name": {"ann"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "aepforms_session" {
			ck = c
		}
	}
	require.NotNil(t, ck, "sign-in sets the session cookie")
	require.Equal(t, http.StatusOK, metrics(base, ck))
	stop()

	base, stop = start()
	defer stop()
	require.Equal(t, http.StatusOK, metrics(base, ck), "the session outlives the restart")
	req, err := http.NewRequest(http.MethodPost, base+"signout", nil)
	require.NoError(t, err)
	req.AddCookie(ck)
	resp, err = noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, http.StatusUnauthorized, metrics(base, ck), "the copied cookie after sign-out")
}
