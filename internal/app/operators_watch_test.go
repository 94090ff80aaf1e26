package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
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
// stream is told to reload, her device's notification subscription is
// removed as a sign-out removes it), and signed in again she is a
// viewer; an operator added signs in; a broken file is refused, said
// once in the log, and the operators read before stay in force.
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
			"--operators-reload", "20ms", "--session-recheck", "20ms", "--vapid-subject", "mailto:ops@example.com"}, envMap(map[string]string{"HOME": dir}), nil, stderr, stderr)
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
	devices := func(cookie string) int {
		t.Helper()
		resp := get("subscriptions", cookie)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var cfg struct{ Devices []struct{} }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&cfg))
		return len(cfg.Devices)
	}
	subscribe := func(cookie, endpoint string) {
		t.Helper()
		k, err := ecdh.P256().GenerateKey(rand.Reader)
		require.NoError(t, err)
		body, err := json.Marshal(map[string]any{"endpoint": endpoint, "actions": true, "keys": map[string]string{
			"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), "auth": base64.RawURLEncoding.EncodeToString(make([]byte, 16))}})
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, base+"subscriptions", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", strings.TrimSuffix(base, "/"))
		req.Header.Set("Cookie", cookie)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, "a device subscribes")
	}
	old := signIn("Ann", ann)
	assert.Equal(t, "(answerer)", role(old))
	subscribe(old, "https://push.example/ann-phone")
	require.Equal(t, 1, devices(old))
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
	again := signIn("Ann", ann)
	assert.Equal(t, "(viewer)", role(again), "signed in again, a viewer")
	assert.Zero(t, devices(again), "the device subscribed under the old line is no longer notified")

	bo := addOp(t, nil, "Bo", "--operators-file", path)
	stderr.waitCount(t, "operators file read again", 2)
	boSession := signIn("Bo", bo)
	assert.Equal(t, "(answerer)", role(boSession), "an operator added signs in without a restart")
	subscribe(boSession, "https://push.example/bo-phone")

	require.NoError(t, os.WriteFile(path, []byte("not an operators file\n"), 0o600))
	stderr.waitCount(t, "the changed operators file is refused", 1)
	assert.Equal(t, "(answerer)", role(signIn("Bo", bo)), "the operators read before stay in force")
	assert.Equal(t, 1, devices(boSession), "and their devices")
}
