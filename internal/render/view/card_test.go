package view

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

func TestCardProvenance(t *testing.T) {
	t.Parallel()
	c := viewCard(viewForm())
	c.ExpiresAt = viewNow.Add(4*time.Minute + 30*time.Second)
	v := Card(c, viewOpts())
	assert.Equal(t, "card-c1", v.DOMID)
	assert.Equal(t, "/forms/cards/c1/answer", v.Form.Action, "base path honoured, trailing slash dropped")
	assert.Equal(t, "Deploy?", v.Title, "the question is the heading")
	assert.True(t, v.TitleAgent)
	assert.Equal(t, "Form", v.KindTitle)
	assert.Empty(t, v.Prompt.Blocks, "a one-line prompt is all heading")
	p := v.Prov
	assert.Equal(t, "claude-code", p.Agent)
	assert.Equal(t, "run_1", p.Run)
	assert.Equal(t, c.Key.Source, p.Source, "full source for the title")
	assert.Less(t, len([]rune(p.SourceShort)), len(c.Key.Source), "source shortened")
	assert.Contains(t, p.SourceShort, "…")
	assert.Equal(t, "2026-03-01T11:59:00Z", p.AskedISO)
	assert.Equal(t, "1 min ago", p.AskedRel)
	assert.Equal(t, "1 Mar 2026 11:59:00 UTC", p.AskedTitle)
	assert.Equal(t, "full", p.Capture)
	require.NotNil(t, p.Deadline)
	assert.Equal(t, "answer by 12:04 UTC", p.Deadline.Text, "without the script, a time of day")
	assert.Equal(t, "asked", p.AskedLead)
	assert.Equal(t, "Details", v.DetailsText)
	assert.False(t, p.Deadline.Soon)
	assert.Equal(t, "2026-03-01T12:04:30Z", p.Deadline.ISO)
	assert.Empty(t, p.Severity, "info severity is not shown")
}

func TestCardDeadlineStates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		left       time.Duration
		text       string
		soon       bool
		answerable bool
	}{
		{"minutes", 10 * time.Minute, "answer by 12:10 UTC", false, true},
		{"under a minute", 42*time.Second + 300*time.Millisecond, "answer by 12:00 UTC", true, true},
		{"hours", 90 * time.Minute, "answer by 13:30 UTC", false, true},
		{"tomorrow", 13 * time.Hour, "answer by 2 Mar 01:00 UTC", false, true},
		{"passed", -time.Second, "Deadline passed", false, false},
		{"exactly now", 0, "Deadline passed", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := viewCard(aep.Request{Kind: aep.KindInput})
			c.ExpiresAt = viewNow.Add(tc.left)
			v := Card(c, viewOpts())
			assert.Equal(t, tc.text, v.Prov.Deadline.Text)
			assert.Equal(t, tc.soon, v.Prov.Deadline.Soon, "amber under a minute")
			assert.Equal(t, tc.answerable, v.Form.Answerable)
			assert.Equal(t, tc.answerable, v.Open)
			if !tc.answerable {
				assert.Equal(t, "expired", v.State.Kind, "past the deadline at Now, before the inbox sweeps")
				assert.False(t, v.Settled, "still in the open list until the inbox settles it")
			}
		})
	}
}

func TestCardPlaceholdersAtMetadata(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{
		Kind:    aep.KindForm,
		Prompt:  "claude-code requests form: AskUserQuestion",
		Fields:  []aep.FieldSpec{{ID: "1", Type: aep.FieldSelect, Label: "1", Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}}},
		Options: nil,
	})
	c.Capture = aep.CaptureMetadata
	v := Card(c, viewOpts())
	assert.Equal(t, "labels withheld at capture metadata", v.Placeholder)
	assert.True(t, v.Prompt.Placeholder)
	f := v.Form.Fields[0]
	assert.True(t, f.Placeholder)
	assert.Equal(t, "1", f.AgentID, "the id is shown, never an invented label")
	assert.True(t, f.Choices[1].Placeholder)
	assert.Equal(t, "2", f.Choices[1].AgentID)
	assert.True(t, v.Form.Answerable, "placeholders can still be answered by id")

	c.Capture = aep.CaptureRedacted
	v = Card(c, viewOpts())
	assert.Empty(t, v.Placeholder, "redacted labels are real text")
	assert.False(t, v.Form.Fields[0].Placeholder)
}

