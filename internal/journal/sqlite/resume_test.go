package sqlite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal"
)

// The resume scan on a real file: a post journaled with its command
// bytes by one process is restored onto its card by the next, handed back
// with the same id and bytes, and an over-age one is kept as not sent.
func TestJournalResumeScanAcrossProcesses(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	now := t0
	clock := func() time.Time { return now }
	ask := func(in *inbox.Inbox, id string, seq int64) inbox.CardID {
		req, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Time: t0.Format(time.RFC3339Nano), Source: "aep://h/agent", Agent: "builder",
			Session: "s1", Seq: aep.Int64(seq), Capture: "full", Data: aep.Request{Kind: aep.KindPermission, Prompt: "Deploy?",
				Options: []aep.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}})
		require.NoError(t, err)
		in.Apply(req)
		return inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: id}.CardID()
	}
	build := func(s inbox.Submission) ([]byte, error) { return []byte(`{"id":"` + s.CommandID + `"}`), nil }

	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	first := inbox.New(inbox.Options{Journal: j, Now: clock, Command: build})
	_, err = first.BeginSubmission(ask(first, "r-old", 0), inbox.Submission{Token: "t0", CommandID: "c-old", By: "alice", Answer: aep.Answer{Option: "no"}})
	require.NoError(t, err)
	now = now.Add(time.Hour)
	_, err = first.BeginSubmission(ask(first, "r1", 1), inbox.Submission{Token: "t1", CommandID: "c1", By: "alice", Answer: aep.Answer{Option: "yes"}})
	require.NoError(t, err)
	require.NoError(t, j.Close(), "the process ends before any ack")

	j = openAt(t, path, Options{Host: "h"})
	now = now.Add(time.Minute)
	second := inbox.New(inbox.Options{Journal: j, Now: clock})
	n, err := second.Restore()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	card := ask(second, "r-old", 0)
	ask(second, "r1", 1)
	again := second.Resume(10 * time.Minute)
	require.Len(t, again, 1)
	assert.Equal(t, "c1", again[0].CommandID)
	assert.Equal(t, `{"id":"c1"}`, string(again[0].Command), "the journaled bytes")
	assert.Equal(t, "alice", again[0].By)

	waiting, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "only the resent one still waits")
	c, ok := second.Card(card)
	require.True(t, ok)
	require.NotNil(t, c.Submission)
	assert.Equal(t, inbox.SubmissionNotSent, c.Submission.State)
	assert.Equal(t, inbox.ReasonTooOld, c.Submission.Reason)
}

// A queued answer (posted while the relay was away) is kept queued on the
// file, not settled, and comes back after a restart to be sent.
func TestJournalKeepsQueuedAcrossProcesses(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	now := t0
	clock := func() time.Time { return now }
	ask := func(in *inbox.Inbox) inbox.CardID {
		req, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Time: t0.Format(time.RFC3339Nano), Source: "aep://h/agent", Agent: "builder",
			Session: "s1", Seq: aep.Int64(1), Capture: "full", Data: aep.Request{Kind: aep.KindPermission, Prompt: "Deploy?",
				Options: []aep.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}})
		require.NoError(t, err)
		in.Apply(req)
		return inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r1"}.CardID()
	}
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	first := inbox.New(inbox.Options{Journal: j, Now: clock})
	id := ask(first)
	_, err = first.BeginSubmission(id, inbox.Submission{Token: "t1", CommandID: "c1", By: "alice", Answer: aep.Answer{Option: "yes"}})
	require.NoError(t, err)
	first.SettleSubmission(id, "c1", inbox.SubmissionQueued, "", "")
	page, err := j.History(t.Context(), journal.HistoryQuery{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, inbox.SubmissionQueued, page.Entries[0].Submission.State)
	assert.True(t, page.Entries[0].Submission.SettledAt.IsZero(), "queued is not settled")
	require.NoError(t, j.Close())

	j = openAt(t, path, Options{Host: "h"})
	second := inbox.New(inbox.Options{Journal: j, Now: clock})
	n, err := second.Restore()
	require.NoError(t, err)
	require.Equal(t, 1, n, "the queued answer is restored")
	ask(second)
	again := second.Resume(10 * time.Minute)
	require.Len(t, again, 1)
	assert.Equal(t, "c1", again[0].CommandID)
	assert.Equal(t, inbox.SubmissionSending, again[0].State, "handed to the respond path, which says queued again if the relay is away")
	c, ok := second.Card(id)
	require.True(t, ok)
	assert.Equal(t, inbox.SubmissionSending, c.Submission.State)
}
