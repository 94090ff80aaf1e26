package inbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// journaled returns the journal's copy of command id.
func journaledSub(t *testing.T, j *MemoryJournal, id string) Submission {
	t.Helper()
	s, ok, err := j.Lookup(id)
	require.NoError(t, err)
	require.True(t, ok, "the journal holds %s", id)
	return s
}

// An owed answer (sent, no reply in time) keeps the form locked: a
// second answer is refused unless the post names the owed one
// ("Answer differently"); then the first is journaled as replaced
// (failed, not live), the second as a new command for the same request.
func TestAnswerDifferentlyOnlyExplicitly(t *testing.T) {
	t.Parallel()
	j := NewMemoryJournal()
	clk := newClock()
	in := New(Options{Now: clk.Now, Journal: j})
	in.Apply(request(t, "r1", 1, formData("")))
	id := cardIDOf("r1")
	_, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err)
	in.SettleSubmission(id, "c1", SubmissionSending, ReasonTimeout, "no ack")
	c, _ := in.Card(id)
	require.True(t, c.Submission.Owed())
	require.ErrorIs(t, c.CanAnswer(clk.Now()), ErrInFlight, "owed: the form stays locked")

	_, err = in.BeginSubmission(id, sub("t2", "c2"))
	require.ErrorIs(t, err, ErrInFlight, "no second answer by accident")
	other := sub("t2", "c2")
	other.Replaces = "nope"
	_, err = in.BeginSubmission(id, other)
	require.ErrorIs(t, err, ErrInFlight, "naming another command replaces nothing")

	second := sub("t3", "c3")
	second.Replaces = "c1"
	got, err := in.BeginSubmission(id, second)
	require.NoError(t, err, "answer differently, explicitly")
	assert.Equal(t, "c3", got.CommandID)
	first := journaledSub(t, j, "c1")
	assert.Equal(t, SubmissionFailed, first.State, "the first is out of the live answers")
	assert.Equal(t, ReasonReplaced, first.Reason)
	assert.Equal(t, SubmissionSending, journaledSub(t, j, "c3").State, "a second command for the same request")
	assert.False(t, in.ReleaseQueued(id, "c1"), "the replaced answer is never sent again")
}

// Outcomes settle the command they name: after a re-answer, the agent
// runs the first and refuses the second, in either order; the first is
// the one accepted and recorded, the second rejected, never credited.
func TestOutcomesMatchedByCommandID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		recordBefore bool   // the record arrives before the second's rejection
		cause        string // the record's cause: the command, or its ack (one hop)
	}{
		{"record then rejection, cause the command", true, "c1"},
		{"rejection then record, cause the command", false, "c1"},
		{"record caused by the ack", true, "ack-c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := NewMemoryJournal()
			clk := newClock()
			in := New(Options{Now: clk.Now, Journal: j})
			in.Apply(request(t, "r1", 1, formData("")))
			id := cardIDOf("r1")
			_, err := in.BeginSubmission(id, sub("t1", "c1"))
			require.NoError(t, err)
			in.SettleSubmission(id, "c1", SubmissionSending, ReasonTimeout, "no ack")
			second := sub("t2", "c2")
			second.Replaces = "c1"
			_, err = in.BeginSubmission(id, second)
			require.NoError(t, err)

			in.Apply(lifecycle(t, "control.accepted", "ack-c1", "r1", "c1", 2, map[string]any{}))
			answered := lifecycle(t, "attention.answered", "ans-1", "r1", tc.cause, 3,
				map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}, "via": "control"})
			rejected := lifecycle(t, "control.rejected", "nack-c2", "r1", "c2", 4, map[string]any{"reason": "invalid"})
			if tc.recordBefore {
				in.Apply(answered)
				in.Apply(rejected)
			} else {
				in.Apply(rejected)
				in.Apply(answered)
			}

			c1, c2 := journaledSub(t, j, "c1"), journaledSub(t, j, "c2")
			assert.Equal(t, SubmissionAccepted, c1.State, "the first: its own ack")
			require.NotNil(t, c1.Recorded, "the first is the one the agent recorded")
			assert.Equal(t, SubmissionRejected, c2.State, "the second: its own rejection")
			assert.Nil(t, c2.Recorded, "the refused answer is never credited with the record")
			c, _ := in.Card(id)
			assert.Equal(t, StateAnswered, c.State)
			assert.False(t, c.AnsweredElsewhere, "the record is this UI's (its first answer)")
			recent, err := j.Recent(5)
			require.NoError(t, err)
			require.Len(t, recent, 1)
			assert.Equal(t, "c1", recent[0].CommandID)
		})
	}
}

// An owed answer whose request closes without the agent's record is
// superseded, with its reason kept (it was sent), and not sent again.
func TestOwedAnswerSupersededWhenItsRequestCloses(t *testing.T) {
	t.Parallel()
	j := NewMemoryJournal()
	clk := newClock()
	in := New(Options{Now: clk.Now, Journal: j})
	in.Apply(request(t, "r1", 1, formData("")))
	id := cardIDOf("r1")
	_, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err)
	in.SettleSubmission(id, "c1", SubmissionSending, ReasonRelayLost, "lost")
	in.Apply(lifecycle(t, "attention.resolved", "res-1", "r1", "", 2, map[string]any{"resolution": aep.ResolutionDismissed}))
	got := journaledSub(t, j, "c1")
	assert.Equal(t, SubmissionSuperseded, got.State)
	assert.Equal(t, ReasonRelayLost, got.Reason, "its words say it was sent")
	assert.False(t, in.ReleaseQueued(id, "c1"))
}