func TestCardNotAnswerable(t *testing.T) {
	t.Parallel()
	watch := viewOpts()
	watch.Viewer = inbox.Viewer{WatchOnly: true}
	oob := viewCard(aep.Request{Kind: aep.KindPermission, Options: []aep.Option{{ID: "ok", Label: "OK"}}, RespondVia: []string{aep.ViaOOB}})
	oob.Informational = true
	sending := viewCard(viewForm())
	sending.Submission = &inbox.Submission{State: inbox.SubmissionSending, Answer: aep.Answer{Values: aep.Values{"ticket": "CHG-1"}}, Form: url.Values{"f0": {"CHG-1"}}}
	accepted := viewCard(viewForm())
	accepted.Submission = &inbox.Submission{State: inbox.SubmissionAccepted}
	malformed := viewCard(viewForm())
	malformed.Malformed = "duplicate field id \"ticket\""

	cases := []struct {
		name   string
		card   inbox.Card
		opts   Options
		form   bool // controls shown (disabled)
		state  string
		notice string
	}{
		{"watch-only", viewCard(viewForm()), watch, true, "pending", "Watch-only: this UI has no control token for the relay, so it cannot send answers."},
		{"informational", oob, viewOpts(), true, "info", ""},
		{"sending", sending, viewOpts(), false, "sending", ""},
		{"accepted", accepted, viewOpts(), false, "accepted", ""},
		{"malformed", malformed, viewOpts(), false, "malformed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := Card(tc.card, tc.opts)
			assert.Equal(t, tc.state, v.State.Kind)
			if !tc.form {
				assert.Nil(t, v.Form, "no controls")
			} else {
				require.NotNil(t, v.Form)
				assert.False(t, v.Form.Answerable, "no submit")
				for _, f := range v.Form.Fields {
					assert.True(t, f.Disabled, "field %s disabled", f.Name)
				}
			}
			if tc.notice != "" {
				require.NotEmpty(t, v.Notes)
				assert.Equal(t, tc.notice, v.Notes[0].Text)
			}
		})
	}
}

func TestCardReachability(t *testing.T) {
	t.Parallel()
	o := viewOpts()
	o.Reachable = inbox.ReachNotConnected
	v := Card(viewCard(viewForm()), o)
	require.Len(t, v.Notes, 1)
	assert.Equal(t, "warning", v.Notes[0].Tone)
	assert.Contains(t, v.Notes[0].Text, "not connected")
	assert.True(t, v.Form.Answerable, "sending stays possible: the relay's answer is shown")
	assert.Equal(t, inbox.ReachNotConnected, v.Prov.Reach)

	o.Reachable = inbox.ReachConnected
	assert.Empty(t, Card(viewCard(viewForm()), o).Notes)

}

func TestCardSubmissionInputKept(t *testing.T) {
	t.Parallel()
	c := viewCard(viewForm())
	c.Submission = &inbox.Submission{State: inbox.SubmissionRejected, Reason: aep.ReasonInvalid, Detail: "ticket must start with CHG", Form: url.Values{"f0": {"T-1"}}}
	v := Card(c, viewOpts())
	require.NotNil(t, v.Form)
	assert.True(t, v.Form.Answerable, "a rejected answer can be corrected and sent again")
	assert.Equal(t, "T-1", v.Form.Fields[0].Value, "the submission's input is kept in the form")
	assert.True(t, v.Form.Kept)

	o := viewOpts()
	o.Input = url.Values{"f0": {"CHG-2"}}
	assert.Equal(t, "CHG-2", Card(c, o).Form.Fields[0].Value, "a refused post's input wins over the submission's")
}

func TestCardSettled(t *testing.T) {
	t.Parallel()
	c := viewCard(viewForm())
	c.State = inbox.StateTimedOut
	v := Card(c, viewOpts())
	assert.True(t, v.Settled)
	assert.False(t, v.Open)
	assert.Nil(t, v.Form, "a settled card shows its outcome, not controls")
	assert.Empty(t, v.Notes)
}

func TestCardLongPrompt(t *testing.T) {
	t.Parallel()
	short := Card(viewCard(aep.Request{Kind: aep.KindInput, Prompt: "one\ntwo"}), viewOpts())
	assert.False(t, short.Prompt.Long)
	assert.Equal(t, "one\ntwo", short.Prompt.Text, "line breaks kept")
	long := Card(viewCard(aep.Request{Kind: aep.KindInput, Prompt: "1\n2\n3\n4\n5\n6\n7\n8\n9"}), viewOpts())
	assert.True(t, long.Prompt.Long)
	assert.Equal(t, "c1-prompt", long.Prompt.ID)
}

