package app

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// pushConfigOf reads GET {ui}subscriptions.
func pushConfigOf(t *testing.T, ui string) map[string]any {
	t.Helper()
	resp, err := http.Get(ui + "subscriptions")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return m
}

// serve with --vapid-subject offers push with a key kept in the journal
// (the same after a restart); a device subscribed through the UI is
// pushed the question the relay brings, signed with that key. Without
// the subject the page is told why push is off; a subject that is not
// mailto: or https: is a usage error.
func TestServeWithWebPush(t *testing.T) {
	t.Parallel()
	err := Run(context.Background(), []string{"serve", "--vapid-subject", "ops@example.com"}, envMap(map[string]string{"HOME": t.TempDir()}), nil, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Equal(t, 2, ExitCode(err))

	got := make(chan http.Header, 8)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(ps.Close)

	home, state := t.TempDir(), t.TempDir()
	db := filepath.Join(state, "j.db")
	var out *notifyBuffer
	start := func(env map[string]string) (string, string, func()) {
		out = newNotifyBuffer()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", db}, envMap(env), nil, out, out)
		}()
		out.waitFor(t, "aepforms UI listening on http://", "relay listening on http://")
		ui := regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(out.String())[1]
		relay := "http://" + listening.FindStringSubmatch(out.String())[1]
		return ui, relay, func() { cancel(); require.NoError(t, <-done) }
	}

	ui, _, stop := start(map[string]string{"HOME": home})
	cfg := pushConfigOf(t, ui)
	assert.Equal(t, false, cfg["enabled"])
	assert.NotContains(t, cfg["off"], "--vapid-subject", "the page speaks the operator's words")
	assert.Contains(t, out.String(), "--vapid-subject", "the log names the flag")
	stop()

	env := map[string]string{"HOME": home, "AEPFORMS_VAPID_SUBJECT": "mailto:ops@example.com", "AEPFORMS_PUSH_ALLOW_LOOPBACK": "1"}
	ui, _, stop = start(env)
	cfg = pushConfigOf(t, ui)
	require.Equal(t, true, cfg["enabled"])
	key := cfg["key"].(string)
	require.NotEmpty(t, key)
	stop()

	ui, relayURL, stop := start(env)
	defer stop()
	cfg = pushConfigOf(t, ui)
	assert.Equal(t, key, cfg["key"], "the key kept in the journal")

	k, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	sub, _ := json.Marshal(map[string]any{"endpoint": ps.URL + "/device", "keys": map[string]string{
		"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), "auth": base64.RawURLEncoding.EncodeToString(make([]byte, 16))}})
	req, _ := http.NewRequest(http.MethodPost, ui+"subscriptions", bytes.NewReader(sub))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", strings.TrimSuffix(ui, "/"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	token, err := loadOrMintTokenAt(filepath.Join(home, ".config", "aepforms", "relay-token"))
	require.NoError(t, err)
	line := samples.Requested("q1", "s1", 1, samples.DeployForm())
	// The UI's feed may connect after the emit: the relay replays what
	// it buffered, so the question arrives either way.
	req, _ = http.NewRequest(http.MethodPost, relayURL+"/events", bytes.NewReader(line))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("AEP-Version", "0.1")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)

	select {
	case h := <-got:
		assert.Equal(t, "aes128gcm", h.Get("Content-Encoding"))
		assert.True(t, strings.HasSuffix(h.Get("Authorization"), ", k="+key), "signed with the journal's key: %s", h.Get("Authorization"))
	case <-time.After(15 * time.Second):
		t.Fatal("no push for the relay's question")
	}
}

// loadOrMintTokenAt reads the relay token serve minted.
func loadOrMintTokenAt(path string) (string, error) {
	tok, _, err := loadOrMintToken(path)
	return tok, err
}

// Replicas sharing a PostgreSQL journal and a relay push each question
// once: one claims it in the journal, the other says (in its debug log)
// that another replica pushes it, and the device receives one push.
func TestReplicasPushAQuestionOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	const token = "replica-push-relay-token"
	relayURL, _, _ := startRelayCommand(t, map[string]string{"AEP_PORT": "0", "AEP_TOKEN": token})

	got := make(chan struct{}, 8)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- struct{}{}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(ps.Close)

	ctx, cancel := context.WithCancel(context.Background())
	var logs []*notifyBuffer
	var uis []string
	dones := make([]chan error, 2)
	for i := range 2 {
		out := newNotifyBuffer()
		done := make(chan error, 1)
		dones[i] = done
		go func() {
			done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay", relayURL, "--log-level", "debug"},
				envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB": db, "AEP_TOKEN": token,
					"AEPFORMS_VAPID_SUBJECT": "https://example.com/ops", "AEPFORMS_PUSH_ALLOW_LOOPBACK": "1"}), nil, out, out)
		}()
		out.waitFor(t, "aepforms UI listening on http://")
		logs = append(logs, out)
		uis = append(uis, regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(out.String())[1])
	}
	t.Cleanup(func() {
		cancel()
		for _, d := range dones {
			require.NoError(t, <-d)
		}
	})
	assert.Equal(t, pushConfigOf(t, uis[0])["key"], pushConfigOf(t, uis[1])["key"], "one VAPID key for both")

	k, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	sub, _ := json.Marshal(map[string]any{"endpoint": ps.URL + "/device", "keys": map[string]string{
		"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), "auth": base64.RawURLEncoding.EncodeToString(make([]byte, 16))}})
	req, _ := http.NewRequest(http.MethodPost, uis[0]+"subscriptions", bytes.NewReader(sub))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", strings.TrimSuffix(uis[0], "/"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	req, _ = http.NewRequest(http.MethodPost, relayURL+"/events", bytes.NewReader(samples.Requested("q1", "s1", 1, samples.DeployForm())))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("AEP-Version", "0.1")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)

	// Both replicas have decided: one pushes, the other leaves it.
	deadline := time.After(15 * time.Second)
	for {
		all := logs[0].String() + logs[1].String()
		if strings.Count(all, "push: this replica pushes this question") == 1 && strings.Count(all, "push: another replica pushes this question") == 1 {
			break
		}
		select {
		case <-logs[0].wrote:
		case <-logs[1].wrote:
		case <-deadline:
			t.Fatalf("the replicas did not both decide:\n%s\n%s", logs[0].String(), logs[1].String())
		}
	}
	select {
	case <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("no push")
	}
	assert.Empty(t, got, "one push, not one per replica")
}
