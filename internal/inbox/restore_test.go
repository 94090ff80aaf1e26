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
		"old":      {SubmissionUnknown, ReasonTooOld}, // it was sending: it may have left, so not "not sent"
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
	assert.Equal(t, []string{"cmd-open", "cmd-acked", "cmd-gone", "cmd-done"}, left,
		"the journal keeps the rest settled; one whose question has not come back yet waits for it, and one the agent recorded is settled for good")
	j.mu.Lock()
	mine := cloneSubmission(*j.subs["cmd-mine"])
	j.mu.Unlock()
	require.NotNil(t, mine.Recorded, "what the agent recorded for the restored command is journaled")
	assert.Equal(t, "yes", *mine.Recorded.Answer.Text)
	assert.True(t, mine.RecordedAt.Equal(clk.Now().Add(-2*time.Minute)), "kept at the inbox clock, when the answer was seen")

	// The question of "gone" comes back after the resume (its agent asks
	// it again on a relay that knew nothing): its answer is sent again.
	select {
	case <-in.Late():
		t.Fatal("nothing found its card after the resume yet")
	default:
	}
	in.Apply(request(t, "gone", seq+4, all["gone"]))
	select {
	case <-in.Late():
	default:
		t.Fatal("a restored answer that found its card after the resume is signalled")
	}
	late := in.ResumeLate()
	require.Len(t, late, 1)
	assert.Equal(t, "cmd-gone", late[0].CommandID)
	assert.Equal(t, "bytes of cmd-gone", string(late[0].Command), "the original bytes")
	c, _ = in.Card(cardIDOf("gone"))
	assert.Equal(t, SubmissionSending, c.Submission.State)
	assert.Empty(t, in.ResumeLate(), "decided once")
}

// A restored answer whose question never comes back waits for it until
// the resend limit has passed since its post, then is settled: unknown
// if it may have left (sending), not sent if it never did (queued); one
// the agent accepted stays accepted.
func TestRestoredAnswerWaitsForItsQuestionUntilTooOld(t *testing.T) {
	t.Parallel()
	clk := newClock()
	j := answeredBefore(t, clk, map[string]map[string]any{"open": formData(""), "gone": formData(""), "done": formData("")})
	j.mu.Lock()
	j.subs["cmd-open"].State = SubmissionQueued
	j.mu.Unlock()
	in := New(Options{Now: clk.Now, Journal: j})
	n, err := in.Restore()
	require.NoError(t, err)
	require.Equal(t, 3, n)
	assert.Empty(t, in.Resume(10*time.Minute), "no question is back")
	clk.Add(9 * time.Minute)
	in.Sweep()
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	assert.Len(t, waiting, 3, "within the resend limit every one waits for its question")

	clk.Add(2 * time.Minute)
	in.Sweep()
	require.NoError(t, in.Flush(t.Context()))
	j.mu.Lock()
	open, gone, done := *j.subs["cmd-open"], *j.subs["cmd-gone"], *j.subs["cmd-done"]
	j.mu.Unlock()
	assert.Equal(t, SubmissionNotSent, open.State, "queued: it never left")
	assert.Equal(t, ReasonTooOld, open.Reason)
	assert.Equal(t, SubmissionUnknown, gone.State, "sending: it may have left and run")
	assert.Equal(t, ReasonTooOld, gone.Reason)
	assert.Equal(t, SubmissionAccepted, done.State, "accepted stays accepted")

	in.Apply(request(t, "gone", 9, formData("")))
	select {
	case <-in.Late():
		t.Fatal("an answer settled as too old is not sent again when its question comes")
	default:
	}
	c, _ := in.Card(cardIDOf("gone"))
	assert.NoError(t, c.CanAnswer(clk.Now()), "the question is open to a new answer")
}

const aepInvalid = "invalid"

