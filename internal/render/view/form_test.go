package view

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/render/form"
)

func TestCardFieldKinds(t *testing.T) {
	t.Parallel()
	v := Card(viewCard(viewForm()), viewOpts())
	require.NotNil(t, v.Form)
	fs := v.Form.Fields
	require.Len(t, fs, 7)

	cases := []struct {
		i            int
		kind         form.FieldKind
		required     bool
		requiredAttr bool
		hint         string
	}{
		{0, form.FieldText, true, true, ""},
		{1, form.FieldTextarea, false, false, ""},
		{2, form.FieldNumber, true, true, "Between 0.5 and 2500"},
		{3, form.FieldBoolean, false, false, "Leave unticked to answer no."},
		{4, form.FieldRadios, true, false, ""},
		{5, form.FieldRadios, false, false, ""},
		{6, form.FieldCheckboxes, true, false, "Select all that apply."},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind)+"-"+fs[tc.i].AgentID, func(t *testing.T) {
			f := fs[tc.i]
			assert.Equal(t, tc.kind, f.Kind, "kind")
			assert.Equal(t, form.FieldName(tc.i), f.Name, "positional name")
			assert.Equal(t, "c1-"+form.FieldName(tc.i), f.ID, "positional id")
			assert.Equal(t, tc.required, f.Required, "required in words")
			assert.Equal(t, tc.requiredAttr, f.RequiredAttr, "HTML required")
			assert.Equal(t, tc.hint, f.Hint, "hint")
			assert.False(t, f.Disabled, "answerable card: controls enabled")
			if tc.hint != "" {
				assert.Equal(t, f.HintID, f.DescribedBy, "hint tied by aria-describedby")
			} else {
				assert.Empty(t, f.DescribedBy)
			}
		})
	}

	num := fs[2]
	assert.Equal(t, "0.5", num.Min)
	assert.Equal(t, "2500", num.Max)

	env := fs[4]
	require.Len(t, env.Choices, 2)
	assert.True(t, env.Choices[0].RequiredAttr, "a required radio group has required on its first radio")
	assert.False(t, env.Choices[1].RequiredAttr, "and on that one only")
	assert.Equal(t, "0", env.Choices[0].Value)
	assert.Equal(t, "c1-f4-c1", env.Choices[1].ID)
	assert.Equal(t, "Production", env.Choices[1].Label)
	assert.Equal(t, "c1-f4-c0", env.ErrorTarget, "a group's error link jumps to its first control")

	db := fs[5]
	require.NotNil(t, db.Other)
	assert.Equal(t, "f5-other", db.Other.Name)
	assert.Equal(t, "c1-f5-other", db.Other.InputID)
	assert.Equal(t, "c1-f5-other-choice", db.Other.ChoiceID)
	assert.Equal(t, form.ValueOther, db.Other.Value)

	for _, c := range fs[6].Choices {
		assert.False(t, c.RequiredAttr, "checkboxes are never HTML-required")
	}
}

func TestCardNumberHints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		min, max *float64
		hint     string
	}{
		{"both", viewF(1), viewF(12), "Between 1 and 12"},
		{"min only", viewF(-2.25), nil, "At least -2.25"},
		{"max only", nil, viewF(1e6), "At most 1000000"},
		{"none", nil, nil, "A number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := aep.Request{Kind: aep.KindForm, Fields: []aep.FieldSpec{{ID: "n", Type: aep.FieldNumber, Label: "N", Min: tc.min, Max: tc.max}}}
			f := Card(viewCard(req), viewOpts()).Form.Fields[0]
			assert.Equal(t, tc.hint, f.Hint)
		})
	}
}

func TestCardManyChoicesIsSelect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		choices int
		other   bool
		want    form.FieldKind
	}{
		{"seven radios", 7, false, form.FieldRadios},
		{"six and other", 6, true, form.FieldRadios},
		{"seven and other", 7, true, form.FieldSelect},
		{"eight", 8, false, form.FieldSelect},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := aep.Request{Kind: aep.KindForm, Fields: []aep.FieldSpec{{ID: "s", Type: aep.FieldSelect, Label: "S", Required: true, Other: tc.other, Choices: manyChoices(tc.choices)}}}
			f := Card(viewCard(req), viewOpts()).Form.Fields[0]
			assert.Equal(t, tc.want, f.Kind)
			assert.Equal(t, tc.want == form.FieldSelect, f.RequiredAttr, "a required <select> carries required itself")
		})
	}
}

