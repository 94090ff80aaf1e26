package inbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// Sources of the tests below: this UI's (its journal's), and another
// serve's on the same host (its own journal, so its own source).
const (
	ownSource   = "aep://host/ui/aepforms/01JOURNALINSTANCE"
	otherUI     = "aep://host/ui/aepforms/01OTHERINSTANCE"
	testAckWait = 10 * time.Second
)

// command is a control.attention.respond for request r1 from source,
// sent as agent, answering the form's name field.
func command(t testing.TB, id, source, agent, name string) *aep.Event {
	t.Helper()
	return ev(t, aep.Envelope{ID: id, Type: "control.attention.respond", Source: source, Agent: agent, Session: testSession,
		Subject: "r1", Cause: "r1", Capture: "full", Data: aep.Respond{Answer: aep.Answer{Values: aep.Values{"name": name}}}})
}

// ack is the agent's control.accepted (reason "") or control.rejected of
// command cmd.
func ack(t testing.TB, id, cmd string, seq int64, reason string) *aep.Event {
	t.Helper()
	if reason == "" {
		return lifecycle(t, "control.accepted", id, "", cmd, seq, map[string]any{})
	}
	return lifecycle(t, "control.rejected", id, "", cmd, seq, map[string]any{"reason": reason})
}

func answeringInbox(t *testing.T, j Journal) (*Inbox, *clock) {
	t.Helper()
	clk := newClock()
	in := New(Options{Now: clk.Now, Journal: j, OwnSources: []string{ownSource},
		AckWindow: func(string) time.Duration { return testAckWait }})
	in.Apply(request(t, "r1", 1, formData("")))
	return in, clk
}

// A command from this UI's own source that its journal does not hold
// (the journal was deleted or replaced) is an answer this UI already
// sent: the card says so and the form is locked (the post is refused);
// the agent's rejection opens it again; an outcome it caused is this
// UI's, never "answered elsewhere".
func TestOwnCommandMissingFromTheJournal(t *testing.T) {
	t.Parallel()
	t.Run("locked until the agent rejects it", func(t *testing.T) {
		t.Parallel()
		in, clk := answeringInbox(t, nil)
		in.Apply(command(t, "cmd-old", ownSource, "aepforms/alice", "x"))
		c, _ := in.Card(cardIDOf("r1"))
		require.Len(t, c.Responders, 1, "the command is on the card")
		r := c.Responders[0]
		assert.True(t, r.Own, "sent from this UI's source")
		assert.Equal(t, "alice", r.By, "who sent it, from the command")
		assert.Equal(t, aep.Values{"name": "x"}, r.Answer.Values, "what was sent")
		require.Same(t, &c.Responders[0], c.Answering(), "it is the answer in flight")
		assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrInFlight, "the form is locked")
		_, err := in.BeginSubmission(c.ID, sub("t1", "c1"))
		require.ErrorIs(t, err, ErrOtherInFlight, "a post sends nothing")

		in.Apply(ack(t, "nack-1", "cmd-old", 2, "invalid"))
		c, _ = in.Card(cardIDOf("r1"))
		assert.NoError(t, c.CanAnswer(clk.Now()), "the agent rejected it: the form opens again")
		_, err = in.BeginSubmission(c.ID, sub("t1", "c1"))
		assert.NoError(t, err)
	})
	t.Run("its outcome is this UI's", func(t *testing.T) {
		t.Parallel()
		in, clk := answeringInbox(t, nil)
		in.Apply(command(t, "cmd-old", ownSource, "aepforms", "x"))
		in.Apply(ack(t, "ack-1", "cmd-old", 2, ""))
		clk.Add(2 * testAckWait)
		in.Sweep()
		c, _ := in.Card(cardIDOf("r1"))
		assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrInFlight, "accepted: locked until the agent records it, past the ack window")
		in.Apply(lifecycle(t, "attention.answered", "ans-1", "r1", "ack-1", 3,
			map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}))
		c, _ = in.Card(cardIDOf("r1"))
		assert.Equal(t, StateAnswered, c.State)
		assert.False(t, c.AnsweredElsewhere, "an answer sent from this UI's source is this UI's")
	})
}

