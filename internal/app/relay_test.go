package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/relay"
)

var listening = regexp.MustCompile(`relay listening on http://(\S+?)"?\s`)

// startRelayCommand runs `aepforms relay args...` with env and returns
// its base URL, its stderr and a function that stops it and returns
// Run's error.
func startRelayCommand(t *testing.T, env map[string]string, args ...string) (string, *notifyBuffer, func() error) {
	t.Helper()
	stderr := newNotifyBuffer()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, append([]string{"relay"}, args...), func(k string) string { return env[k] }, nil, &bytes.Buffer{}, stderr)
	}()
	stderr.waitFor(t, "relay listening on http://")
	m := listening.FindStringSubmatch(stderr.String())
	require.NotNil(t, m, "log: %s", stderr.String())
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("relay did not stop after its ctx ended")
			return nil
		}
	}
	t.Cleanup(func() { cancel() })
	return "http://" + m[1], stderr, stop
}

func getJSON(t *testing.T, url, token string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return m
}

func TestRelayCommandServesAndDrains(t *testing.T) {
	t.Parallel()
	const token = "relay-cmd-s3cret"
	base, stderr, stop := startRelayCommand(t, map[string]string{"AEP_PORT": "0", "AEP_TOKEN": token, "AEP_BUFFER": "77"})
	d := getJSON(t, base+"/events", token)
	assert.Equal(t, 77.0, d["capabilities"].(map[string]any)["replay"].(map[string]any)["buffer"], "AEP_BUFFER reaches the relay")
	assert.Equal(t, map[string]any{"ok": true}, getJSON(t, base+"/healthz", ""))

	require.NoError(t, stop(), "a drained relay exits 0")
	out := stderr.String()
	assert.Contains(t, out, "relay auth: token required")
	assert.Contains(t, out, "relay drained")
	assert.NotContains(t, out, token, "the token is never logged")
}

func TestRelayCommandFlagsWinOverEnv(t *testing.T) {
	t.Parallel()
	base, stderr, stop := startRelayCommand(t, map[string]string{"AEP_PORT": "1", "AEP_BUFFER": "77"}, "--port", "0", "--buffer", "9", "--host", "127.0.0.1")
	d := getJSON(t, base+"/events", "")
	assert.Equal(t, 9.0, d["capabilities"].(map[string]any)["replay"].(map[string]any)["buffer"])
	assert.Contains(t, stderr.String(), "relay auth: open, watch-only: commands refused")
	assert.Contains(t, getJSON(t, base+"/healthz", ""), "sessions", "open posture: counts for anyone")
	require.NoError(t, stop())
}

func TestRelayCommandUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"bad env number", map[string]string{"AEP_BUFFER": "lots"}, nil, "AEP_BUFFER"},
		{"bad env port", map[string]string{"AEP_PORT": "70000"}, nil, "port 70000"},
		{"zero buffer", nil, []string{"--buffer", "0"}, "--buffer must be positive"},
		{"unknown flag", nil, []string{"--nope"}, "flag provided but not defined"},
		{"extra argument", nil, []string{"now"}, `unexpected argument "now"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := Run(t.Context(), append([]string{"relay"}, tc.args...), func(k string) string { return tc.env[k] }, nil, io.Discard, &stderr)
			assert.Equal(t, 2, ExitCode(err), "usage errors exit 2: %v", err)
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
	var stderr bytes.Buffer
	err := Run(t.Context(), []string{"relay", "-h"}, func(string) string { return "" }, nil, io.Discard, &stderr)
	assert.NoError(t, err)
	for _, name := range []string{"-host", "-port", "-token", "-buffer", "-max-sessions", "-max-body", "-max-batch", "-max-from", "AEP_MAX_FROM"} {
		assert.Contains(t, stderr.String(), name)
	}
}

func TestRelayCommandNeverPrintsTheToken(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	env := map[string]string{"AEP_TOKEN": "do-not-print-me"}
	_ = Run(t.Context(), []string{"relay", "-h"}, func(k string) string { return env[k] }, nil, io.Discard, &stderr)
	assert.NotContains(t, stderr.String(), "do-not-print-me")
}

// TestStartRelayForcesAStuckDrain: a socket peer that never answers the
// close handshake holds the drain past its limit; the relay is forced and
// the error carries exit status 1.
func TestStartRelayForcesAStuckDrain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rc := relay.DefaultConfig()
	rc.Token = "drain-token"
	addr, wait, err := startRelay(ctx, relayServerConfig{Addr: "127.0.0.1:0", Relay: rc, Drain: 100 * time.Millisecond}, nil)
	require.NoError(t, err)

	dctx, dcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer dcancel()
	c, _, err := websocket.Dial(dctx, "ws://"+addr+"/socket?access_token=drain-token", nil)
	require.NoError(t, err)
	defer c.CloseNow()
	require.NoError(t, c.Write(dctx, websocket.MessageText, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer"}`)))
	_, _, err = c.Read(dctx)
	require.NoError(t, err)
	// From here on the client reads nothing, so it never answers close.

	cancel()
	start := time.Now()
	err = wait()
	require.Error(t, err)
	assert.Equal(t, 1, ExitCode(err), "a forced drain exits 1: %v", err)
	assert.Less(t, time.Since(start), 3*time.Second, "forced at the drain limit, not at the peer's leisure")
}

// AEP_BUFFER_BYTES bounds the embedded relay's replay buffers in bytes.
func TestRelayBufferBytesFromEnv(t *testing.T) {
	t.Parallel()
	rs, err := embeddedRelaySettings(func(k string) string {
		return map[string]string{"AEP_BUFFER_BYTES": "1048576"}[k]
	})
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), rs.config(nil).BufferBytes)
	d, err := embeddedRelaySettings(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, int64(64<<20), d.config(nil).BufferBytes, "default 64 MiB")
	_, err = embeddedRelaySettings(func(k string) string {
		return map[string]string{"AEP_BUFFER_BYTES": "0"}[k]
	})
	require.Error(t, err, "a zero bound is refused")
}
