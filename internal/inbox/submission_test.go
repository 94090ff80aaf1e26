package inbox

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func sub(token, cmd string) Submission {
	return Submission{Token: token, CommandID: cmd, By: "op",
		Answer: aep.Answer{Values: aep.Values{"name": "x"}}, Form: url.Values{"f0": {"x"}}}
}

func TestBeginSubmission(t *testing.T) {
	t.Parallel()
	type step func(t *testing.T, in *Inbox)
	begin := func(token, cmd string, want error) step {
		return func(t *testing.T, in *Inbox) {
			t.Helper()
			_, err := in.BeginSubmission(cardIDOf("r1"), sub(token, cmd))
			if want == nil {
				require.NoError(t, err, "begin %s/%s", token, cmd)
			} else {
				require.ErrorIs(t, err, want, "begin %s/%s", token, cmd)
			}
		}
	}
	settleTo := func(cmd string, st SubmissionState, reason string) step {
		return func(t *testing.T, in *Inbox) { in.SettleSubmission(cardIDOf("r1"), cmd, st, reason, "why") }
	}
	apply := func(mk func(t *testing.T) *aep.Event) step {
		return func(t *testing.T, in *Inbox) { in.Apply(mk(t)) }
	}
	answeredBy := func(cause string) func(t *testing.T) *aep.Event {
		return func(t *testing.T) *aep.Event {
			return lifecycle(t, "attention.answered", "a-"+cause, "r1", cause, 5,
				map[string]any{"answer": map[string]any{"values": map[string]any{"name": "y"}}, "via": "control"})
		}
	}
	tests := []struct {
		name      string
		steps     []step
		wantState SubmissionState
		wantCmd   string
		check     func(t *testing.T, c Card)
	}{
		{"first post is sending", []step{begin("t1", "c1", nil)}, SubmissionSending, "c1", nil},
		{"same token again is a duplicate", []step{begin("t1", "c1", nil), begin("t1", "c2", ErrDuplicate)}, SubmissionSending, "c1", nil},
		{"duplicate token after the card settled still says duplicate", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionAccepted, ""), apply(answeredBy("c1")), begin("t1", "c9", ErrDuplicate),
		}, SubmissionAccepted, "c1", func(t *testing.T, c Card) {
			assert.Equal(t, StateAnswered, c.State)
			assert.False(t, c.AnsweredElsewhere, "the answer our command caused is ours")
		}},
		{"a second token while sending is in flight", []step{begin("t1", "c1", nil), begin("t2", "c2", ErrInFlight)}, SubmissionSending, "c1", nil},
		{"a second token while accepted is in flight", []step{begin("t1", "c1", nil), settleTo("c1", SubmissionAccepted, ""), begin("t2", "c2", ErrInFlight)}, SubmissionAccepted, "c1", nil},
		{"a new token after a rejection starts a new one", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionRejected, "invalid"), begin("t2", "c2", nil),
		}, SubmissionSending, "c2", nil},
		{"a new token after a failure starts a new one", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionFailed, "no-route"), begin("t2", "c2", nil),
		}, SubmissionSending, "c2", nil},
		{"an old token after a newer submission sends nothing", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionRejected, "invalid"), begin("t2", "c2", nil), begin("t1", "c3", ErrDuplicate),
		}, SubmissionSending, "c2", nil},
		{"settle for an older command is ignored", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionFailed, "timeout"), begin("t2", "c2", nil), settleTo("c1", SubmissionAccepted, ""),
		}, SubmissionSending, "c2", nil},
		{"the agent's decision is final", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionAccepted, ""), settleTo("c1", SubmissionFailed, "timeout"),
		}, SubmissionAccepted, "c1", nil},
		{"a late ack after a local timeout counts", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionFailed, "timeout"), settleTo("c1", SubmissionAccepted, ""),
		}, SubmissionAccepted, "c1", nil},
		{"rejected keeps reason and detail", []step{begin("t1", "c1", nil), settleTo("c1", SubmissionRejected, "invalid")},
			SubmissionRejected, "c1", func(t *testing.T, c Card) {
				assert.Equal(t, "invalid", c.Submission.Reason)
				assert.Equal(t, "why", c.Submission.Detail)
				assert.Equal(t, url.Values{"f0": {"x"}}, c.Submission.Form, "the operator's input is kept")
				assert.False(t, c.Submission.SettledAt.IsZero())
			}},
		{"answered elsewhere refuses", []step{apply(answeredBy("someone-else")), begin("t1", "c1", ErrSettled)}, "", "",
			func(t *testing.T, c Card) {
				assert.True(t, c.AnsweredElsewhere)
				assert.Nil(t, c.Submission)
			}},
		{"answered elsewhere while ours was rejected", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionRejected, "busy"), apply(answeredBy("theirs")), begin("t2", "c2", ErrSettled),
		}, SubmissionRejected, "c1", func(t *testing.T, c Card) { assert.True(t, c.AnsweredElsewhere) }},
		{"timed out refuses", []step{apply(func(t *testing.T) *aep.Event {
			return lifecycle(t, "attention.timeout", "to", "r1", "r1", 2, nil)
		}), begin("t1", "c1", ErrSettled)}, "", "", nil},
		{"resolved refuses", []step{apply(func(t *testing.T) *aep.Event {
			return lifecycle(t, "attention.resolved", "rs", "r1", "", 2, map[string]any{"resolution": "dismissed"})
		}), begin("t1", "c1", ErrSettled)}, "", "", nil},
		{"session ended refuses", []step{apply(func(t *testing.T) *aep.Event {
			return lifecycle(t, "session.ended", "se", "", "", 9, nil)
		}), begin("t1", "c1", ErrSettled)}, "", "", nil},
		{"empty token is invalid", []step{begin("", "c1", ErrInvalidSubmission)}, "", "", nil},
		{"empty command id is invalid", []step{begin("t1", "", ErrInvalidSubmission)}, "", "", nil},
		{"a reused command id is invalid", []step{
			begin("t1", "c1", nil), settleTo("c1", SubmissionFailed, "x"), begin("t2", "c1", ErrInvalidSubmission),
		}, SubmissionFailed, "c1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(request(t, "r1", 1, formData("")))
			for _, s := range tc.steps {
				s(t, in)
			}
			c, ok := in.Card(cardIDOf("r1"))
			require.True(t, ok)
			if tc.wantState == "" {
				assert.Nil(t, c.Submission)
			} else {
				require.NotNil(t, c.Submission)
				assert.Equal(t, tc.wantState, c.Submission.State)
				assert.Equal(t, tc.wantCmd, c.Submission.CommandID)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestBeginSubmissionRefusals(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	_, err := in.BeginSubmission("cnope", sub("t", "c"))
	assert.ErrorIs(t, err, ErrNotFound)

	in.Apply(request(t, "bad", 1, map[string]any{"kind": "form", "prompt": "p",
		"fields": []map[string]any{{"id": "a", "type": "string", "label": "A"}, {"id": "a", "type": "string", "label": "B"}}}))
	_, err = in.BeginSubmission(cardIDOf("bad"), sub("t", "c"))
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestBeginSubmissionReturnsACopy(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	s := sub("t1", "c1")
	got, err := in.BeginSubmission(cardIDOf("r1"), s)
	require.NoError(t, err)
	assert.Equal(t, SubmissionSending, got.State)
	s.Form["f0"][0] = "changed by caller"
	got.Answer.Values["name"] = "changed too"
	c, _ := in.Card(cardIDOf("r1"))
	assert.Equal(t, "x", c.Submission.Form.Get("f0"))
	assert.Equal(t, "x", c.Submission.Answer.Values["name"])
}

// TestAcksFromTheFeed: control.accepted / control.rejected with cause =
// our command id settle the submission; an unrelated ack does nothing.
func TestAcksFromTheFeed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ack    func(t *testing.T) *aep.Event
		state  SubmissionState
		reason string
		detail string
	}{
		{"accepted", func(t *testing.T) *aep.Event {
			return lifecycle(t, "control.accepted", "ack1", "", "c1", 3, nil)
		}, SubmissionAccepted, "", ""},
		{"rejected with reason and detail", func(t *testing.T) *aep.Event {
			return lifecycle(t, "control.rejected", "ack1", "", "c1", 3, map[string]any{"reason": "invalid", "detail": "name: required"})
		}, SubmissionRejected, "invalid", "name: required"},
		{"ack for another command", func(t *testing.T) *aep.Event {
			return lifecycle(t, "control.accepted", "ack1", "", "c-other", 3, nil)
		}, SubmissionSending, "", ""},
		{"ack from another session", func(t *testing.T) *aep.Event {
			return ev(t, aep.Envelope{ID: "ack1", Type: "control.accepted", Cause: "c1", Source: testSource, Agent: testAgent,
				Session: "s-other", Seq: aep.Int64(3)})
		}, SubmissionSending, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(request(t, "r1", 1, formData("")))
			_, err := in.BeginSubmission(cardIDOf("r1"), sub("t1", "c1"))
			require.NoError(t, err)
			// our own command echoed by the relay is not "someone else"
			in.Apply(lifecycle(t, "control.attention.respond", "c1", "r1", "r1", -1,
				map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}))
			in.Apply(tc.ack(t))
			c, _ := in.Card(cardIDOf("r1"))
			assert.Equal(t, tc.state, c.Submission.State)
			assert.Equal(t, tc.reason, c.Submission.Reason)
			assert.Equal(t, tc.detail, c.Submission.Detail)
			assert.Empty(t, c.Responders)
		})
	}
}

