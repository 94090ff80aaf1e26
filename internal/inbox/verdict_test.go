package inbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// The verdict is the one decision every reader takes: its parts agree
// with each other and with CanAnswer, in every state a card can be in.
func TestVerdict(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)
	open := Card{State: StatePending, Request: aep.Request{Kind: aep.KindPermission, Options: []aep.Option{{ID: "y", Label: "Allow"}, {ID: "n", Label: "Deny"}}}, Capture: aep.CaptureFull}
	with := func(f func(c *Card)) Card {
		c := open
		f(&c)
		return c
	}
	type want struct {
		line                                       Line
		open, settled, answerable, locked, pending bool
		refusal                                    error
	}
	tests := []struct {
		name   string
		card   Card
		viewer Viewer
		want   want
	}{
		{"open", open, Viewer{}, want{line: LinePending, open: true, answerable: true, pending: true}},
		{"open, watch-only", open, Viewer{WatchOnly: true}, want{line: LinePending, open: true, pending: true, refusal: ErrWatchOnly}},
		{"routed", with(func(c *Card) { c.State = StateRouted; c.Routes = []Route{{To: "x"}} }), Viewer{},
			want{line: LineRouted, open: true, answerable: true, pending: true}},
		{"informational: shown, not pending", with(func(c *Card) { c.Informational = true }), Viewer{},
			want{line: LineInfo, open: true, refusal: ErrInformational}},
		{"malformed: shown, not pending", with(func(c *Card) { c.Malformed = "bad" }), Viewer{},
			want{line: LineMalformed, open: true, refusal: ErrMalformed}},
		{"sending locks", with(func(c *Card) { c.Submission = &Submission{State: SubmissionSending} }), Viewer{},
			want{line: LineSending, open: true, locked: true, pending: true, refusal: ErrInFlight}},
		{"another sender's answer locks", with(func(c *Card) { c.Responders = []Responder{{CommandID: "x"}} }), Viewer{},
			want{line: LineAnswering, open: true, locked: true, pending: true, refusal: ErrOtherInFlight}},
		{"rejected opens again", with(func(c *Card) { c.Submission = &Submission{State: SubmissionRejected} }), Viewer{},
			want{line: LineRejected, open: true, answerable: true, pending: true}},
		// Between two sweeps the state is still open, the deadline passed:
		// the line says expired, as CanAnswer does, before the answer in flight.
		{"deadline passed outranks in flight", with(func(c *Card) {
			c.ExpiresAt = now.Add(-time.Second)
			c.Submission = &Submission{State: SubmissionSending}
		}), Viewer{}, want{line: LineExpired, refusal: ErrExpired}},
		{"expired by the sweep", with(func(c *Card) { c.State = StateExpired; c.ExpiresAt = now }), Viewer{},
			want{line: LineExpired, settled: true, refusal: ErrExpired}},
		{"answered elsewhere", with(func(c *Card) {
			c.State = StateAnswered
			c.Recorded = &Recorded{By: "bob", Via: "oob"}
			c.AnsweredElsewhere = true
		}), Viewer{}, want{line: LineAnswered, settled: true, refusal: ErrSettled}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := tc.card.Verdict(now, tc.viewer)
			got := want{line: v.Line, open: v.Open, settled: v.Settled, answerable: v.Answerable, locked: v.Locked, pending: v.Pending, refusal: v.Refusal}
			if tc.want.refusal == nil {
				assert.NoError(t, v.Refusal)
				got.refusal = nil
			} else {
				assert.ErrorIs(t, v.Refusal, tc.want.refusal)
				got.refusal = tc.want.refusal
			}
			assert.Equal(t, tc.want, got)
			if !tc.viewer.WatchOnly {
				assert.Equal(t, tc.card.CanAnswer(now) == nil, v.Answerable, "the verdict agrees with CanAnswer")
			}
			assert.Equal(t, v.Answerable && len(tc.card.Request.Options) > 0 && tc.card.Request.Kind == aep.KindPermission, v.Tappable,
				"a notification offers buttons exactly when the card may be answered with one")
		})
	}
}

// Who answered is decided once: this UI's operator for its own answer
// (the agent records the UI's name), the agent's record for another's.
func TestVerdictAnswered(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)
	at := now.Add(-time.Minute)
	here := Card{State: StateAnswered, Recorded: &Recorded{By: "aepforms/alice", Via: "control"},
		Submission: &Submission{By: "alice", State: SubmissionAccepted, At: at, CommandID: "cmd1"}}
	a := here.Verdict(now, Viewer{}).Answered
	require.NotNil(t, a)
	assert.Equal(t, Answered{By: "alice", Here: true, At: at, CommandID: "cmd1", Via: "control", Recorded: here.Recorded}, *a)

	elsewhere := here
	elsewhere.AnsweredElsewhere = true
	elsewhere.Recorded = &Recorded{By: "bob", Via: "oob"}
	a = elsewhere.Verdict(now, Viewer{}).Answered
	require.NotNil(t, a)
	assert.Equal(t, Answered{By: "bob", Elsewhere: true, Via: "oob", Recorded: elsewhere.Recorded}, *a)

	timedOut := Card{State: StateTimedOut}
	assert.Nil(t, timedOut.Verdict(now, Viewer{}).Answered, "no answer recorded")

	noName := here
	noName.Recorded = &Recorded{By: "aepforms", Via: "control"}
	noName.Submission = &Submission{State: SubmissionAccepted, At: at, CommandID: "cmd2"}
	a = noName.Verdict(now, Viewer{}).Answered
	require.NotNil(t, a)
	assert.Empty(t, a.By, "an operator who gave no name is not the UI's name the agent recorded")
	assert.True(t, a.Here)
}
