package app

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envMap is a getenv over a map.
func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServeRefusesNonLoopbackWithoutOperatorSecret(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.10:8080"} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			stderr := newNotifyBuffer()
			err := Run(context.Background(), []string{"serve", "--addr", addr}, envMap(nil), nil, stderr, stderr)
			require.Error(t, err, "serve on %s without a secret must not start", addr)
			assert.Contains(t, stderr.String(), "--operator-token", "the message says what to set")
			assert.Contains(t, stderr.String(), "AEPFORMS_OPERATOR_TOKEN")
			assert.Equal(t, 1, ExitCode(err))
		})
	}
}

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"tls cert without key":  {"--tls-cert", "c.pem"},
		"relay not a URL":       {"--relay", "127.0.0.1:8787"},
		"stray argument":        {"extra"},
		"bad log format":        {"--log-format", "xml", "--relay-port", "0", "--addr", "127.0.0.1:0"},
		"bad log level":         {"--log-level", "bogus", "--relay-port", "0", "--addr", "127.0.0.1:0"},
		"addr without a port":   {"--addr", "nonsense"},
		"negative interval":     {"--demo-every", "-5s"},
		"negative body timeout": {"--body-timeout", "-1s"},
		"no connections":        {"--max-conns", "0"},
		"origin without scheme": {"--embed-origin", "mc.example"},
		"negative retention":    {"--history-retention", "-5d"},
		"retention not a span":  {"--history-retention", "forever"},
		"negative resend age":   {"--resend-max-age", "-1m"},
		"negative settled kept": {"--settled-kept", "-1"},
		"no lease":              {"--lease", "0s"},
		"negative lease":        {"--lease", "-1s"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stderr := newNotifyBuffer()
			err := Run(context.Background(), append([]string{"serve"}, args...), envMap(map[string]string{"HOME": t.TempDir()}), nil, stderr, stderr)
			require.Error(t, err)
			assert.Equal(t, 2, ExitCode(err), "a usage error exits 2: %v", err)
			assert.Contains(t, stderr.String(), "aepforms serve: ", "the problem is printed, not just the exit status")
		})
	}
}

// TestServeMintsAPrivateTokenAndServes starts serve with the embedded
// relay and no AEP_TOKEN: it mints a token into a file only the user can
// read, logs the file's path but never the token, and serves the UI.
func TestServeMintsAPrivateTokenAndServes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	stderr := newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0"}, envMap(map[string]string{"HOME": home}), nil, stderr, stderr)
	}()
	stderr.waitFor(t, "aepforms UI listening on http://")
	path := filepath.Join(home, ".config", "aepforms", "relay-token")
	st, err := os.Stat(path)
	require.NoError(t, err, "the minted token is written under the user's config directory")
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "only the user may read the token file")
	tok, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Len(t, strings.TrimSpace(string(tok)), 64, "256 random bits, hex")
	assert.Contains(t, stderr.String(), path, "the log names the token file")
	assert.NotContains(t, stderr.String(), strings.TrimSpace(string(tok)), "the log never holds the token")

	url := regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(stderr.String())[1]
	resp, err := http.Get(url + "healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	require.NoError(t, <-done, "serve stops cleanly when its context ends")

	// A second start reuses the same token (local adapters keep working).
	tok2, _, err := loadOrMintToken(path)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(tok)), tok2)
}

func TestServeNamesTheWaysOnWhenTheRelayPortIsTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	stderr := newNotifyBuffer()
	err = Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", itoa(port)},
		envMap(map[string]string{"HOME": t.TempDir()}), nil, stderr, stderr)
	require.Error(t, err)
	msg := stderr.String()
	assert.Contains(t, msg, "--relay http://127.0.0.1:"+itoa(port), "names using the running relay")
	assert.Contains(t, msg, "--relay-port", "names moving the embedded relay")
}

func TestTokenFileReadableByOthersIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "relay-token")
	require.NoError(t, os.WriteFile(path, []byte("abc\n"), 0o644))
	_, _, err := loadOrMintToken(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chmod 600")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://mc.example.com", "http://127.0.0.1:3000", "https://mc.example:8443"} {
		assert.NoError(t, checkOrigin(ok), ok)
	}
	for _, bad := range []string{"https://mc *", "mc.example.com", "https://mc.example/", "https://mc.example/path",
		"ftp://mc.example", "https://user@mc.example", "https://mc.example?x=1", "https://a.example https://b.example"} {
		assert.Error(t, checkOrigin(bad), bad)
	}
}

func TestServeRefusesABadTLSKeyPairBeforeListening(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, []byte("not a certificate"), 0o600))
	require.NoError(t, os.WriteFile(key, []byte("not a key"), 0o600))
	stderr := newNotifyBuffer()
	err := Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--tls-cert", cert, "--tls-key", key},
		envMap(map[string]string{"HOME": t.TempDir()}), nil, stderr, stderr)
	require.Error(t, err)
	assert.Contains(t, stderr.String(), "--tls-cert")
	assert.NotContains(t, stderr.String(), "listening on", "nothing started")
}

func TestServeNamesTheWayOnWhenTheUIAddressIsTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	home := t.TempDir()
	stderr := newNotifyBuffer()
	err = Run(context.Background(), []string{"serve", "--addr", ln.Addr().String(), "--relay-port", "0"},
		envMap(map[string]string{"HOME": home}), nil, stderr, stderr)
	require.Error(t, err)
	assert.Contains(t, stderr.String(), "--addr", "names the way on")
	assert.NotContains(t, stderr.String(), "relay listening", "nothing else started")
	_, statErr := os.Stat(filepath.Join(home, ".config", "aepforms", "relay-token"))
	assert.True(t, os.IsNotExist(statErr), "no token minted for a start that failed")
}

// A short operator secret is guessed: serve refuses it and offers a
// freshly generated one, never echoing the one it was given.
func TestServeRefusesAShortOperatorSecret(t *testing.T) {
	t.Parallel()
	for name, run := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"flag": {args: []string{"--operator-token", "hunter2-short"}},
		"env":  {env: map[string]string{"AEPFORMS_OPERATOR_TOKEN": "hunter2-short"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stderr := newNotifyBuffer()
			env := map[string]string{"HOME": t.TempDir()}
			for k, v := range run.env {
				env[k] = v
			}
			err := Run(context.Background(), append([]string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0"}, run.args...), envMap(env), nil, stderr, stderr)
			require.Error(t, err, "a 13-character secret must not start the UI")
			assert.Equal(t, 2, ExitCode(err))
			out := stderr.String()
			assert.Contains(t, out, "at least 16")
			assert.NotContains(t, out, "hunter2-short", "the given secret is not echoed")
			assert.Regexp(t, regexp.MustCompile(`(?m)^  [0-9a-f]{64}$`), out, "a fresh secret to use is printed")
		})
	}
}

// TestServeDemoSaysWhatToOpenLast: with --demo, the URL to open is the
// start-up log's last line, after the parts said they started and the
// demo agent's questions were asked.
func TestServeDemoSaysWhatToOpenLast(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	stderr := newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--demo", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", filepath.Join(home, "db.sqlite")},
			envMap(map[string]string{"HOME": home}), nil, stderr, stderr)
	}()
	stderr.waitFor(t, "in your browser")
	log := stderr.String()
	open := strings.Index(log, "in your browser")
	for _, part := range []string{"feed: connected", "relay connected", "connected to relay", "request asked"} {
		i := strings.Index(log, part)
		require.GreaterOrEqual(t, i, 0, "the log has %q", part)
		assert.Less(t, i, open, "%q comes before the URL to open", part)
	}
	assert.Regexp(t, `open http://127\.0\.0\.1:\d+/ in your browser`, log)
	cancel()
	require.NoError(t, <-done)
}