func TestCardKeptInput(t *testing.T) {
	t.Parallel()
	o := viewOpts()
	o.Input = url.Values{
		"f0": {"CHG-1"}, "f1": {"line one\nline two"}, "f2": {"12abc"}, "f3": {"on"},
		"f4": {"1"}, "f5": {"other"}, "f5-other": {"MySQL"}, "f6": {"0", "other"}, "f6-other": {"C"},
		"token": {"old"}, "f99": {"ignored"},
	}
	f := Card(viewCard(viewForm()), o).Form
	assert.True(t, f.Kept, "kept input: the browser must not restore a draft over it")
	assert.Equal(t, "tok", f.Token, "a fresh token, never the posted one")
	fs := f.Fields
	assert.Equal(t, "CHG-1", fs[0].Value)
	assert.Equal(t, "line one\nline two", fs[1].Value)
	assert.Equal(t, "12abc", fs[2].Value, "invalid number text kept exactly")
	assert.True(t, fs[3].Checked)
	assert.False(t, fs[4].Choices[0].Checked)
	assert.True(t, fs[4].Choices[1].Checked)
	assert.True(t, fs[5].Other.Checked)
	assert.Equal(t, "MySQL", fs[5].Other.Text)
	assert.True(t, fs[6].Choices[0].Checked)
	assert.False(t, fs[6].Choices[1].Checked)
	assert.True(t, fs[6].Other.Checked)
	assert.Equal(t, "C", fs[6].Other.Text)
}

func TestCardProblems(t *testing.T) {
	t.Parallel()
	o := viewOpts()
	o.Input = url.Values{"f2": {"9000"}}
	o.Problems = []aep.Problem{
		{Field: "budget", Code: "out-of-range", Message: "Enter a number between 0.5 and 2500"},
		{Field: "budget", Code: "other", Message: "second problem on the same field is not shown"},
		{Field: "tags", Code: "required"},
		{Field: "", Code: "whole", Message: "Answer at least one question"},
		{Field: "nope", Code: "unknown_field", Message: "A key the form does not have"},
	}
	cv := Card(viewCard(viewForm()), o)
	f := cv.Form
	budget := f.Fields[2]
	assert.Equal(t, "Enter a number between 0.5 and 2500", budget.Error)
	assert.True(t, budget.Invalid())
	assert.Equal(t, "c1-f2-error c1-f2-hint", budget.DescribedBy, "error then hint")
	assert.Equal(t, "9000", budget.Value, "input kept")
	tags := f.Fields[6]
	assert.Equal(t, "Select at least one answer for “Tags”", tags.Error, "a message derived from the code when none is given")
	assert.False(t, f.Fields[0].Invalid())

	require.Len(t, cv.Errors, 4)
	assert.Equal(t, form.ErrorLink{Href: "#c1-f2", Message: budget.Error, Field: "Budget"}, cv.Errors[0], "the summary line names its field")
	assert.Equal(t, form.ErrorLink{Href: "#c1-f6-c0", Message: tags.Error}, cv.Errors[1], "a message naming the field is not prefixed again")
	assert.Equal(t, "Answer at least one question", cv.Errors[2].Message)
	assert.Empty(t, cv.Errors[2].Href, "a whole-answer problem has no field to jump to")
	assert.Equal(t, "c1-errors", cv.ErrorsID)
	for _, e := range cv.Errors {
		assert.NotContains(t, e.Message, "Invalid input")
	}
}

func TestCardReplyProblems(t *testing.T) {
	t.Parallel()
	o := viewOpts()
	o.Problems = []aep.Problem{{Code: "blank", Message: "Enter your answer"}}
	cv := Card(viewCard(aep.Request{Kind: aep.KindInput, Prompt: "Name?"}), o)
	f := cv.Form
	require.NotNil(t, f.Reply)
	assert.Equal(t, "Enter your answer", f.Reply.Error)
	assert.True(t, f.Reply.Invalid)
	assert.Equal(t, "c1-text-error", f.Reply.DescribedBy)
	require.Len(t, cv.Errors, 1)
	assert.Equal(t, "#c1-text", cv.Errors[0].Href)
}

