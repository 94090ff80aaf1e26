package sqlite

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// What Record keeps comes back whole from Unsettled, after a reopen too;
// Settle moves it, and only sending and accepted submissions are
// unsettled, oldest first.
func TestRecordSettleUnsettledRoundTrip(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)

	want := make([]inbox.Submission, 5)
	for i := range want {
		want[i] = submission(cmdID(i), t0.Add(time.Duration(i)*time.Second))
		require.NoError(t, j.Record(want[i]))
	}
	assert.ErrorIs(t, j.Record(want[0]), ErrDuplicate, "a command id is recorded once")

	at := t0.Add(time.Minute)
	require.NoError(t, j.Settle(cmdID(1), inbox.SubmissionAccepted, "", "", at))
	require.NoError(t, j.Settle(cmdID(2), inbox.SubmissionRejected, "invalid", "no such release", at))
	require.NoError(t, j.Settle(cmdID(3), inbox.SubmissionFailed, inbox.ReasonTimeout, "", at))
	require.NoError(t, j.Settle(cmdID(4), inbox.SubmissionFailed, inbox.ReasonUnreachable, "", at))
	require.NoError(t, j.Settle(cmdID(4), inbox.SubmissionSending, "", "", at.Add(time.Second)), "a resend")
	require.NoError(t, j.Settle("unknown", inbox.SubmissionAccepted, "", "", at), "an unknown command is ignored")
	require.NoError(t, j.Close())

	j = openAt(t, path, Options{Host: "h"})
	got, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, got, 3, "sending (0, 4 resent) and accepted (1)")
	want[1].State, want[1].SettledAt = inbox.SubmissionAccepted, at
	for i, w := range []inbox.Submission{want[0], want[1], want[4]} {
		assertSameSubmission(t, w, got[i])
	}
}

// assertSameSubmission compares two submissions, their times as instants.
func assertSameSubmission(t *testing.T, want, got inbox.Submission) {
	t.Helper()
	assert.True(t, want.At.Equal(got.At), "%s At: got %v, want %v", want.CommandID, got.At, want.At)
	assert.True(t, want.SettledAt.Equal(got.SettledAt), "%s SettledAt: got %v, want %v", want.CommandID, got.SettledAt, want.SettledAt)
	want.At, want.SettledAt, got.At, got.SettledAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	assert.Equal(t, want, got)
}

// Records that arrive while a commit is in progress are committed
// together in the next one: every waiting post is kept, and a duplicate
// among them fails only its own Record.
func TestRecordsWaitingForACommitAreCommittedTogether(t *testing.T) {
	t.Parallel()
	j := openAt(t, tempPath(t), Options{Host: "h"})
	require.NoError(t, j.Record(submission(cmdID(0), t0)))

	j.writeMu.Lock() // a commit in progress
	results := make(chan error, 4)
	for i := range 4 {
		go func() { results <- j.Record(submission(cmdID(i), t0.Add(time.Duration(i)*time.Second))) }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		j.recordMu.Lock()
		n := len(j.recordQueue)
		j.recordMu.Unlock()
		if n == 4 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d of 4 Records queued", n)
		runtime.Gosched()
	}
	j.writeMu.Unlock()

	dups := 0
	for range 4 {
		if err := <-results; err != nil {
			require.ErrorIs(t, err, ErrDuplicate)
			dups++
		}
	}
	assert.Equal(t, 1, dups, "only cmd-0, recorded before, is refused")
	got, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, got, 4)
	for i, s := range got {
		assert.Equal(t, cmdID(i), s.CommandID)
	}
}