func TestCardGroupAndSort(t *testing.T) {
	t.Parallel()
	a := viewCard(viewForm())
	b := viewCard(viewForm())
	b.ID = "c2"
	b.Key.Session = "s_2"
	ga, la := groupOf(a)
	gb, _ := groupOf(b)
	assert.NotEqual(t, ga, gb, "one group per agent and session")
	assert.Regexp(t, `^group-[0-9a-f]{16}$`, ga, "group ids never carry agent text")
	assert.Equal(t, "claude-code · session s_1", la)

	soon := viewCard(viewForm())
	soon.ExpiresAt = viewNow.Add(time.Minute)
	old := viewCard(viewForm())
	old.ReceivedAt = viewNow.Add(-time.Hour)
	assert.Less(t, sortKey(soon, soon.Verdict(viewNow, inbox.Viewer{})), sortKey(old, old.Verdict(viewNow, inbox.Viewer{})), "a deadline sorts before none")
	assert.Less(t, sortKey(old, old.Verdict(viewNow, inbox.Viewer{})), sortKey(a, a.Verdict(viewNow, inbox.Viewer{})), "then the longest waiting")
}

// A refused post on a card that shows no usable form still names the
// problem on the card itself, as a message without a link (no control
// to jump to), and the page focuses it.
func TestCardRefusalWithoutForm(t *testing.T) {
	t.Parallel()
	refusal := []aep.Problem{{Code: "closed", Message: "Nothing was sent."}}
	ask := aep.Request{Kind: aep.KindInput, Prompt: "Name?"}
	cases := []struct {
		name     string
		card     func() inbox.Card
		canSend  bool
		wantForm bool // a form is still shown (disabled)
	}{
		{"settled", func() inbox.Card {
			c := viewCard(ask)
			c.State = inbox.StateAnswered
			c.Recorded = &inbox.Recorded{By: "bob", Capture: aep.CaptureFull, Answer: aep.Answer{Text: strp("x")}}
			return c
		}, true, false},
		{"in flight", func() inbox.Card {
			c := viewCard(ask)
			c.Submission = &inbox.Submission{State: inbox.SubmissionSending, Answer: aep.Answer{Text: strp("x")}}
			return c
		}, true, false},
		{"malformed", func() inbox.Card {
			c := viewCard(aep.Request{Kind: aep.KindForm, Prompt: "?"})
			c.Malformed = "duplicate field id"
			return c
		}, true, false},
		{"informational", func() inbox.Card {
			c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?", RespondVia: []string{"oob"}})
			c.Informational = true
			return c
		}, true, true},
		{"expired", func() inbox.Card {
			c := viewCard(ask)
			c.ExpiresAt = viewNow.Add(-time.Second)
			return c
		}, true, true},
		{"watch-only", func() inbox.Card { return viewCard(ask) }, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := viewOpts()
			o.Viewer = inbox.Viewer{WatchOnly: !tc.canSend}
			o.Problems = refusal
			cv := Card(tc.card(), o)
			assert.Equal(t, tc.wantForm, cv.Form != nil, "form shown: got %v, want %v", cv.Form != nil, tc.wantForm)
			if cv.Form != nil {
				assert.False(t, cv.Form.Answerable, "a refused card offers no submit")
			}
			require.Len(t, cv.Errors, 1, "the refusal is on the card")
			assert.Equal(t, form.ErrorLink{Message: "Nothing was sent."}, cv.Errors[0], "no link: no control can take focus")
			assert.Equal(t, "c1-errors", cv.ErrorsID)

			p := Page([]inbox.Card{tc.card()}, inbox.Status{FeedConnected: true}, PageOptions{
				Now: viewNow, Viewer: inbox.Viewer{WatchOnly: !tc.canSend},
				Refused: &Refused{Card: "c1", Problems: refusal},
			})
			assert.Equal(t, "c1-errors", p.FocusErrors, "the summary takes focus")
		})
	}
}

