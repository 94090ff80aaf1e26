package app

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve's journal on a small tmpfs: when the disk fills, /readyz answers
// 503 with "database":false and the reason in the operator's words (no
// file name); when room is made, it is ready again. Skips with a message
// where a tmpfs cannot be mounted (not root); under CI=true, fails if
// mounting is possible and does not work.
func TestServeIsNotReadyWhileItsDiskIsFull(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o700))
	if _, err := exec.LookPath("mount"); err != nil || os.Geteuid() != 0 {
		t.Skip("disk-full test skipped: mounting a small tmpfs needs root and mount(8)")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, running as root, and mounting a tmpfs failed: %v: %s", err, out)
		}
		t.Skipf("disk-full test skipped: mounting a tmpfs failed (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	path := filepath.Join(dir, "answers.db")
	out := newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", path},
			envMap(map[string]string{"HOME": t.TempDir()}), nil, out, out)
	}()
	out.waitFor(t, "aepforms UI listening on http://")
	base := regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(out.String())[1]
	ready := func() (int, map[string]any, string) {
		t.Helper()
		resp, err := http.Get(base + "readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		b, _ := json.Marshal(body)
		return resp.StatusCode, body, string(b)
	}
	_, body, _ := ready()
	assert.Equal(t, true, body["database"], "the journal takes writes: %v", body)

	filler := filepath.Join(dir, "filler")
	f, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	for block := make([]byte, 4096); ; {
		if _, err := f.Write(block); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	require.NoError(t, f.Close())
	status, body, raw := ready()
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, false, body["database"])
	assert.Contains(t, body["reason"], "disk that holds the answer journal is full")
	assert.NotContains(t, raw, "answers.db", "no file name on an unauthenticated route")

	require.NoError(t, os.Remove(filler))
	_, body, _ = ready()
	assert.Equal(t, true, body["database"], "ready again once there is room: %v", body)
	cancel()
	require.NoError(t, <-done)
}
