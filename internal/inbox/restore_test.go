package inbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answeredBefore journals one answer per request id on a first inbox (the
// process before the restart) and returns the journal.
func answeredBefore(t *testing.T, clk *clock, data map[string]map[string]any) *MemoryJournal {
	t.Helper()
	j := NewMemoryJournal()
	first := New(Options{Now: clk.Now, Journal: j, Command: func(s Submission) ([]byte, error) {
		return []byte("bytes of " + s.CommandID), nil
	}})
	seq := int64(0)
	for _, id := range []string{"old", "open", "answered", "expires", "acked", "nacked", "gone", "done", "mine"} {
		d, ok := data[id]
		if !ok {
			continue
		}
		first.Apply(request(t, id, seq, d))
		seq++
		_, err := first.BeginSubmission(cardIDOf(id), sub("tok-"+id, "cmd-"+id))
		require.NoError(t, err, "begin %s", id)
		if id == "done" {
			first.SettleSubmission(cardIDOf(id), "cmd-"+id, SubmissionAccepted, "", "")
		}
		if id == "old" {
			clk.Add(time.Hour) // the others are posted an hour later
		}
	}
	return j
}

// After a restart, every journaled answer waiting for the agent is back on
// its card the moment the card is, form locked; once the feed has caught
// up, those whose request is still open and which are young enough are
// handed back with their original command id and bytes, and the rest are
// settled and say why.
func TestResumeAfterRestart(t *testing.T) {
	t.Parallel()
	clk := newClock()
	all := map[string]map[string]any{
		"open": formData(""), "answered": formData(""), "old": formData(""), "acked": formData(""),
		"nacked": formData(""), "gone": formData(""), "done": formData(""), "mine": formData(""),
		"expires": formData(clk.Now().Add(time.Hour + 2*time.Minute).Format(time.RFC3339)),
	}
	j := answeredBefore(t, clk, all)
	clk.Add(time.Minute)

	in := New(Options{Now: clk.Now, Journal: j})
	n, err := in.Restore()
	require.NoError(t, err)
	assert.Equal(t, 9, n, "every unsettled submission is loaded")

	seq := int64(0)
	for _, id := range []string{"old", "open", "answered", "expires", "acked", "nacked", "mine"} { // "gone", "done": the relay no longer holds them
		in.Apply(request(t, id, seq, all[id]))
		seq++
		c, ok := in.Card(cardIDOf(id))
		require.True(t, ok)
		require.NotNil(t, c.Submission, "%s: restored on its card as it is made", id)
		assert.True(t, c.Submission.Resumed, "%s: marked as restored", id)
		assert.Equal(t, "cmd-"+id, c.Submission.CommandID)
		assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrInFlight, "%s: the form is locked", id)
	}
	_, err = in.BeginSubmission(cardIDOf("open"), sub("tok-new", "cmd-new"))
	require.ErrorIs(t, err, ErrInFlight, "no second command for a request while its first is restored")

	// The feed replays what followed: an answer by someone else, the acks
	// of two of the commands.
	in.Apply(lifecycle(t, "attention.answered", "ans-1", "answered", "", seq, map[string]any{"answer": map[string]any{"text": "no"}, "by": "bob"}))
	in.Apply(lifecycle(t, "attention.answered", "ans-2", "mine", "cmd-mine", seq+1, map[string]any{"answer": map[string]any{"text": "yes"}}))
	in.Apply(lifecycle(t, "control.accepted", "ack-1", "acked", "cmd-acked", seq+2, map[string]any{}))
	in.Apply(lifecycle(t, "control.rejected", "nack-1", "nacked", "cmd-nacked", seq+3, map[string]any{"reason": "invalid"}))
	c, _ := in.Card(cardIDOf("acked"))
	assert.Equal(t, SubmissionAccepted, c.Submission.State, "a replayed ack settles the restored command")
	clk.Add(2 * time.Minute) // "expires" is now past its deadline

	resend := in.Resume(10 * time.Minute)
	var ids []string
	for _, s := range resend {
		ids = append(ids, s.CommandID)
		assert.Equal(t, "bytes of "+s.CommandID, string(s.Command), "the original bytes")
	}
	assert.Equal(t, []string{"cmd-open", "cmd-acked"}, ids, "sent again: open and young, in posting order")
	assert.Nil(t, in.Resume(10*time.Minute), "resume runs once")

	for id, want := range map[string]struct {
		state  SubmissionState
		reason string
	}{
		"open":     {SubmissionSending, ""},
		"acked":    {SubmissionAccepted, ""},
		"answered": {SubmissionSuperseded, ""},
		"expires":  {SubmissionSuperseded, ""},
		"old":      {SubmissionNotSent, ReasonTooOld},
		"nacked":   {SubmissionRejected, aepInvalid},
		"mine":     {SubmissionAccepted, ""},
	} {
		c, _ := in.Card(cardIDOf(id))
		require.NotNil(t, c.Submission, id)
		assert.Equal(t, want.state, c.Submission.State, "%s: state", id)
		assert.Equal(t, want.reason, c.Submission.Reason, "%s: reason", id)
	}
	c, _ = in.Card(cardIDOf("mine"))
	assert.False(t, c.AnsweredElsewhere, "the answer the agent recorded from the restored command is this UI's")
	c, _ = in.Card(cardIDOf("old"))
	assert.NoError(t, c.CanAnswer(clk.Now()), "a too-old answer not sent again reopens the form")

	waiting, err := j.Unsettled()
	require.NoError(t, err)
	var left []string
	for _, s := range waiting {
		left = append(left, s.CommandID)
	}
	assert.Equal(t, []string{"cmd-open", "cmd-acked", "cmd-done"}, left,
		"the journal keeps the rest settled (gone: not sent), an accepted answer whose question is gone stays accepted, and one the agent recorded is settled for good")
	j.mu.Lock()
	gone := *j.subs["cmd-gone"]
	mine := cloneSubmission(*j.subs["cmd-mine"])
	j.mu.Unlock()
	require.NotNil(t, mine.Recorded, "what the agent recorded for the restored command is journaled")
	assert.Equal(t, "yes", *mine.Recorded.Answer.Text)
	assert.True(t, mine.RecordedAt.Equal(clk.Now().Add(-2*time.Minute)), "kept at the inbox clock, when the answer was seen")
	assert.Equal(t, SubmissionNotSent, gone.State)
	assert.Equal(t, ReasonGone, gone.Reason)
}

const aepInvalid = "invalid"
