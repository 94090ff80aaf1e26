package form

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func answerStr(s string) *string { return &s }

func TestParseAnswerReply(t *testing.T) {
	t.Parallel()
	allowDeny := []aep.Option{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}}
	permission := aep.Request{Kind: aep.KindPermission, Prompt: "Run rm?", Options: allowDeny}
	review := aep.Request{Kind: aep.KindReview, Prompt: "Ship it?", Options: []aep.Option{{ID: "approve", Label: "Approve"}, {ID: "changes", Label: "Request changes"}}}
	inputOpts := aep.Request{Kind: aep.KindInput, Prompt: "Which branch?", Options: []aep.Option{{ID: "main", Label: "main"}, {ID: "dev", Label: "dev"}}}
	input := aep.Request{Kind: aep.KindInput, Prompt: "What next?"}
	formless := aep.Request{Kind: aep.KindForm, Prompt: "Tell me more"}
	unknown := aep.Request{Kind: "x-survey", Prompt: "How was it?"}
	other := aep.Request{Kind: aep.KindOther, Prompt: "Anything?"}
	bareAuth := aep.Request{Kind: aep.KindAuth, Prompt: "Sign in, then say done"}

	tests := []struct {
		name string
		req  aep.Request
		form url.Values
		want aep.Answer
	}{
		{"permission option index to id", permission, url.Values{"option": {"1"}}, aep.Answer{Option: "deny"}},
		{"permission deny with a note", permission, url.Values{"option": {"1"}, "text": {"use the staging registry"}},
			aep.Answer{Option: "deny", Text: answerStr("use the staging registry")}},
		{"permission allow with a note", permission, url.Values{"option": {"0"}, "text": {"and then stop"}},
			aep.Answer{Option: "allow", Text: answerStr("and then stop")}},
		{"permission note alone is text only", permission, url.Values{"text": {"not now, ask me after lunch"}},
			aep.Answer{Text: answerStr("not now, ask me after lunch")}},
		{"permission note beside an option may name another", permission, url.Values{"option": {"1"}, "text": {"allow"}},
			aep.Answer{Option: "deny", Text: answerStr("allow")}},
		{"a note alone naming two labels is a note", aep.Request{Kind: aep.KindPermission,
			Options: []aep.Option{{ID: "a", Label: "Yes"}, {ID: "b", Label: "yes"}}}, url.Values{"text": {"yes"}},
			aep.Answer{Text: answerStr("yes")}},
		{"permission blank note is no note", permission, url.Values{"option": {"1"}, "text": {" \r\n "}}, aep.Answer{Option: "deny"}},
		{"review option with a note", review, url.Values{"option": {"1"}, "text": {"rename the flag"}},
			aep.Answer{Option: "changes", Text: answerStr("rename the flag")}},
		{"auth with options ignores text", aep.Request{Kind: aep.KindAuth, Options: allowDeny}, url.Values{"option": {"0"}, "text": {"x"}},
			aep.Answer{Option: "allow"}},
		{"same option twice collapses", permission, url.Values{"option": {"1", "1"}}, aep.Answer{Option: "deny"}},
		{"review option", review, url.Values{"option": {"1"}}, aep.Answer{Option: "changes"}},
		{"input option", inputOpts, url.Values{"option": {"1"}}, aep.Answer{Option: "dev"}},
		{"input option and text", inputOpts, url.Values{"option": {"0"}, "text": {"then rebase"}}, aep.Answer{Option: "main", Text: answerStr("then rebase")}},
		{"input with options takes text alone", inputOpts, url.Values{"text": {"feature/x"}}, aep.Answer{Text: answerStr("feature/x")}},
		{"input text as typed", input, url.Values{"text": {"  go on\r\nslowly "}}, aep.Answer{Text: answerStr("  go on\nslowly ")}},
		{"input ignores option", input, url.Values{"option": {"0"}, "text": {"x"}}, aep.Answer{Text: answerStr("x")}},
		{"form without fields takes text", formless, url.Values{"text": {"here"}}, aep.Answer{Text: answerStr("here")}},
		{"unknown kind takes text", unknown, url.Values{"text": {"fine"}}, aep.Answer{Text: answerStr("fine")}},
		{"kind other takes text", other, url.Values{"text": {"yes"}}, aep.Answer{Text: answerStr("yes")}},
		{"auth without options takes text", bareAuth, url.Values{"text": {"done"}}, aep.Answer{Text: answerStr("done")}},
		{"respond_via naming control", aep.Request{Kind: aep.KindPermission, Options: allowDeny, RespondVia: []string{aep.ViaOOB, aep.ViaControl}},
			url.Values{"option": {"0"}}, aep.Answer{Option: "allow"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, problems := ParseAnswer(tc.req, tc.form)
			require.Empty(t, problems, "problems: got %v, want none", problems)
			assert.Equal(t, tc.want, got, "answer: got %#v, want %#v", got, tc.want)
		})
	}

	runAnswerProblemCases(t, []answerProblemCase{
		{name: "permission bad index", req: &permission, form: url.Values{"option": {"2"}},
			want: aep.Problem{Code: CodeBadOption, Message: "Choose one of the options shown"}},
		{name: "permission garbage", req: &permission, form: url.Values{"option": {"deny"}},
			want: aep.Problem{Code: CodeBadOption}},
		{name: "two options", req: &permission, form: url.Values{"option": {"0", "1"}},
			want: aep.Problem{Code: CodeBadOption, Message: "Choose only one of the options"}},
		{name: "permission empty post", req: &permission, form: url.Values{"token": {"t"}},
			want: aep.Problem{Code: CodeNothingChosen, Message: "Choose one of the options, or write a note to send on its own"}},
		{name: "permission blank note alone", req: &permission, form: url.Values{"text": {"   "}},
			want: aep.Problem{Code: CodeNothingChosen}},
		// AEP-0008: the agent would apply the option a note alone names;
		// the operator presses it instead (option is the lossless channel).
		{name: "permission note alone naming an option id", req: &permission, form: url.Values{"text": {" ALLOW \n"}},
			want: aep.Problem{Code: CodeNoteIsOption, Message: "This note names the option “Allow”, so the agent would take it as that choice. Press “Allow” to choose it, or write more to send a note"}},
		{name: "permission note alone naming a label", req: &permission, form: url.Values{"text": {"deny"}},
			want: aep.Problem{Code: CodeNoteIsOption}},
		{name: "review note alone naming a label", req: &review, form: url.Values{"text": {"request changes"}},
			want: aep.Problem{Code: CodeNoteIsOption}},
		{name: "input with options empty post", req: &inputOpts, form: url.Values{"text": {"  "}},
			want: aep.Problem{Code: CodeNothingChosen, Message: "Choose one of the options, or type a reply"}},
		{name: "input blank text", req: &input, form: url.Values{"text": {" \n "}},
			want: aep.Problem{Code: CodeNothingChosen, Message: "Type a reply"}},
		{name: "form without fields empty post", req: &formless, form: url.Values{},
			want: aep.Problem{Code: CodeNothingChosen, Message: "Type a reply"}},
		{name: "text not UTF-8", req: &input, form: url.Values{"text": {"\xfe"}},
			want: aep.Problem{Code: CodeNotText}},
	})
}