// What the agent recorded for this UI's answer is journaled once, when it
// is known to be this UI's, whatever order the answer and its ack arrive
// in: the submission is then settled for good (no longer restored as
// waiting), and a new inbox on the journal brings its card back settled,
// as this UI's answer, up to RestoreSettled cards.
func TestRecordedAnswersAreKeptAndComeBackSettled(t *testing.T) {
	t.Parallel()
	clk := newClock()
	j := NewMemoryJournal()
	in := New(Options{Now: clk.Now, Journal: j})
	for i, id := range []string{"r1", "r2"} {
		in.Apply(request(t, id, int64(i), formData("")))
		_, err := in.BeginSubmission(cardIDOf(id), sub("tok-"+id, "cmd-"+id))
		require.NoError(t, err)
	}
	// r1: the answer names the ack as its cause and arrives before it.
	clk.Add(time.Second)
	in.Apply(lifecycle(t, "attention.answered", "ans-1", "r1", "ack-1", 2, map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}))
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	assert.Len(t, waiting, 2, "an answer not known to be this UI's is not kept as its record")
	clk.Add(time.Second)
	in.Apply(lifecycle(t, "control.accepted", "ack-1", "", "cmd-r1", 3, map[string]any{}))
	// r2: its ack was lost; the answer names the command.
	in.Apply(lifecycle(t, "attention.answered", "ans-2", "r2", "cmd-r2", 4, map[string]any{"answer": map[string]any{"values": map[string]any{"name": "y"}}, "by": "op"}))

	waiting, err = j.Unsettled()
	require.NoError(t, err)
	assert.Empty(t, waiting, "both recorded: settled for good")
	c, _ := in.Card(cardIDOf("r2"))
	assert.Equal(t, SubmissionAccepted, c.Submission.State, "recorded by the agent: accepted, its ack lost or not")
	require.NotNil(t, c.Submission.Recorded)
	recent, err := j.Recent(10)
	require.NoError(t, err)
	require.Len(t, recent, 2)
	assert.Equal(t, "cmd-r2", recent[0].CommandID, "newest first")
	assert.Equal(t, "y", recent[0].Recorded.Answer.Values["name"])
	assert.True(t, recent[1].RecordedAt.Equal(clk.Now()), "r1 kept when its ack made it this UI's")
	assert.Equal(t, "form", recent[1].Kind)
	assert.Equal(t, "Pick", recent[1].Question)

	again := New(Options{Now: clk.Now, Journal: j})
	n, err := again.Restore()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing waits for the agent")
	cards := again.Cards(Query{})
	require.Len(t, cards, 2)
	for _, c := range cards {
		assert.Equal(t, StateAnswered, c.State, "%s", c.Key.RequestID)
		assert.False(t, c.AnsweredElsewhere, "%s: this UI's answer", c.Key.RequestID)
		assert.Equal(t, "op", c.Submission.By)
		assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrSettled)
	}
	assert.Equal(t, cardIDOf("r2"), cards[0].ID, "the latest answer listed first")

	one := New(Options{Now: clk.Now, Journal: j, RestoreSettled: 1})
	_, err = one.Restore()
	require.NoError(t, err)
	require.Len(t, one.Cards(Query{}), 1, "RestoreSettled bounds the cards brought back")
	none := New(Options{Now: clk.Now, Journal: j, RestoreSettled: -1})
	_, err = none.Restore()
	require.NoError(t, err)
	assert.Empty(t, none.Cards(Query{}), "negative: none brought back")
}

// "Outcome unknown" is not for good: an answer restored after a restart
// and settled unknown (it may have left, and got older than the resend
// limit) becomes accepted, with what the agent recorded, when the
// agent's attention.answered names its command; the journal keeps it.
func TestUnknownAnswerIsCreditedWhenTheAgentNamesItsCommand(t *testing.T) {
	t.Parallel()
	clk := newClock()
	j := answeredBefore(t, clk, map[string]map[string]any{"open": formData("")})
	clk.Add(11 * time.Minute)
	in := New(Options{Now: clk.Now, Journal: j})
	_, err := in.Restore()
	require.NoError(t, err)
	in.Apply(request(t, "open", 0, formData("")))
	assert.Empty(t, in.Resume(10*time.Minute), "too old to send again")
	c, _ := in.Card(cardIDOf("open"))
	require.Equal(t, SubmissionUnknown, c.Submission.State)

	in.Apply(lifecycle(t, "attention.answered", "ans-1", "open", "cmd-open", 1, map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}))
	c, _ = in.Card(cardIDOf("open"))
	assert.Equal(t, SubmissionAccepted, c.Submission.State, "the agent named the command: it ran")
	require.NotNil(t, c.Submission.Recorded)
	assert.False(t, c.AnsweredElsewhere, "this UI's answer")
	require.NoError(t, in.Flush(t.Context()))
	j.mu.Lock()
	kept := cloneSubmission(*j.subs["cmd-open"])
	j.mu.Unlock()
	assert.Equal(t, SubmissionAccepted, kept.State, "History says so too")
	assert.NotNil(t, kept.Recorded)
}
