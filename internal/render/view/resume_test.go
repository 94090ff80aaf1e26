package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// An answer restored after a restart says who sent it and when, and what
// became of it; its values stay shown.
func TestResumeStateLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 3, 10, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		sub  inbox.Submission
		kind string
		text string
	}{
		{"sent again", inbox.Submission{State: inbox.SubmissionSending, By: "alice"}, "sending",
			"Sent by alice at 3 Jul 2026 10:04:05 UTC, before aepforms restarted; sent again, waiting for the agent"},
		{"accepted", inbox.Submission{State: inbox.SubmissionAccepted, By: "alice"}, "accepted",
			"Sent by alice at 3 Jul 2026 10:04:05 UTC, before aepforms restarted; the agent accepted it, waiting for it to record it"},
		{"too old", inbox.Submission{State: inbox.SubmissionNotSent, Reason: inbox.ReasonTooOld}, "not-sent",
			"Sent by this UI at 3 Jul 2026 10:04:05 UTC, but not acknowledged before aepforms restarted, and not sent again: it was too old for the agent to recognise it. The agent may or may not have it; answer again only if it still applies."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
			sub := tc.sub
			sub.Resumed, sub.At, sub.Answer = true, at, aep.Answer{Text: strp("ship it")}
			c.Submission = &sub
			s := Card(c, viewOpts()).State
			assert.Equal(t, tc.kind, s.Kind)
			assert.Equal(t, tc.text, s.Text)
			assert.NotEmpty(t, s.Values, "what was sent is shown")
		})
	}

	t.Run("superseded", func(t *testing.T) {
		t.Parallel()
		c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
		c.State = inbox.StateTimedOut
		c.Submission = &inbox.Submission{State: inbox.SubmissionSuperseded, Resumed: true, By: "alice", At: at}
		s := Card(c, viewOpts()).State
		assert.Equal(t, "timed-out", s.Kind)
		require.Len(t, s.Notes, 1)
		assert.Equal(t, "The answer sent by alice at 3 Jul 2026 10:04:05 UTC, before aepforms restarted, was not sent again: this question had settled first.", s.Notes[0].Text)
	})
}
