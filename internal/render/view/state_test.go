package view

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

func TestStateLineSubmissions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		sub    inbox.Submission
		kind   string
		tone   string
		text   string
		quote  string
		busy   bool
		values bool
	}{
		{"sending", inbox.Submission{State: inbox.SubmissionSending, Answer: aep.Answer{Text: strp("hi")}}, "sending", "progress", "Sent, waiting for the agent", "", true, true},
		{"accepted", inbox.Submission{State: inbox.SubmissionAccepted, Answer: aep.Answer{Text: strp("hi")}}, "accepted", "progress", "The agent accepted the answer; waiting for it to record it", "", true, true},
		{"rejected invalid", inbox.Submission{State: inbox.SubmissionRejected, Reason: aep.ReasonInvalid, Detail: "must be even"}, "rejected", "error", "The agent did not accept the answer. Correct it below and send it again.", "must be even", false, false},
		{"rejected busy", inbox.Submission{State: inbox.SubmissionRejected, Reason: aep.ReasonBusy}, "rejected", "error", "The agent was busy and did not take the answer. Send it again in a moment.", "", false, false},
		{"rejected other reason", inbox.Submission{State: inbox.SubmissionRejected, Reason: "x-vendor"}, "rejected", "error", "The agent rejected the answer (x-vendor).", "", false, false},
		{"no-route", inbox.Submission{State: inbox.SubmissionFailed, Reason: "no-route"}, "failed", "error", "Not delivered: the agent is not connected. Your answer is kept.", "", false, false},
		{"unauthorized", inbox.Submission{State: inbox.SubmissionFailed, Reason: "unauthorized"}, "failed", "error", "Not delivered: this UI has no control token for the relay.", "", false, false},
		{"ambiguous", inbox.Submission{State: inbox.SubmissionFailed, Reason: "ambiguous", Detail: "2 targets"}, "failed", "error", "Not delivered: the relay could not tell which agent should get it. Your answer is kept.", "2 targets", false, false},
		{"unsupported", inbox.Submission{State: inbox.SubmissionFailed, Reason: "unsupported"}, "failed", "error", "Not delivered: the relay does not route answers for this request. Your answer is kept.", "", false, false},
		{"timeout", inbox.Submission{State: inbox.SubmissionFailed, Reason: "timeout"}, "failed", "error", "No answer from the agent in time; it may still act.", "", false, false},
		{"unreachable", inbox.Submission{State: inbox.SubmissionFailed, Reason: "unreachable"}, "failed", "error", "Not sent; your answer is kept. The relay could not be reached.", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
			sub := tc.sub
			c.Submission = &sub
			s := Card(c, viewOpts()).State
			assert.Equal(t, "c1-state", s.ID)
			assert.Equal(t, tc.kind, s.Kind)
			assert.Equal(t, tc.tone, s.Tone)
			assert.Equal(t, tc.text, s.Text)
			assert.Equal(t, tc.quote, s.Quote, "the agent's or relay's words are quoted as given")
			assert.Equal(t, tc.busy, s.Busy)
			assert.Equal(t, tc.values, len(s.Values) > 0, "the submitted answer is shown while in flight")
		})
	}
}

func strp(s string) *string { return &s }

