package sqlite

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// Settles (the inbox's, under its lock), lease renewals and claims (the
// reclaim loop's) and Pings (/readyz) run at once without waiting on
// each other for ever: the journal's write lock and its health's lock
// are always taken in one order. (A Renew that reported to the health
// while holding the write lock deadlocked against a Settle.)
func TestSettleRenewClaimAndPingRunTogether(t *testing.T) {
	t.Parallel()
	j := openAt(t, tempPath(t), Options{})
	const n = 200
	for i := range n {
		require.NoError(t, j.Record(submission(cmdID(i), t0)))
	}
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		for i := range n {
			_ = j.Settle(cmdID(i), inbox.SubmissionAccepted, "", "", t0.Add(time.Second))
		}
	}()
	go func() {
		defer wg.Done()
		for range n {
			_ = j.Renew(t0)
		}
	}()
	go func() {
		defer wg.Done()
		for i := range n {
			_, _ = j.Claim(cmdID(i), t0)
		}
	}()
	go func() {
		defer wg.Done()
		for range n {
			_ = j.Ping(t.Context())
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		// Not t.Fatal: the journal's Close (a cleanup) would wait on the
		// same locks for ever. A panic ends the test binary with every
		// goroutine's stack: the deadlock's two sides.
		panic("settles, renewals, claims and pings did not finish within 60 s: a lock-order deadlock")
	}
}
