package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// permissionEvent builds one event of the permission request r1 in
// session s1, at seq.
func permissionEvent(t *testing.T, typ, id, subject, cause string, seq int64, data any) *aep.Event {
	t.Helper()
	e, err := aep.Build(aep.Envelope{ID: id, Type: typ, Subject: subject, Cause: cause, Time: t0.Format(time.RFC3339Nano),
		Source: "aep://h/agent", Agent: "builder", Session: "s1", Seq: aep.Int64(seq), Capture: "full", Data: data})
	require.NoError(t, err)
	return e
}

var permission = aep.Request{Kind: aep.KindPermission, Prompt: "Delete the branch?",
	Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}}

// What the agent recorded for this UI's answer is kept against the
// submission: the submission is settled for good (a restart no longer
// restores it as waiting), History shows it with the request's options,
// and the next process brings the card back settled, as this UI's answer,
// though the relay no longer holds its events.
func TestWhatTheAgentRecordedIsKept(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	now := t0
	clock := func() time.Time { return now }
	in := inbox.New(inbox.Options{Journal: j, Now: clock, OwnSources: []string{j.Identity().Source}})
	in.Apply(permissionEvent(t, "attention.requested", "r1", "", "", 0, permission))
	id := in.Cards(inbox.Query{})[0].ID
	_, err = in.BeginSubmission(id, inbox.Submission{Token: "t1", CommandID: "c1", By: "alice", Answer: aep.Answer{Option: "allow"}})
	require.NoError(t, err)
	in.SettleSubmission(id, "c1", inbox.SubmissionAccepted, "", "")
	now = now.Add(time.Second)
	in.Apply(permissionEvent(t, "attention.answered", "a1", "r1", "c1", 1, aep.Answered{Answer: aep.Answer{Option: "allow"}, By: "alice", Via: "control"}))
	c, _ := in.Card(id)
	require.Equal(t, inbox.StateAnswered, c.State)
	require.False(t, c.AnsweredElsewhere)
	require.NoError(t, in.Flush(context.Background()), "the inbox's queued journal writes are made")
	require.NoError(t, j.Close(), "the process ends")

	j = openAt(t, path, Options{Host: "h"})
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	assert.Empty(t, waiting, "an answer the agent recorded is settled for good: not restored as waiting")

	page, err := j.History(context.Background(), store.HistoryQuery{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	e := page.Entries[0]
	require.NotNil(t, e.Recorded, "what the agent recorded is in the history")
	assert.Equal(t, "allow", e.Recorded.Answer.Option)
	assert.Equal(t, "alice", e.Recorded.By)
	assert.Equal(t, "control", e.Recorded.Via)
	assert.Equal(t, aep.CaptureFull, e.Recorded.Capture)
	assert.Equal(t, "c1", e.Recorded.Cause)
	assert.True(t, e.RecordedAt.Equal(t0.Add(time.Second)), "recorded at %v", e.RecordedAt)
	assert.Equal(t, inbox.SubmissionAccepted, e.State)
	assert.Equal(t, aep.KindPermission, e.Kind)
	assert.Equal(t, permission.Options, e.Options, "the request's options, to show the answer by its label")
	assert.Equal(t, aep.CaptureFull, e.Capture)

	// A new process on a relay that no longer holds the request.
	in = inbox.New(inbox.Options{Journal: j, Now: clock, OwnSources: []string{j.Identity().Source}})
	n, err := in.Restore()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing waits for the agent")
	cards := in.Cards(inbox.Query{})
	require.Len(t, cards, 1, "the settled card comes back from the journal")
	c = cards[0]
	assert.Equal(t, id, c.ID)
	assert.Equal(t, inbox.StateAnswered, c.State)
	assert.False(t, c.AnsweredElsewhere, "it is this UI's own answer")
	require.NotNil(t, c.Submission)
	assert.Equal(t, "alice", c.Submission.By)
	assert.True(t, c.Submission.At.Equal(t0), "posted at %v", c.Submission.At)
	require.NotNil(t, c.Recorded)
	assert.Equal(t, "allow", c.Recorded.Answer.Option)
	assert.Equal(t, permission.Options, c.Request.Options)
	assert.ErrorIs(t, c.CanAnswer(now), inbox.ErrSettled, "read-only")

	// The relay does hold it after all: the card takes the relay's request,
	// and the replayed events change nothing of its outcome.
	in.Apply(permissionEvent(t, "attention.requested", "r1", "", "", 0, permission))
	in.Apply(permissionEvent(t, "control.accepted", "k1", "", "c1", 2, map[string]any{}))
	in.Apply(permissionEvent(t, "attention.answered", "a1", "r1", "c1", 1, aep.Answered{Answer: aep.Answer{Option: "allow"}, By: "alice", Via: "control"}))
	cards = in.Cards(inbox.Query{})
	require.Len(t, cards, 1, "one card for the request")
	c = cards[0]
	assert.Equal(t, inbox.StateAnswered, c.State)
	assert.False(t, c.AnsweredElsewhere)
	assert.Equal(t, "Delete the branch?", c.Request.Prompt)
	assert.Equal(t, inbox.SubmissionAccepted, c.Submission.State)
}

// Restore brings back the latest RestoreSettled answers the agent
// recorded, newest first, one card each; older ones stay in History.
func TestRestoreBringsBackTheLatestSettledAnswers(t *testing.T) {
	t.Parallel()
	j := openAt(t, tempPath(t), Options{})
	for i := range 5 {
		s := submission(cmdID(i), t0.Add(time.Duration(i)*time.Minute))
		s.Card = inbox.CardID("card-" + strconv.Itoa(i))
		s.Key.RequestID = "r" + strconv.Itoa(i)
		require.NoError(t, j.Record(s))
		require.NoError(t, j.Settle(s.CommandID, inbox.SubmissionAccepted, "", "", s.At))
		if i != 2 { // 2 was accepted, but nothing recorded yet
			require.NoError(t, j.KeepRecorded(s.CommandID, inbox.Recorded{Answer: s.Answer, Capture: aep.CaptureFull}, s.At.Add(time.Second)))
		}
	}
	// A second, later answer to card 4's request (another UI's journal
	// merged in, say): one card still.
	again := submission("cmd-again", t0.Add(10*time.Minute))
	again.Card = "card-4"
	require.NoError(t, j.Record(again))
	require.NoError(t, j.KeepRecorded("cmd-again", inbox.Recorded{Answer: again.Answer}, again.At))

	recent, err := j.Recent(3)
	require.NoError(t, err)
	var got []string
	for _, s := range recent {
		got = append(got, s.CommandID)
	}
	assert.Equal(t, []string{"cmd-again", "cmd-3", "cmd-1"}, got, "newest first, one per card, only what was recorded")
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1)
	assert.Equal(t, cmdID(2), waiting[0].CommandID, "only the accepted answer with nothing recorded still waits")

	in := inbox.New(inbox.Options{Journal: j, Now: func() time.Time { return t0.Add(time.Hour) }, RestoreSettled: 2})
	_, err = in.Restore()
	require.NoError(t, err)
	var cards []string
	for _, c := range in.Cards(inbox.Query{}) {
		cards = append(cards, c.Submission.CommandID)
	}
	assert.Equal(t, []string{"cmd-again", "cmd-3"}, cards, "RestoreSettled cards, the newest listed first")
}

// A journal left at any earlier schema version is migrated to the
// current one and keeps its submissions: they come back waiting (nothing
// recorded), with the capture they were kept at (full), and can then be
// recorded and found among the recent ones.
func TestMigratesFromEachEarlierVersion(t *testing.T) {
	t.Parallel()
	for v := 1; v < SchemaVersion; v++ {
		t.Run("v"+strconv.Itoa(v), func(t *testing.T) {
			t.Parallel()
			path := tempPath(t)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			db, err := sql.Open("sqlite", path)
			require.NoError(t, err)
			_, err = db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`)
			require.NoError(t, err)
			for i := range v {
				_, err = db.Exec(migrations[i])
				require.NoError(t, err, "migration %d", i+1)
				_, err = db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, i+1)
				require.NoError(t, err)
			}
			_, err = db.Exec(`INSERT INTO identity (id, instance_id, source, host, created_at) VALUES (1, 'i1', 'aep://h/ui/aepforms/i1', 'h', 1)`)
			require.NoError(t, err)
			_, err = db.Exec(`INSERT INTO submissions (command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at)
				VALUES ('old', 'c', 't', 'aep://a', 's1', 'r1', 'builder', 'q', '[]', 'alice', '{}', '{"option":"yes"}', 'q', 5, 'accepted', '', '', 6)`)
			require.NoError(t, err)
			require.NoError(t, db.Close())
			for _, f := range []string{path, path + "-wal", path + "-shm"} {
				if _, err := os.Stat(f); err == nil {
					require.NoError(t, os.Chmod(f, 0o600))
				}
			}

			j := openAt(t, path, Options{Host: "h"})
			assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
			got, err := j.Unsettled()
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, "old", got[0].CommandID)
			assert.Nil(t, got[0].Recorded)
			assert.Equal(t, aep.CaptureFull, got[0].Capture)
			assert.Empty(t, got[0].Options)

			require.NoError(t, j.KeepRecorded("old", inbox.Recorded{Answer: aep.Answer{Option: "yes"}, Capture: aep.CaptureRedacted}, t0))
			got, err = j.Unsettled()
			require.NoError(t, err)
			assert.Empty(t, got, "recorded: settled for good")
			recent, err := j.Recent(20)
			require.NoError(t, err)
			require.Len(t, recent, 1)
			require.NotNil(t, recent[0].Recorded)
			assert.Equal(t, aep.CaptureRedacted, recent[0].Recorded.Capture)
			assert.True(t, recent[0].RecordedAt.Equal(t0))
		})
	}
}
