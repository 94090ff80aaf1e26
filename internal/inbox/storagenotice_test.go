package inbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storageErr is a journal error as the store reports it: Storage() is
// true for the storage's state (the disk full), false for one
// statement's own refusal.
type storageErr struct{ storage bool }

func (e storageErr) Error() string   { return "journal: settle: database or disk is full" }
func (e storageErr) Storage() bool   { return e.storage }
func (e storageErr) Explain() string { return "The disk that holds the answer journal is full." }

// refusingJournal refuses every Settle with refuse while it is set.
type refusingJournal struct {
	*MemoryJournal
	mu     sync.Mutex
	refuse error
}

func (j *refusingJournal) set(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.refuse = err
}

func (j *refusingJournal) Settle(commandID string, state SubmissionState, reason, detail string, at time.Time) error {
	j.mu.Lock()
	err := j.refuse
	j.mu.Unlock()
	if err != nil {
		return err
	}
	return j.MemoryJournal.Settle(commandID, state, reason, detail, at)
}

// The notice of a change the journal's storage refused is one however
// many it refuses, and goes once a write succeeds again (the store kept
// the refused changes and writes them first); the notice of a change
// refused for its own sake (lost) stays.
func TestStorageNoticeGoesWhenTheJournalWritesAgain(t *testing.T) {
	t.Parallel()
	j := &refusingJournal{MemoryJournal: NewMemoryJournal()}
	in := New(Options{Journal: j})
	ids := make([]CardID, 4)
	for i, r := range []string{"r1", "r2", "r3", "r4"} {
		in.Apply(request(t, r, int64(i), formData("")))
		ids[i] = cardIDOf(r)
		_, err := in.BeginSubmission(ids[i], sub("t"+r, "c"+r))
		require.NoError(t, err)
	}
	flush := func() { require.NoError(t, in.Flush(context.Background())) }
	storage := func() (n int) {
		for _, x := range in.Status().Notices {
			if x.Storage {
				n++
			}
		}
		return n
	}

	j.set(storageErr{storage: true})
	in.SettleSubmission(ids[0], "cr1", SubmissionAccepted, "", "")
	in.SettleSubmission(ids[0], "cr1", SubmissionRejected, "busy", "")
	flush()
	require.Len(t, in.Status().Notices, 1, "one notice for the fault")
	assert.Contains(t, in.Status().Notices[0].Message, "disk that holds the answer journal is full")
	assert.Equal(t, 1, storage())
	assert.True(t, in.JournalFault())

	j.set(nil)
	in.SettleSubmission(ids[1], "cr2", SubmissionAccepted, "", "")
	flush()
	assert.Empty(t, in.Status().Notices, "the journal writes again: the banner goes")
	assert.False(t, in.JournalFault())

	j.set(errors.Join(errors.New("constraint failed"), storageErr{storage: false}))
	in.SettleSubmission(ids[2], "cr3", SubmissionAccepted, "", "")
	flush()
	j.set(nil)
	in.SettleSubmission(ids[3], "cr4", SubmissionAccepted, "", "")
	flush()
	require.Len(t, in.Status().Notices, 1, "a change lost for its own sake stays said")
	assert.False(t, in.Status().Notices[0].Storage)
}