// Another sender's command (another UI, a script) on an open request is
// on the card at once, with who sent it and what, and locks the form
// while it is in flight: until the agent rejects it, or its ack window
// passes with no ack; an accepted one keeps it locked.
func TestAnotherSenderLocksTheForm(t *testing.T) {
	t.Parallel()
	t.Run("until the agent rejects it", func(t *testing.T) {
		t.Parallel()
		in, clk := answeringInbox(t, nil)
		sub0 := in.Subscribe(16)
		defer sub0.Close()
		in.Apply(command(t, "cmd-9", otherUI, "aepforms/alice", "z"))
		c, _ := in.Card(cardIDOf("r1"))
		require.Len(t, c.Responders, 1)
		r := c.Responders[0]
		assert.False(t, r.Own)
		assert.Equal(t, "alice", r.By)
		assert.Equal(t, aep.Values{"name": "z"}, r.Answer.Values)
		assert.Equal(t, aep.CaptureFull, r.Capture)
		assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrInFlight)
		_, err := in.BeginSubmission(c.ID, sub("t1", "c1"))
		require.ErrorIs(t, err, ErrOtherInFlight)
		assert.Equal(t, StatePending, c.State, "a command alone answers nothing")

		in.Apply(ack(t, "nack-9", "cmd-9", 2, "refused"))
		c, _ = in.Card(cardIDOf("r1"))
		assert.Nil(t, c.Answering())
		assert.NoError(t, c.CanAnswer(clk.Now()))
	})
	t.Run("until its ack window passes", func(t *testing.T) {
		t.Parallel()
		in, clk := answeringInbox(t, nil)
		in.Apply(command(t, "cmd-9", "aep://scripts/deploy", "deploy-bot", "z"))
		clk.Add(testAckWait - time.Millisecond)
		in.Sweep()
		c, _ := in.Card(cardIDOf("r1"))
		assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrInFlight, "still within its ack window")
		assert.Equal(t, "deploy-bot", c.Responders[0].By, "no operator named: the sender's agent")

		sub0 := in.Subscribe(16)
		defer sub0.Close()
		clk.Add(time.Millisecond)
		in.Sweep()
		select {
		case ch := <-sub0.C():
			assert.Equal(t, c.ID, ch.Card, "the card is published again when its lock ends")
		default:
			t.Fatal("no change published when the ack window passed")
		}
		c, _ = in.Card(cardIDOf("r1"))
		assert.True(t, c.Responders[0].Silent)
		assert.NoError(t, c.CanAnswer(clk.Now()), "no ack in the window: the form opens again")
	})
	t.Run("accepted, past the ack window", func(t *testing.T) {
		t.Parallel()
		in, clk := answeringInbox(t, nil)
		in.Apply(command(t, "cmd-9", otherUI, "aepforms/alice", "z"))
		in.Apply(ack(t, "ack-9", "cmd-9", 2, ""))
		clk.Add(2 * testAckWait)
		in.Sweep()
		c, _ := in.Card(cardIDOf("r1"))
		assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrInFlight, "accepted: waiting for the agent to record it")
		in.Apply(lifecycle(t, "attention.answered", "ans-9", "r1", "ack-9", 3,
			map[string]any{"answer": map[string]any{"values": map[string]any{"name": "z"}}, "by": "alice"}))
		c, _ = in.Card(cardIDOf("r1"))
		assert.True(t, c.AnsweredElsewhere)
	})
}

// An answer this UI sent that the agent rejected before a restart is this
// UI's after it, from the journal: on its card with its rejected state
// and what was sent, never "already sent from this UI" or someone
// else's; the form takes an answer again. The same when the relay keeps
// no commands in history and only the rejection comes back.
func TestRejectedBeforeARestartIsOurs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		withCommand bool
	}{{"the command in the relay's history", true}, {"only its rejection in the relay's history", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := NewMemoryJournal()
			first, _ := answeringInbox(t, j)
			_, err := first.BeginSubmission(cardIDOf("r1"), sub("t1", "cmd-1"))
			require.NoError(t, err)
			first.Apply(ack(t, "nack-1", "cmd-1", 2, "invalid"))
			c, _ := first.Card(cardIDOf("r1"))
			require.Equal(t, SubmissionRejected, c.Submission.State)

			second, clk := answeringInbox(t, j) // the restart: the same journal, a new inbox, the feed replayed
			_, err = second.Restore()
			require.NoError(t, err)
			if tc.withCommand {
				second.Apply(command(t, "cmd-1", ownSource, "aepforms/op", "x"))
			}
			second.Apply(ack(t, "nack-1", "cmd-1", 2, "invalid"))
			c, _ = second.Card(cardIDOf("r1"))
			require.NotNil(t, c.Submission, "the journaled answer is back on its card")
			assert.Equal(t, "cmd-1", c.Submission.CommandID)
			assert.Equal(t, SubmissionRejected, c.Submission.State)
			assert.Equal(t, "invalid", c.Submission.Reason)
			assert.Equal(t, aep.Values{"name": "x"}, c.Submission.Answer.Values)
			assert.Empty(t, c.Responders, "this UI's own answer, not an unknown one")
			assert.NoError(t, c.CanAnswer(clk.Now()), "rejected: the form takes an answer again")
			assert.Equal(t, 0, len(second.Resume(time.Hour)), "nothing to send again")
		})
	}
}

// unreadableJournal cannot answer a Lookup.
type unreadableJournal struct{ *MemoryJournal }

func (unreadableJournal) Lookup(string) (Submission, bool, error) {
	return Submission{}, false, errors.New("disk I/O error")
}

// A journal that cannot say whether it holds a command from this UI's
// source leaves the form locked while that command is in flight (never
// open on a guess), and the page's notices say the journal could not be
// read.
func TestUnreadableJournalLocksTheForm(t *testing.T) {
	t.Parallel()
	in, clk := answeringInbox(t, unreadableJournal{NewMemoryJournal()})
	in.Apply(command(t, "cmd-1", ownSource, "aepforms", "x"))
	c, _ := in.Card(cardIDOf("r1"))
	require.Len(t, c.Responders, 1)
	assert.True(t, c.Responders[0].Own)
	assert.ErrorIs(t, c.CanAnswer(clk.Now()), ErrOtherInFlight)
	notices := in.Status().Notices
	require.Len(t, notices, 1)
	assert.True(t, strings.Contains(notices[0].Message, "could not be read"), notices[0].Message)
}
