package sqlite

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal"
)

// Behind the inbox, the journal keeps a post before BeginSubmission
// returns (so before its command can be sent), and every state after;
// a new process finds them in the file.
func TestTheInboxWritesAheadIntoTheJournal(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	now := t0
	in := inbox.New(inbox.Options{Journal: j, Now: func() time.Time { return now }, OwnSources: []string{j.Identity().Source}})
	req, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Time: t0.Format(time.RFC3339Nano), Source: "aep://h/agent", Agent: "builder",
		Session: "s1", Seq: aep.Int64(0), Capture: "full", Data: aep.Request{Kind: aep.KindForm, Prompt: "Which release?",
			Fields: []aep.FieldSpec{{ID: "name", Type: aep.FieldString, Label: "Name", Required: true}}}})
	require.NoError(t, err)
	in.Apply(req)
	id := in.Cards(inbox.Query{})[0].ID

	posted, err := in.BeginSubmission(id, inbox.Submission{Token: "t1", CommandID: "c1", By: "alice",
		Answer: aep.Answer{Values: aep.Values{"name": "v1.2"}}, Form: url.Values{"f0": {"v1.2"}}})
	require.NoError(t, err)
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "kept before BeginSubmission returned")
	assertSameSubmission(t, posted, waiting[0])
	assert.Equal(t, "Which release?", waiting[0].Question)
	assert.Equal(t, "builder", waiting[0].Agent)

	now = now.Add(time.Second)
	in.SettleSubmission(id, "c1", inbox.SubmissionRejected, "invalid", "no such release")
	require.NoError(t, j.Close(), "the process ends")

	j = openAt(t, path, Options{Host: "h"})
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	assert.Empty(t, waiting, "the rejection was kept")
	page, err := j.History(context.Background(), journal.HistoryQuery{Operator: "alice"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	e := page.Entries[0]
	assert.Equal(t, inbox.SubmissionRejected, e.State)
	assert.Equal(t, "no such release", e.Detail)
	assert.True(t, e.SettledAt.Equal(t0.Add(time.Second)))
	require.Len(t, e.Changes, 2)
	assert.Equal(t, []inbox.SubmissionState{inbox.SubmissionSending, inbox.SubmissionRejected}, []inbox.SubmissionState{e.Changes[0].State, e.Changes[1].State})
}
