package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// smallDisk mounts a tmpfs of size (mount's size=, "4m") and returns its
// directory, unmounted when the test ends. It skips with a message where
// a tmpfs cannot be mounted (not root); under CI=true it fails if
// mounting is possible and does not work.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o700))
	if _, err := exec.LookPath("mount"); err != nil || os.Geteuid() != 0 {
		t.Skip("disk-full test skipped: mounting a small tmpfs needs root and mount(8)")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
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
	return dir
}

// fill writes dir/filler until the disk is full, and returns a function
// that removes it (room again).
func fill(t *testing.T, dir string) (free func()) {
	t.Helper()
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
	return func() { require.NoError(t, os.Remove(filler)) }
}

// diskFullNotice is the banner of a state change the full disk refused.
const diskFullNotice = "The disk that holds the answer journal is full"

// TestDiskFullBannerClearsWhenWritesSucceedAgain: the UI's journal is on
// a small disk. An answer is kept; the disk fills while the agent holds
// the command; the agent then acts on it and the journal cannot keep what
// became of it: the page says so. Room is made: the journal writes again
// (what it refused, then what follows), the banner goes, and the card
// shows the answer recorded.
func TestDiskFullBannerClearsWhenWritesSucceedAgain(t *testing.T) {
	t.Parallel()
	dir := smallDisk(t, "4m")
	s := startStack(t, stackOptions{uiEnv: map[string]string{"AEPFORMS_DB": filepath.Join(dir, "answers.db")}})
	gate := newCommandGate()
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, gate: gate})
	sess, _ := askedRequest(t, ag, agent.ScenarioPermission)
	s.awaitRoster(t, sess.ID, true)
	_, _, f := s.openForm(t, sess.ID)

	resume := gate.hold()
	posted := s.submit(t, f, f.button(t, "Deny"), "")
	require.Equal(t, http.StatusSeeOther, posted.status, "the answer is kept before the disk fills; body: %s", posted.body)
	free := fill(t, dir)
	resume() // the agent acts on it now: what became of it cannot be kept

	notice := func(d *goquery.Document) bool {
		return strings.Contains(d.Find(`[data-testid="notice"]`).Text(), diskFullNotice)
	}
	s.awaitPage(t, "the disk-full banner", notice)
	free()
	s.awaitPage(t, "the banner gone once the journal writes again", func(d *goquery.Document) bool { return !notice(d) })
	s.awaitCard(t, sess.ID, "the answer recorded", func(c *goquery.Selection) bool {
		return c.AttrOr("data-state", "") == "answered"
	})
}