// TestAnswerCausedByOurAck: an outcome naming our command's ack as cause
// is ours, whichever of the two arrives first.
func TestAnswerCausedByOurAck(t *testing.T) {
	t.Parallel()
	for _, ackFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "ack first", false: "answer first"}[ackFirst], func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(request(t, "r1", 1, formData("")))
			_, err := in.BeginSubmission(cardIDOf("r1"), sub("t1", "c1"))
			require.NoError(t, err)
			ack := lifecycle(t, "control.accepted", "ack1", "", "c1", 2, nil)
			ans := lifecycle(t, "attention.answered", "a1", "r1", "ack1", 3,
				map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}})
			if ackFirst {
				in.Apply(ack)
				in.Apply(ans)
			} else {
				in.Apply(ans)
				in.Apply(ack)
			}
			c, _ := in.Card(cardIDOf("r1"))
			assert.Equal(t, StateAnswered, c.State)
			assert.False(t, c.AnsweredElsewhere)
			assert.Equal(t, SubmissionAccepted, c.Submission.State)
		})
	}
}

// TestSomeoneElseAnswering: another sender's command is a hint on the
// card, and its ack (even one that arrives before the command) is shown.
func TestSomeoneElseAnswering(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	in.Apply(lifecycle(t, "control.rejected", "ack9", "", "cmd9", 2, map[string]any{"reason": "busy"}))
	in.Apply(ev(t, aep.Envelope{ID: "cmd9", Type: "control.attention.respond", Subject: "r1", Cause: "r1",
		Source: "aep://mc/agent/mission-control", Agent: "mission-control", Session: testSession,
		Data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "z"}}}}))
	c, _ := in.Card(cardIDOf("r1"))
	require.Len(t, c.Responders, 1)
	r := c.Responders[0]
	assert.Equal(t, Responder{CommandID: "cmd9", Agent: "mission-control", Source: "aep://mc/agent/mission-control",
		Ack: SubmissionRejected, Reason: "busy", By: "mission-control", Answer: aep.Answer{Values: aep.Values{"name": "z"}},
		Capture: aep.CaptureMetadata, SeenAt: r.SeenAt}, r)
	assert.Equal(t, StatePending, c.State, "a command alone answers nothing")
	_, err := in.BeginSubmission(c.ID, sub("t1", "c1"))
	assert.NoError(t, err, "the operator may still answer")
}