func TestStateLineSettled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(*inbox.Card)
		kind string
		text string
	}{
		{"answered", func(c *inbox.Card) {
			c.State = inbox.StateResolved
			c.Recorded = &inbox.Recorded{By: "alice", Via: aep.ViaControl, Capture: aep.CaptureFull, Answer: aep.Answer{Text: strp("ok")}}
		}, "answered", "Answered by alice from this page"},
		{"answered by you", func(c *inbox.Card) {
			c.State = inbox.StateResolved
			c.Recorded = &inbox.Recorded{By: "op", Via: aep.ViaControl, Capture: aep.CaptureFull, Time: "2026-03-01T11:58:00Z"}
		}, "answered", "Answered by you (op) from this page · 2 min ago"},
		{"answered by you from this UI", func(c *inbox.Card) {
			c.State = inbox.StateResolved
			c.Submission = &inbox.Submission{By: "op", State: inbox.SubmissionAccepted}
			c.Recorded = &inbox.Recorded{By: "aepforms/op", Via: aep.ViaControl, Capture: aep.CaptureFull}
		}, "answered", "Answered by you (op) from this page"},
		{"answered by another operator of this UI", func(c *inbox.Card) {
			c.State = inbox.StateResolved
			c.Submission = &inbox.Submission{By: "alice", State: inbox.SubmissionAccepted}
			c.Recorded = &inbox.Recorded{By: "aepforms/alice", Via: aep.ViaControl, Capture: aep.CaptureFull}
		}, "answered", "Answered by alice from this page"},
		{"answered by another UI", func(c *inbox.Card) {
			c.State = inbox.StateAnswered
			c.AnsweredElsewhere = true
			c.Recorded = &inbox.Recorded{By: "op", Via: aep.ViaControl, Capture: aep.CaptureFull}
		}, "answered", "Answered elsewhere by op from another aepforms page"},
		{"answered via another way", func(c *inbox.Card) {
			c.State = inbox.StateAnswered
			c.Recorded = &inbox.Recorded{Via: "slack", Capture: aep.CaptureFull}
		}, "answered", "Answered via slack"},
		{"answered elsewhere", func(c *inbox.Card) {
			c.State = inbox.StateAnswered
			c.AnsweredElsewhere = true
			c.Recorded = &inbox.Recorded{Via: aep.ViaOOB, Capture: aep.CaptureFull, Answer: aep.Answer{Text: strp("ok")}}
		}, "answered", "Answered elsewhere in the agent's own window"},
		{"resolved auto", func(c *inbox.Card) { c.State, c.Resolution = inbox.StateResolved, aep.ResolutionAuto }, "resolved", "Resolved by the agent on its own"},
		{"dismissed", func(c *inbox.Card) { c.State, c.Resolution = inbox.StateResolved, aep.ResolutionDismissed }, "resolved", "Dismissed by the agent"},
		{"timed out", func(c *inbox.Card) { c.State, c.TimeoutMS = inbox.StateTimedOut, aep.Int64(90000) }, "timed-out", "Timed out: the agent stopped waiting after 1 min 30 s"},
		{"timed out without after", func(c *inbox.Card) { c.State = inbox.StateTimedOut }, "timed-out", "Timed out: the agent stopped waiting"},
		{"expired", func(c *inbox.Card) { c.State = inbox.StateExpired }, "expired", "Expired: the deadline passed without an answer"},
		{"session ended", func(c *inbox.Card) { c.State = inbox.StateEnded }, "session-ended", "The session ended before this was answered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
			tc.edit(&c)
			s := Card(c, viewOpts()).State
			assert.Equal(t, tc.kind, s.Kind)
			assert.Equal(t, tc.text, s.Text)
		})
	}
}

func TestStateLineRecordedValues(t *testing.T) {
	t.Parallel()
	c := viewCard(viewForm())
	c.State = inbox.StateResolved
	c.Recorded = &inbox.Recorded{By: "bob", Via: aep.ViaControl, Capture: aep.CaptureMetadata, Answer: aep.Answer{Values: aep.Values{
		"budget": json.Number("12.5"),
		"page":   false,
		"tags":   []any{"a", "b"},
	}}}
	s := Card(c, viewOpts()).State
	require.Len(t, s.Values, 7)
	want := []RecordedValue{
		{Label: "Ticket", Withheld: true},
		{Label: "Describe the plan", Withheld: true},
		{Label: "Budget", Value: "12.5"},
		{Label: "Page on-call", Value: "No"},
		{Label: "Environment", Missing: true}, // a closed choice id is kept at metadata: absent = not answered
		{Label: "Database", Withheld: true},   // a select with Other may have held text
		{Label: "Tags", Value: "A, B"},
	}
	assert.Equal(t, want, s.Values, "text withheld at metadata says so, never shows blank")
	assert.Equal(t, "Values withheld at capture metadata are not shown.", s.Withheld)

	c.Recorded.Capture = aep.CaptureFull
	c.Recorded.Answer.Values = aep.Values{"db": "MySQL", "tags": []any{"a", "custom"}, "ticket": "CHG-1"}
	s = Card(c, viewOpts()).State
	assert.Equal(t, "CHG-1", s.Values[0].Value)
	assert.Equal(t, "Other: “MySQL”", s.Values[5].Value)
	assert.Equal(t, "A, Other: “custom”", s.Values[6].Value)
	assert.True(t, s.Values[1].Missing, "at full an absent value was not answered")
	assert.Empty(t, s.Withheld)
}