func TestCardOptionsAndReply(t *testing.T) {
	t.Parallel()
	opts := []aep.Option{{ID: "allow_once", Label: "Allow once"}, {ID: "allow_always", Label: "Always"}, {ID: "deny", Label: "Deny"}}
	cases := []struct {
		name       string
		req        aep.Request
		options    int
		reply      bool
		submitText string
	}{
		// A permission or review card's text is a note (TestCardNote).
		{"permission", aep.Request{Kind: aep.KindPermission, Options: opts}, 3, true, ""},
		{"review", aep.Request{Kind: aep.KindReview, Options: opts[:1]}, 1, true, ""},
		{"permission without options", aep.Request{Kind: aep.KindPermission}, 0, true, "Send answer"},
		{"input", aep.Request{Kind: aep.KindInput}, 0, true, "Send answer"},
		{"input with options", aep.Request{Kind: aep.KindInput, Options: opts}, 3, true, "Send answer"},
		{"form without fields", aep.Request{Kind: aep.KindForm}, 0, true, "Send answer"},
		{"unknown kind", aep.Request{Kind: "com.example.thing"}, 0, true, "Send answer"},
		{"auth with options", aep.Request{Kind: aep.KindAuth, Options: opts[:1]}, 1, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := Card(viewCard(tc.req), viewOpts()).Form
			require.NotNil(t, f)
			assert.Len(t, f.Options, tc.options)
			assert.Equal(t, tc.reply, f.Reply != nil, "free-text reply offered")
			assert.Equal(t, tc.submitText, f.SubmitLabel)
			if f.Reply != nil {
				assert.Equal(t, form.NameText, f.Reply.Name)
				assert.Equal(t, "c1-text", f.Reply.ID)
				assert.Equal(t, tc.options == 0, f.Reply.Required, "a reply is required when it is the only way to answer")
				assert.Equal(t, (tc.req.Kind == aep.KindPermission || tc.req.Kind == aep.KindReview) && tc.options > 0, f.Reply.Note, "a note to the options")
			}
		})
	}
}

func TestCardOptionStyles(t *testing.T) {
	t.Parallel()
	styles := func(req aep.Request) (out []string) {
		for _, o := range Card(viewCard(req), viewOpts()).Form.Options {
			s := o.Style
			if o.Refusing {
				s += "+refusing"
			}
			out = append(out, s)
		}
		return out
	}
	perm := aep.Request{Kind: aep.KindPermission, Options: []aep.Option{{ID: "deny", Label: "Deny"}, {ID: "allow", Label: "Allow"}, {ID: "always", Label: "Always allow"}}}
	assert.Equal(t, []string{"deny+refusing", "secondary", "secondary"}, styles(perm),
		"a permission card puts no option forward; the one refusing option is marked, even listed first")
	review := aep.Request{Kind: aep.KindReview, Options: []aep.Option{{ID: "reject", Label: "Reject"}, {ID: "approve", Label: "Approve"}, {ID: "changes", Label: "Request changes"}}}
	assert.Equal(t, []string{"deny+refusing", "primary", "secondary"}, styles(review), "the first non-refusing option of a review is primary")
	two := aep.Request{Kind: aep.KindPermission, Options: []aep.Option{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}, {ID: "deny_always", Label: "No, never"}}}
	assert.Equal(t, []string{"secondary", "secondary", "secondary"}, styles(two),
		"two options read as refusals: neither is marked, all weigh the same")
	assert.Equal(t, "1", Card(viewCard(perm), viewOpts()).Form.Options[1].Value, "option value is its index")
}

// A permission or review card offers a note behind "Add a note": worded
// from words.go, its hint tied to the textarea, and a note-only button;
// no "Send answer" (the options and the note-only button send).
func TestCardNote(t *testing.T) {
	t.Parallel()
	req := aep.Request{Kind: aep.KindPermission, Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}}
	f := Card(viewCard(req), viewOpts()).Form
	require.NotNil(t, f.Reply)
	r := f.Reply
	assert.True(t, r.Note)
	assert.False(t, r.Open, "folded until the operator opens it")
	assert.False(t, r.Required)
	assert.Equal(t, "Add a note", r.Summary)
	assert.Equal(t, "Send the note only", r.Only)
	assert.Equal(t, "Without an option, the agent decides what the note means, and may refuse it.", r.OnlyHint)
	assert.Equal(t, r.HintID, r.DescribedBy)
	assert.Empty(t, f.SubmitLabel)
	assert.True(t, f.HoldEnter)

	o := viewOpts()
	o.Input = url.Values{"text": {"use staging"}}
	o.Problems = []aep.Problem{{Code: form.CodeNothingChosen, Message: "Choose one of the options, or write a note to send on its own"}}
	kept := Card(viewCard(req), o).Form.Reply
	assert.True(t, kept.Open, "a kept note is shown unfolded")
	assert.Equal(t, "use staging", kept.Value)
	assert.Equal(t, kept.ErrorID+" "+kept.HintID, kept.DescribedBy)
}

func TestCardLongAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		label string
		want  form.FieldKind
	}{
		{"Ticket", form.FieldText},
		{"Describe the plan", form.FieldTextarea},
		{"Why?", form.FieldTextarea},
		{"Release notes", form.FieldTextarea},
		{"Notify", form.FieldText},
	}
	for _, tc := range cases {
		req := aep.Request{Kind: aep.KindForm, Fields: []aep.FieldSpec{{ID: "x", Type: aep.FieldString, Label: tc.label}}}
		assert.Equal(t, tc.want, Card(viewCard(req), viewOpts()).Form.Fields[0].Kind, "label %q", tc.label)
	}
}
