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
)

// Lookup finds a command by id in its latest state, and says so when the
// journal does not hold it.
func TestLookup(t *testing.T) {
	t.Parallel()
	j := openAt(t, tempPath(t), Options{Host: "h"})
	s := inbox.Submission{Card: "c1", Key: inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r1"},
		Token: "t1", CommandID: "cmd-1", By: "alice", State: inbox.SubmissionSending, At: t0,
		Answer: aep.Answer{Values: aep.Values{"name": "v1"}}, Form: url.Values{"f0": {"v1"}}, Command: []byte(`{"id":"cmd-1"}`)}
	require.NoError(t, j.Record(s))
	require.NoError(t, j.Settle("cmd-1", inbox.SubmissionRejected, "invalid", "no such release", t0.Add(time.Second)))

	got, ok, err := j.Lookup("cmd-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, inbox.SubmissionRejected, got.State, "its latest state")
	assert.Equal(t, "invalid", got.Reason)
	assert.Equal(t, inbox.CardID("c1"), got.Card)
	assert.Equal(t, "alice", got.By)
	assert.Equal(t, aep.Values{"name": "v1"}, got.Answer.Values)
	assert.True(t, got.At.Equal(t0))

	_, ok, err = j.Lookup("cmd-unknown")
	require.NoError(t, err)
	assert.False(t, ok)
}

// After a restart on the same file, the feed replays this UI's commands:
// one the journal holds (the agent rejected it) is back on its card as
// this UI's answer; one from the journal's source that it does not hold
// (sent before the file was replaced) locks the form as "already sent
// from this UI".
func TestTheInboxRecognisesItsCommandsThroughTheJournal(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j := openAt(t, path, Options{Host: "h"})
	source := j.Identity().Source
	now := t0
	clock := func() time.Time { return now }
	feed := func(in *inbox.Inbox) {
		for i, id := range []string{"r1", "r2"} {
			req, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Time: t0.Format(time.RFC3339Nano), Source: "aep://h/agent",
				Agent: "builder", Session: "s1", Seq: aep.Int64(int64(i)), Capture: "full",
				Data: aep.Request{Kind: aep.KindInput, Prompt: "Which release?"}})
			require.NoError(t, err)
			in.Apply(req)
		}
	}
	first := inbox.New(inbox.Options{Journal: j, Now: clock, OwnSources: []string{source}})
	feed(first)
	card := first.Cards(inbox.Query{})
	require.Len(t, card, 2)
	r1 := inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r1"}.CardID()
	r2 := inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r2"}.CardID()
	text := "v9"
	_, err := first.BeginSubmission(r1, inbox.Submission{Token: "t1", CommandID: "cmd-1", Answer: aep.Answer{Text: &text}})
	require.NoError(t, err)
	first.SettleSubmission(r1, "cmd-1", inbox.SubmissionRejected, "invalid", "")
	require.NoError(t, first.Flush(context.Background()), "the inbox's queued journal writes are made")
	require.NoError(t, j.Close(), "the process ends")

	j = openAt(t, path, Options{Host: "h"})
	second := inbox.New(inbox.Options{Journal: j, Now: clock, OwnSources: []string{source}})
	_, err = second.Restore()
	require.NoError(t, err)
	feed(second)
	for _, cmd := range []struct{ id, req string }{{"cmd-1", "r1"}, {"cmd-lost", "r2"}} {
		e, err := aep.Build(aep.Envelope{ID: cmd.id, Type: "control.attention.respond", Time: t0.Format(time.RFC3339Nano), Source: source,
			Agent: "aepforms", Session: "s1", Subject: cmd.req, Cause: cmd.req, Capture: "full",
			Data: aep.Respond{Answer: aep.Answer{Text: &text}}})
		require.NoError(t, err)
		second.Apply(e)
	}

	c, _ := second.Card(r1)
	require.NotNil(t, c.Submission, "the rejected answer is this UI's")
	assert.Equal(t, inbox.SubmissionRejected, c.Submission.State)
	assert.Empty(t, c.Responders)
	assert.NoError(t, c.CanAnswer(now))

	c, _ = second.Card(r2)
	assert.Nil(t, c.Submission)
	require.Len(t, c.Responders, 1)
	assert.True(t, c.Responders[0].Own, "from this UI's source, not in its journal")
	assert.ErrorIs(t, c.CanAnswer(now), inbox.ErrOtherInFlight)
}
