package sqlite

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// smallDisk mounts a tmpfs of size bytes and returns its directory,
// unmounted when the test ends. Where mounting is not allowed (not
// root, no mount(8)) it skips with a message; under CI=true it fails
// instead only when mounting is possible and still did not work.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o700))
	mount, err := exec.LookPath("mount")
	canMount := err == nil && os.Geteuid() == 0
	if !canMount {
		t.Skip("disk-full test skipped: mounting a small tmpfs needs root and mount(8); run it as root to see the journal on a full disk")
	}
	out, err := exec.Command(mount, "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, running as root, and mounting a tmpfs failed: %v: %s", err, out)
		}
		t.Skipf("disk-full test skipped: mounting a tmpfs failed (%v: %s); it needs a root that may mount", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file into dir until the disk is full and returns its
// path: removing it frees the disk.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC, "the disk fills")
			return p
		}
	}
}

// On a full disk: a post is refused with the disk named as full in the
// operator's words (the file only in the detail); Ping, /readyz's check,
// says so; a state change the disk refused is kept and written once the
// disk has room, before Ping says the journal is ready again, so after a
// restart the answer does not read "sending".
func TestAFullDiskIsReportedAndItsStatesAreWrittenOnceItHasRoom(t *testing.T) {
	dir := smallDisk(t, "4m")
	path := filepath.Join(dir, "aepforms.db")
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	ctx := context.Background()
	const sent = 20
	for i := range sent {
		require.NoError(t, j.Record(submission(cmdID(i), t0)))
	}
	require.NoError(t, j.Ping(ctx), "ready while the disk has room")

	filler := fill(t, dir)
	var full error
	for i := sent; i < sent+2000 && full == nil; i++ {
		full = j.Record(submission(cmdID(i), t0))
	}
	require.Error(t, full, "a post is refused once the disk is full")
	var f *store.Fault
	require.True(t, errors.As(full, &f), "a *store.Fault: got %T %v", full, full)
	assert.Equal(t, store.FaultFull, f.Kind, "the disk is full: %v", full)
	assert.Contains(t, f.Explain(), "disk that holds the answer journal is full")
	assert.NotContains(t, f.Explain(), dir, "the page is not told the file")

	err = j.Ping(ctx)
	require.Error(t, err, "not ready while the disk is full")
	assert.Contains(t, store.Explain(err), "is full")

	// The agent accepted and then recorded the answers it ran while the
	// disk was full: those changes are refused now, not lost.
	var refused int
	for i := range sent {
		if err := j.Settle(cmdID(i), inbox.SubmissionAccepted, "", "", t0.Add(1)); err != nil {
			require.ErrorAs(t, err, &f)
			assert.Equal(t, store.FaultFull, f.Kind)
			refused++
		}
		_ = j.KeepRecorded(cmdID(i), inbox.Recorded{}, t0.Add(2))
	}
	require.Positive(t, refused, "the full disk refused state changes")
	waiting, _ := j.health.Backlog()
	assert.Positive(t, waiting, "they wait for room")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, j.Ping(ctx), "ready once the disk has room")
	waiting, dropped := j.health.Backlog()
	assert.Zero(t, waiting, "the refused changes were written")
	assert.Zero(t, dropped)
	require.NoError(t, j.Close())

	j, err = Open(path, Options{Host: "h"})
	require.NoError(t, err)
	unsettled, err := j.Unsettled()
	require.NoError(t, err)
	assert.Empty(t, unsettled, "after a restart no answer the agent recorded reads sending")
	for i := range sent {
		s, ok, err := j.Lookup(cmdID(i))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, inbox.SubmissionAccepted, s.State, "%s", cmdID(i))
	}
}
