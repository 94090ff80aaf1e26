package sqlite

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
)

// Records that arrive while a commit is in progress are committed
// together in the next one: every waiting post is kept, and a duplicate
// or a second live answer to one request among them fails only its own
// Record.
func TestRecordsWaitingForACommitAreCommittedTogether(t *testing.T) {
	t.Parallel()
	j := openAt(t, tempPath(t), Options{Host: "h"})
	require.NoError(t, j.Record(submission(cmdID(0), t0)))

	j.writeMu.Lock() // a commit in progress
	results := make(chan error, 5)
	for i := range 4 {
		go func() { results <- j.Record(submission(cmdID(i), t0.Add(time.Duration(i)*time.Second))) }()
	}
	rival := submission("rival", t0.Add(time.Minute))
	rival.Key = submission(cmdID(3), t0).Key // a second live answer to cmd-3's request
	go func() { results <- j.Record(rival) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j.recordMu.Lock()
		n := len(j.recordQueue)
		j.recordMu.Unlock()
		if n == 5 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d of 5 Records queued", n)
		runtime.Gosched()
	}
	j.writeMu.Unlock()

	dups, live := 0, 0
	for range 5 {
		switch err := <-results; {
		case err == nil:
		case errors.Is(err, ErrDuplicate):
			dups++
		default:
			require.ErrorIs(t, err, store.ErrLive)
			live++
		}
	}
	assert.Equal(t, 1, dups, "only cmd-0, recorded before, is refused as a duplicate")
	assert.Equal(t, 1, live, "one of cmd-3 and rival is refused: one live answer per request")
	got, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, got, 4)
}
