package inbox

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingJournal refuses every Record.
type failingJournal struct{ *MemoryJournal }

func (failingJournal) Record(Submission) error { return errors.New("disk full") }

// A submission is journaled before BeginSubmission returns (so before its
// command is sent), and every state it moves to follows it there.
func TestSubmissionsAreJournaledAheadOfSending(t *testing.T) {
	t.Parallel()
	j := NewMemoryJournal()
	clk := newClock()
	in := New(Options{Now: clk.Now, Journal: j})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	s, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err)
	assert.Equal(t, id, s.Card)
	assert.Equal(t, RequestKey{Source: testSource, Session: testSession, RequestID: "r1"}, s.Key, "the card's request fills the submission")
	require.Len(t, s.Fields, 1)
	c, _ := in.Card(id)
	assert.Equal(t, c.Agent, s.Agent, "the request's agent travels with the submission")
	assert.Equal(t, c.Request.Prompt, s.Question, "and so does its question")

	waiting, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "journaled before anything is sent")
	assert.Equal(t, "c1", waiting[0].CommandID)
	assert.Equal(t, SubmissionSending, waiting[0].State)
	assert.Equal(t, s.Question, waiting[0].Question)

	in.SettleSubmission(id, "c1", SubmissionAccepted, "", "")
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "accepted still waits for the agent's record")
	assert.Equal(t, SubmissionAccepted, waiting[0].State)

	clk.Add(time.Second)
	in.Apply(lifecycle(t, "control.rejected", "n1", "r1", "c1", 1, map[string]any{"reason": "invalid"}))
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	assert.Len(t, waiting, 1, "the agent's acceptance stands: a later nack changes nothing")
}

// A journal that cannot keep the submission refuses the post: nothing is
// sent and the card stays answerable.
func TestAnUnjournaledSubmissionIsRefused(t *testing.T) {
	t.Parallel()
	in := New(Options{Journal: failingJournal{NewMemoryJournal()}})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	_, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.ErrorIs(t, err, ErrNotRecorded)
	c, ok := in.Card(id)
	require.True(t, ok)
	assert.Nil(t, c.Submission, "no submission without its journal entry")
	assert.NoError(t, c.CanAnswer(time.Now()), "the card still takes an answer")
}

// With a command builder, the command's exact bytes are made before the
// submission is journaled and are journaled with it; a builder that
// refuses the submission refuses the post, with nothing journaled.
func TestJournalKeepsTheCommandBytes(t *testing.T) {
	t.Parallel()
	j := NewMemoryJournal()
	var built []Submission
	in := New(Options{Journal: j, Command: func(s Submission) ([]byte, error) {
		if s.Token == "bad" {
			return nil, errors.New("no")
		}
		built = append(built, s)
		return []byte("bytes of " + s.CommandID), nil
	}})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	_, err := in.BeginSubmission(id, sub("bad", "c0"))
	require.ErrorIs(t, err, ErrInvalidSubmission)
	waiting, _ := j.Unsettled()
	assert.Empty(t, waiting, "a refused build journals nothing")

	s, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err)
	assert.Equal(t, "bytes of c1", string(s.Command))
	require.Len(t, built, 1)
	assert.Equal(t, RequestKey{Source: testSource, Session: testSession, RequestID: "r1"}, built[0].Key, "built from the whole submission")
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1)
	assert.Equal(t, "bytes of c1", string(waiting[0].Command), "journaled with its bytes")
}
