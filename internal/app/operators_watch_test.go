package app

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The operators file is read again when it changes, without a restart:
// Ann's line made role=viewer ends the session she opened as an
// answerer (the old cookie meets the sign-in page, her open page's
// stream is told to reload), and signed in again she is a viewer; an
// operator added signs in; a broken file is refused, said once in the
// log, and the operators read before stay in force.
func TestOperatorsFileIsReadAgainWhenItChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "operators")
	ann := addOp(t, nil, "Ann", "--operators-file", path)
	stderr := newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--operators-file", path,
			"--operators-reload", "20ms", "--session-recheck", "20ms"}, envMap(map[string]string{"HOME": dir}), nil, stderr, stderr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	stderr.waitFor(t, "aepforms UI listening on http://")
	base := regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(stderr.String())[1]
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn := func(name, secret string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+"signin", strings.NewReader(url.Values{"name": {name}, "token": {secret}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", strings.TrimSuffix(base, "/"))
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%s signs in", name)
		for _, c := range resp.Cookies() {
			if c.Name == "aepforms_session" {
				return c.Name + "=" + c.Value
			}
		}
		t.Fatalf("%s's sign-in set no session cookie", name)
		return ""
	}
	get := func(path, cookie string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/html")
		req.Header.Set("Cookie", cookie)
		resp, err := client.Do(req)
		require.NoError(t, err)
		return resp
	}
	role := func(cookie string) string {
		t.Helper()
		resp := get("", cookie)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		d, err := goquery.NewDocumentFromReader(resp.Body)
		require.NoError(t, err)
		return d.Find(`[data-testid="role"]`).Text()
	}
	old := signIn("Ann", ann)
	assert.Equal(t, "(answerer)", role(old))
	stream, err := http.NewRequest(http.MethodGet, base+"push", nil)
	require.NoError(t, err)
	stream.Header.Set("Cookie", old)
	pushed, err := (&http.Client{}).Do(stream)
	require.NoError(t, err)
	defer pushed.Body.Close()
	require.Equal(t, http.StatusOK, pushed.StatusCode)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), "Ann ", "Ann role=viewer ", 1)), 0o600))
	stderr.waitCount(t, "operators file read again", 1)
	lines := bufio.NewScanner(pushed.Body)
	reload := false
	for !reload && lines.Scan() {
		reload = lines.Text() == "event: reload"
	}
	assert.True(t, reload, "the open page is told to reload: %v", lines.Err())
	resp := get("", old)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "the session opened as an answerer no longer counts")
	assert.Equal(t, "(viewer)", role(signIn("Ann", ann)), "signed in again, a viewer")

	bo := addOp(t, nil, "Bo", "--operators-file", path)
	stderr.waitCount(t, "operators file read again", 2)
	assert.Equal(t, "(answerer)", role(signIn("Bo", bo)), "an operator added signs in without a restart")

	require.NoError(t, os.WriteFile(path, []byte("not an operators file\n"), 0o600))
	stderr.waitCount(t, "the changed operators file is refused", 1)
	assert.Equal(t, "(answerer)", role(signIn("Bo", bo)), "the operators read before stay in force")
}