func TestAcceptsOptionAndText(t *testing.T) {
	t.Parallel()
	opts := []aep.Option{{ID: "a", Label: "A"}}
	fields := []aep.FieldSpec{{ID: "f", Type: aep.FieldString, Label: "F"}}
	tests := []struct {
		name             string
		req              aep.Request
		option, wantText bool
	}{
		{"permission", aep.Request{Kind: aep.KindPermission, Options: opts}, true, true},
		{"review", aep.Request{Kind: aep.KindReview, Options: opts}, true, true},
		{"auth with options", aep.Request{Kind: aep.KindAuth, Options: opts}, true, false},
		{"permission without options", aep.Request{Kind: aep.KindPermission}, false, true},
		{"input with options", aep.Request{Kind: aep.KindInput, Options: opts}, true, true},
		{"input", aep.Request{Kind: aep.KindInput}, false, true},
		{"other", aep.Request{Kind: aep.KindOther}, false, true},
		{"unknown kind", aep.Request{Kind: "x-new"}, false, true},
		{"form with fields", aep.Request{Kind: aep.KindForm, Fields: fields, Options: opts}, false, false},
		{"form without fields", aep.Request{Kind: aep.KindForm}, false, true},
		{"form without fields, with options", aep.Request{Kind: aep.KindForm, Options: opts}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.option, AcceptsOption(tc.req), "AcceptsOption: got %v, want %v", AcceptsOption(tc.req), tc.option)
			assert.Equal(t, tc.wantText, AcceptsText(tc.req), "AcceptsText: got %v, want %v", AcceptsText(tc.req), tc.wantText)
		})
	}
}