func TestStateLineOptionAnswerAndWithheldText(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindPermission, Options: []aep.Option{{ID: "deny", Label: "Deny"}}})
	c.State = inbox.StateAnswered
	c.Recorded = &inbox.Recorded{Capture: aep.CaptureMetadata, Answer: aep.Answer{Option: "deny"}}
	s := Card(c, viewOpts()).State
	require.Len(t, s.Values, 1)
	assert.Equal(t, RecordedValue{Label: "Option", Value: "Deny"}, s.Values[0])

	in := viewCard(aep.Request{Kind: aep.KindInput})
	in.State = inbox.StateAnswered
	in.Recorded = &inbox.Recorded{Capture: aep.CaptureMetadata}
	s = Card(in, viewOpts()).State
	require.Len(t, s.Values, 1)
	assert.True(t, s.Values[0].Withheld, "a text answer at metadata was withheld, not empty")
}

// At capture metadata the labels are placeholders: a settled answer says
// which are ids, as the form does ("Field 1: choice 1"), never "1: 1".
func TestRecordedValuesAtMetadataSayTheyAreIDs(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindForm, Prompt: "claude-code requests form: AskUserQuestion", Fields: []aep.FieldSpec{
		{ID: "1", Type: aep.FieldSelect, Label: "1", Required: true, Other: true, Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}},
		{ID: "2", Type: aep.FieldSelect, Label: "2", Required: true, Multi: true, Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}},
	}})
	c.Capture = aep.CaptureMetadata
	c.State = inbox.StateAnswered
	c.Recorded = &inbox.Recorded{Capture: aep.CaptureMetadata, Answer: aep.Answer{Values: aep.Values{"1": "1", "2": []any{"1", "2"}}}}
	s := Card(c, viewOpts()).State
	want := []RecordedValue{
		{Label: "1", Placeholder: true, Value: "choice 1"},
		{Label: "2", Placeholder: true, Value: "choice 1, choice 2"},
	}
	assert.Equal(t, want, s.Values)
}

func TestStateLineRoutedAndResponders(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
	c.State = inbox.StateRouted
	c.Routes = []inbox.Route{{To: "slack", Via: "sink"}, {To: "pager", Via: "oncall"}}
	c.Responders = []inbox.Responder{{Agent: "mission-control", Ack: inbox.SubmissionRejected}}
	v := Card(c, viewOpts())
	assert.Equal(t, "routed", v.State.Kind)
	assert.Equal(t, "Routed to pager via oncall; still open", v.State.Text, "the latest hop")
	assert.True(t, v.Open)
	require.Len(t, v.Notes, 1)
	assert.Equal(t, "An answer from mission-control was refused by the agent.", v.Notes[0].Text)
}

// The UI's own words about a failed send are its note, never quoted as
// if the agent or the relay had said them; the relay's are quoted.
func TestStateLineFailedDetailVoice(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
	c.Submission = &inbox.Submission{State: inbox.SubmissionFailed, Reason: inbox.ReasonTimeout, Detail: "no acknowledgement within 10s after 3 sends; the agent may still act"}
	s := Card(c, viewOpts()).State
	assert.Empty(t, s.Quote)
	require.Len(t, s.Notes, 1)
	assert.Equal(t, "No acknowledgement within 10s after 3 sends; the agent may still act.", s.Notes[0].Text)

	c.Submission = &inbox.Submission{State: inbox.SubmissionFailed, Reason: "no-route", Detail: "no target for session s1"}
	s = Card(c, viewOpts()).State
	assert.Equal(t, "no target for session s1", s.Quote, "the relay's words are quoted")
	assert.Empty(t, s.Notes)
}

// Why a request or a recorded answer is malformed is the UI's reading of
// it: a note on the state line, never the quote reserved for the agent's
// words.
func TestStateLineMalformedIsTheUIsNote(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
	c.State = inbox.StateTimedOut
	c.Malformed = `duplicate field id "ticket"`
	s := Card(c, viewOpts()).State
	assert.Empty(t, s.Quote)
	require.Len(t, s.Notes, 1)
	assert.Equal(t, `duplicate field id "ticket"`, s.Notes[0].Text)

	c = viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
	c.State = inbox.StateAnswered
	c.Recorded = &inbox.Recorded{Capture: aep.CaptureFull, Malformed: "answer.values is not an object"}
	s = Card(c, viewOpts()).State
	assert.Empty(t, s.Quote)
	require.Len(t, s.Notes, 1)
	assert.Equal(t, "answer.values is not an object", s.Notes[0].Text)
}
