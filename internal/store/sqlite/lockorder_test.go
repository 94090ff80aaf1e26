package sqlite

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// A lease renewal and state changes made at once (the inbox's journal
// writer settles while the app renews its leases) never wait on each
// other for good: each takes the write lock and the health lock in the
// same order.
func TestRenewAndSettleAtOnceFinish(t *testing.T) {
	t.Parallel()
	j := openAt(t, filepath.Join(t.TempDir(), "aepforms.db"), Options{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 200 {
			_ = j.Renew(time.Now())
		}
	})
	wg.Go(func() {
		for range 200 {
			_, _ = j.Claim("c1", time.Now())
		}
	})
	wg.Go(func() {
		for range 200 {
			_ = j.Settle("c1", inbox.SubmissionAccepted, "", "", time.Now())
		}
	})
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("renewals, claims and settles made at once did not finish in 30 s: the locks are taken in opposite orders")
	}
}