// At capture metadata a summary line names the field by its id, never by
// an invented label.
func TestCardProblemsAtMetadata(t *testing.T) {
	t.Parallel()
	c := viewCard(viewForm())
	c.Capture = aep.CaptureMetadata
	o := viewOpts()
	o.Problems = []aep.Problem{{Field: "ticket", Code: "required", Message: "Enter an answer"}}
	cv := Card(c, o)
	require.Len(t, cv.Errors, 1)
	assert.Equal(t, form.ErrorLink{Href: "#c1-f0", Message: "Enter an answer", Field: "Field ticket"}, cv.Errors[0])

	c.State = inbox.StateTimedOut
	cv = Card(c, o)
	require.Len(t, cv.Errors, 1)
	assert.Equal(t, form.ErrorLink{Message: "Enter an answer", Field: "Field ticket"}, cv.Errors[0], "unlinked on a card without controls")
}

// The heading is the prompt's first line without its Markdown; the quote
// keeps the rest, read as Markdown, its text made safe like any agent text.
func TestCardQuestionFromMarkdown(t *testing.T) {
	t.Parallel()
	v := Card(viewCard(aep.Request{Kind: aep.KindInput, Prompt: "## Release checklist for **billing-api**\n\n- [ ] tests\x07 green\n"}), viewOpts())
	assert.Equal(t, "Release checklist for billing-api", v.Title)
	assert.True(t, v.TitleAgent)
	require.Len(t, v.Prompt.Blocks, 1)
	assert.Equal(t, "tests\uFFFD green", v.Prompt.Blocks[0].Items[0].Blocks[0].Inlines[0].Text, "control characters replaced inside Markdown")

	v = Card(viewCard(aep.Request{Kind: aep.KindInput, Prompt: "Run `make`\nthen deploy"}), viewOpts())
	assert.Equal(t, "Run make", v.Title)
	require.Len(t, v.Prompt.Blocks, 1, "a first line that is part of a paragraph stays in the quote")

	v = Card(viewCard(aep.Request{Kind: aep.KindPermission}), viewOpts())
	assert.Equal(t, "Permission request", v.Title, "no prompt: the kind's title")
	assert.False(t, v.TitleAgent)

	long := strings.Repeat("word ", 60)
	v = Card(viewCard(aep.Request{Kind: aep.KindInput, Prompt: long}), viewOpts())
	assert.LessOrEqual(t, len([]rune(v.Title)), GistRunes)
	assert.Len(t, v.Prompt.Blocks, 1, "a heading cut short keeps the whole line in the quote")
}

// A card whose words the capture level withheld is headed by what a
// person still recognises, not by its kind alone ("Form"): the structural
// prompt the adapter put in their place (Claude Code's AskUserQuestion at
// capture metadata: "claude-code asks 2 questions"), once, not repeated in
// the quote; without a prompt, the agent's name. Never a label: at this
// level the labels are ids.
func TestCardPlaceholderTitle(t *testing.T) {
	t.Parallel()
	fields := []aep.FieldSpec{
		{ID: "1", Type: aep.FieldSelect, Label: "1", Required: true, Other: true, Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}},
		{ID: "2", Type: aep.FieldSelect, Label: "2", Required: true, Multi: true, Other: true, Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}},
	}
	for _, tc := range []struct {
		name, prompt  string
		title, quoted string
	}{
		{"AskUserQuestion", "claude-code asks 2 questions", "claude-code asks 2 questions", ""},
		{"down-levelled at a hop", "claude-code requests form: AskUserQuestion", "claude-code requests form: AskUserQuestion", ""},
		{"more than a line", "claude-code requests form: AskUserQuestion\nsecond line", "claude-code requests form: AskUserQuestion", "second line"},
		{"markup is text", "**claude-code** asks", "**claude-code** asks", ""},
		{"no prompt", "", "from claude-code", ""},
		{"a prompt too long to head", strings.Repeat("x", GistRunes+1), "from claude-code", strings.Repeat("x", GistRunes+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := viewCard(aep.Request{Kind: aep.KindForm, Prompt: tc.prompt, Fields: fields})
			c.Capture = aep.CaptureMetadata
			v := Card(c, viewOpts())
			assert.Equal(t, tc.title, v.Title)
			assert.True(t, v.TitleAgent, "the heading is more than the kind")
			assert.Equal(t, "Form", v.KindTitle, "the kind stays the heading's tag")
			assert.Equal(t, tc.quoted, v.Prompt.Text, "what the quote still shows")
			assert.Equal(t, "labels withheld at capture metadata", v.Placeholder)
		})
	}
}
