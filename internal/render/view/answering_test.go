package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// A card locked by a command no answer of this UI sent says who sent it
// and what, shows no form (the draft is kept: the form may open again),
// and a post to it is refused in the operator's words.
func TestCardLockedByAnotherAnswer(t *testing.T) {
	t.Parallel()
	req := aep.Request{Kind: aep.KindPermission, Prompt: "Run it?",
		Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}}
	for _, tc := range []struct {
		name      string
		r         inbox.Responder
		text      string
		refusal   string
		noteCount int
	}{
		{"another UI", inbox.Responder{CommandID: "c9", Agent: "aepforms/alice", By: "alice", Answer: aep.Answer{Option: "deny"}, Capture: aep.CaptureMetadata},
			"alice answered from another UI, waiting for the agent",
			"alice already answered this from another UI, and that answer is on its way to the agent. Nothing was sent.", 0},
		{"another UI, accepted", inbox.Responder{CommandID: "c9", By: "alice", Ack: inbox.SubmissionAccepted, Answer: aep.Answer{Option: "deny"}, Capture: aep.CaptureMetadata},
			"alice answered from another UI; the agent accepted it, waiting for it to record it",
			"alice already answered this from another UI, and that answer is on its way to the agent. Nothing was sent.", 0},
		{"no name", inbox.Responder{CommandID: "c9", Answer: aep.Answer{Option: "deny"}, Capture: aep.CaptureMetadata},
			"Someone answered from another UI, waiting for the agent",
			"Someone already answered this from another UI, and that answer is on its way to the agent. Nothing was sent.", 0},
		{"this UI, not in its journal", inbox.Responder{CommandID: "c9", Agent: "aepforms", By: "aepforms", Own: true, Answer: aep.Answer{Option: "deny"}, Capture: aep.CaptureMetadata},
			"An answer was already sent from this UI, waiting for the agent",
			"An answer was already sent from this UI and is on its way to the agent. Nothing was sent.", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := viewCard(req)
			c.Responders = []inbox.Responder{tc.r}
			v := Card(c, viewOpts())
			assert.True(t, v.Open, "the request is still open")
			assert.Equal(t, "answering", v.State.Kind)
			assert.Equal(t, tc.text, v.State.Text)
			assert.True(t, v.State.Busy)
			require.Len(t, v.State.Values, 1, "what was sent")
			assert.Equal(t, "Deny", v.State.Values[0].Value)
			assert.Nil(t, v.Form, "no form while that answer is on its way")
			assert.False(t, v.DropDraft, "the browser keeps the operator's draft")
			assert.Len(t, v.Notes, tc.noteCount, "the state line says it, not a note too")

			r, ok := RefusalOf(c.CanAnswer(viewNow), c.Verdict(viewNow, inbox.Viewer{}))
			require.True(t, ok)
			assert.Equal(t, "in_flight", r.Code)
			assert.Equal(t, tc.refusal, r.Message)
		})
	}
}

// Once the agent rejected that answer, or did not ack it in its window,
// the form is back and a note says what became of it.
func TestCardOpensAgainAfterAnotherAnswer(t *testing.T) {
	t.Parallel()
	req := aep.Request{Kind: aep.KindInput, Prompt: "Name?"}
	for _, tc := range []struct {
		name string
		r    inbox.Responder
		note string
	}{
		{"rejected", inbox.Responder{CommandID: "c9", By: "alice", Ack: inbox.SubmissionRejected}, "An answer from alice was refused by the agent."},
		{"no ack in its window", inbox.Responder{CommandID: "c9", By: "alice", Silent: true}, "An answer from alice got no reply from the agent in time."},
		{"ours, rejected", inbox.Responder{CommandID: "c9", Own: true, Ack: inbox.SubmissionRejected}, "An answer sent earlier from this UI was refused by the agent."},
		{"ours, no ack", inbox.Responder{CommandID: "c9", Own: true, Silent: true}, "An answer sent earlier from this UI got no reply from the agent in time."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := viewCard(req)
			c.Responders = []inbox.Responder{tc.r}
			v := Card(c, viewOpts())
			assert.Equal(t, "pending", v.State.Kind)
			assert.NotNil(t, v.Form, "the form takes an answer again")
			require.Len(t, v.Notes, 1)
			assert.Equal(t, tc.note, v.Notes[0].Text)
			assert.NoError(t, c.CanAnswer(viewNow))
		})
	}
}

// While this UI's own answer is on its way, the state line is about it;
// another sender's answer in flight too is a note, not left unsaid.
func TestAnotherAnswerBesideOurOwn(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "Name?"})
	c.Submission = &inbox.Submission{CommandID: "ours", State: inbox.SubmissionSending, Answer: aep.Answer{Text: new("x")}}
	c.Responders = []inbox.Responder{{CommandID: "c9", By: "alice"}}
	v := Card(c, viewOpts())
	assert.Equal(t, "sending", v.State.Kind)
	require.Len(t, v.Notes, 1)
	assert.Equal(t, "Someone else is answering: alice sent an answer.", v.Notes[0].Text)
}
