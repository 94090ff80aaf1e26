package form

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func answerFloat(v float64) *float64 { return &v }

// answerEveryType is a form with one field of every kind and flavour. Its
// choice ids differ from their indexes so a test sees the index -> id map.
//
//	f0 title    string, required       f5 env     select, required, closed
//	f1 notes    string                 f6 db      select, Other
//	f2 replicas number 0.5..2500, req  f7 regions multi select, required, closed
//	f3 budget   number, no range       f8 tags    multi select, Other
//	f4 page     boolean, required
func answerEveryType() aep.Request {
	return aep.Request{
		Kind:   aep.KindForm,
		Prompt: "Plan the rollout",
		Fields: []aep.FieldSpec{
			{ID: "title", Type: aep.FieldString, Label: "Title", Required: true},
			{ID: "notes", Type: aep.FieldString, Label: "Notes"},
			{ID: "replicas", Type: aep.FieldNumber, Label: "Replicas", Required: true, Min: answerFloat(0.5), Max: answerFloat(2500)},
			{ID: "budget", Type: aep.FieldNumber, Label: "Budget"},
			{ID: "page", Type: aep.FieldBoolean, Label: "Page the on-call engineer", Required: true},
			{ID: "env", Type: aep.FieldSelect, Label: "Environment", Required: true, Choices: []aep.Choice{
				{ID: "prod", Label: "Production"}, {ID: "staging", Label: "Staging"}, {ID: "dev", Label: "Development"}}},
			{ID: "db", Type: aep.FieldSelect, Label: "Database", Other: true, Choices: []aep.Choice{
				{ID: "pg", Label: "PostgreSQL"}, {ID: "sqlite", Label: "SQLite"}}},
			{ID: "regions", Type: aep.FieldSelect, Label: "Regions", Multi: true, Required: true, Choices: []aep.Choice{
				{ID: "us-east", Label: "US East"}, {ID: "eu-west", Label: "EU West"}, {ID: "ap-south", Label: "AP South"}}},
			{ID: "tags", Type: aep.FieldSelect, Label: "Tags", Multi: true, Other: true, Choices: []aep.Choice{
				{ID: "a", Label: "Alpha"}, {ID: "b", Label: "Beta"}}},
		},
	}
}

// answerValidPost answers every required field of answerEveryType.
func answerValidPost() url.Values {
	return url.Values{"token": {"tok"}, "f0": {"Release 4"}, "f2": {"3"}, "f5": {"1"}, "f7": {"0"}}
}

// answerPost returns answerValidPost changed by edits: a nil slice deletes the key.
func answerPost(edits map[string][]string) url.Values {
	form := answerValidPost()
	for k, v := range edits {
		if v == nil {
			form.Del(k)
			continue
		}
		form[k] = v
	}
	return form
}

// answerValueCase posts a form and checks the value of one field (or that it was
// left out) and that nothing was refused.
type answerValueCase struct {
	name   string
	form   url.Values
	field  string
	want   any
	absent bool
}

func runAnswerValueCases(t *testing.T, cases []answerValueCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ans, problems := ParseAnswer(answerEveryType(), tc.form)
			require.Empty(t, problems, "problems: got %v, want none", problems)
			got, ok := ans.Values[tc.field]
			if tc.absent {
				assert.False(t, ok, "values[%q]: got %#v, want it left out", tc.field, got)
				return
			}
			require.True(t, ok, "values[%q]: missing, want %#v", tc.field, tc.want)
			assert.Equal(t, tc.want, got, "values[%q]: got %#v, want %#v", tc.field, got, tc.want)
		})
	}
}

// answerProblemCase posts a form and checks the one problem it gives (message
// checked when want.Message is set).
type answerProblemCase struct {
	name string
	req  *aep.Request // nil = answerEveryType
	form url.Values
	want aep.Problem
}

func runAnswerProblemCases(t *testing.T, cases []answerProblemCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := answerEveryType()
			if tc.req != nil {
				req = *tc.req
			}
			ans, problems := ParseAnswer(req, tc.form)
			assert.Equal(t, aep.Answer{}, ans, "answer: got %#v, want the zero answer when refused", ans)
			require.Len(t, problems, 1, "problems: got %v, want exactly one", problems)
			p := problems[0]
			assert.Equal(t, tc.want.Field, p.Field, "problem field: got %q, want %q (%v)", p.Field, tc.want.Field, p)
			assert.Equal(t, tc.want.Code, p.Code, "problem code: got %q, want %q (%v)", p.Code, tc.want.Code, p)
			assertAnswerMessage(t, p.Message)
			if tc.want.Message != "" {
				assert.Equal(t, tc.want.Message, p.Message, "problem message: got %q, want %q", p.Message, tc.want.Message)
			}
		})
	}
}

// assertAnswerMessage checks a message says what to do (UI.md "Errors").
func assertAnswerMessage(t *testing.T, msg string) {
	t.Helper()
	assert.NotEmpty(t, msg, "message: got empty, want words saying what to do")
	assert.NotContains(t, strings.ToLower(msg), "invalid", "message %q: never say invalid", msg)
}

func TestParseAnswerValidPost(t *testing.T) {
	t.Parallel()
	ans, problems := ParseAnswer(answerEveryType(), answerValidPost())
	require.Empty(t, problems)
	want := aep.Values{
		"title":    "Release 4",
		"replicas": json.Number("3"),
		"page":     false,
		"env":      "staging",
		"regions":  []any{"us-east"},
		"tags":     []any{},
	}
	assert.Equal(t, want, ans.Values, "values: got %#v, want %#v", ans.Values, want)
	assert.Empty(t, ans.Option, "option: got %q, want none on a form", ans.Option)
	assert.Nil(t, ans.Text, "text: got %v, want none on a form", ans.Text)
}

func TestParseAnswerString(t *testing.T) {
	t.Parallel()
	runAnswerValueCases(t, []answerValueCase{
		{name: "text as typed, spaces kept", form: answerPost(map[string][]string{"f0": {"  two  spaces "}}), field: "title", want: "  two  spaces "},
		{name: "line breaks kept, as LF", form: answerPost(map[string][]string{"f1": {"line one\r\nline two"}}), field: "notes", want: "line one\nline two"},
		{name: "a lone CR is a line break", form: answerPost(map[string][]string{"f1": {"a\rb\n\nc"}}), field: "notes", want: "a\nb\n\nc"},
		{name: "empty optional left out", form: answerPost(map[string][]string{"f1": {""}}), field: "notes", absent: true},
		{name: "blank optional left out", form: answerPost(map[string][]string{"f1": {"  \t "}}), field: "notes", absent: true},
		{name: "absent optional left out", form: answerValidPost(), field: "notes", absent: true},
		{name: "unicode kept", form: answerPost(map[string][]string{"f0": {"Zürich 🚀"}}), field: "title", want: "Zürich 🚀"},
	})
	runAnswerProblemCases(t, []answerProblemCase{
		{name: "required missing", form: answerPost(map[string][]string{"f0": nil}),
			want: aep.Problem{Field: "title", Code: aep.ProblemRequired, Message: "Enter an answer"}},
		{name: "required empty", form: answerPost(map[string][]string{"f0": {""}}),
			want: aep.Problem{Field: "title", Code: aep.ProblemRequired, Message: "Enter an answer"}},
		{name: "required blank-only", form: answerPost(map[string][]string{"f0": {"   \n"}}),
			want: aep.Problem{Field: "title", Code: aep.ProblemRequired, Message: "Enter an answer: spaces alone are not one"}},
		{name: "bytes that are not UTF-8", form: answerPost(map[string][]string{"f1": {"caf\xe9"}}),
			want: aep.Problem{Field: "notes", Code: CodeNotText}},
	})
}

func TestParseAnswerNumber(t *testing.T) {
	t.Parallel()
	runAnswerValueCases(t, []answerValueCase{
		{name: "integer", form: answerPost(map[string][]string{"f2": {"42"}}), field: "replicas", want: json.Number("42")},
		{name: "decimal as typed", form: answerPost(map[string][]string{"f2": {"2.50"}}), field: "replicas", want: json.Number("2.50")},
		{name: "spaces trimmed", form: answerPost(map[string][]string{"f2": {"  7 \t"}}), field: "replicas", want: json.Number("7")},
		{name: "exponent", form: answerPost(map[string][]string{"f2": {"1E3"}}), field: "replicas", want: json.Number("1E3")},
		{name: "at min", form: answerPost(map[string][]string{"f2": {"0.5"}}), field: "replicas", want: json.Number("0.5")},
		{name: "at max", form: answerPost(map[string][]string{"f2": {"2500"}}), field: "replicas", want: json.Number("2500")},
		{name: "negative without range", form: answerPost(map[string][]string{"f3": {"-12.5"}}), field: "budget", want: json.Number("-12.5")},
		{name: "tiny without range", form: answerPost(map[string][]string{"f3": {"1e-400"}}), field: "budget", want: json.Number("1e-400")},
		{name: "empty optional left out", form: answerPost(map[string][]string{"f3": {""}}), field: "budget", absent: true},
		{name: "blank optional left out", form: answerPost(map[string][]string{"f3": {"   "}}), field: "budget", absent: true},
		// A browser's number input accepts these (HTML floating-point grammar); JSON spells them so.
		{name: "leading dot from the browser", form: answerPost(map[string][]string{"f3": {".5"}}), field: "budget", want: json.Number("0.5")},
		{name: "negative leading dot", form: answerPost(map[string][]string{"f3": {"-.25"}}), field: "budget", want: json.Number("-0.25")},
		{name: "leading zeros", form: answerPost(map[string][]string{"f3": {"007"}}), field: "budget", want: json.Number("7")},
		{name: "zeros only", form: answerPost(map[string][]string{"f3": {"000.5e2"}}), field: "budget", want: json.Number("0.5e2")},
	})
	const plain = "Enter a number, like 3 or 2.5"
	const ranged = "Enter a number between 0.5 and 2500"
	var cases []answerProblemCase
	for _, s := range []string{"NaN", "Infinity", "-Infinity", "12abc", "0x10", "1,5", "+5", "5.", ".", "-.", "1e", "--1", "1_000", "1 000", "٣"} {
		cases = append(cases, answerProblemCase{name: "not a number " + s, form: answerPost(map[string][]string{"f3": {s}}),
			want: aep.Problem{Field: "budget", Code: aep.ProblemNotNumber, Message: plain}})
	}
	cases = append(cases,
		answerProblemCase{name: "overflows float64", form: answerPost(map[string][]string{"f3": {"1e400"}}),
			want: aep.Problem{Field: "budget", Code: CodeTooLarge, Message: "Enter a smaller number: this one is too large to send"}},
		answerProblemCase{name: "overflow with range", form: answerPost(map[string][]string{"f2": {"-1e400"}}),
			want: aep.Problem{Field: "replicas", Code: CodeTooLarge, Message: ranged}},
		answerProblemCase{name: "garbage with range names the range", form: answerPost(map[string][]string{"f2": {"12abc"}}),
			want: aep.Problem{Field: "replicas", Code: aep.ProblemNotNumber, Message: ranged}},
		answerProblemCase{name: "below min", form: answerPost(map[string][]string{"f2": {"0.4"}}),
			want: aep.Problem{Field: "replicas", Code: aep.ProblemOutOfRange, Message: ranged}},
		answerProblemCase{name: "above max", form: answerPost(map[string][]string{"f2": {"2500.001"}}),
			want: aep.Problem{Field: "replicas", Code: aep.ProblemOutOfRange, Message: ranged}},
		answerProblemCase{name: "required missing", form: answerPost(map[string][]string{"f2": nil}),
			want: aep.Problem{Field: "replicas", Code: aep.ProblemRequired, Message: ranged}},
		answerProblemCase{name: "required blank", form: answerPost(map[string][]string{"f2": {"  "}}),
			want: aep.Problem{Field: "replicas", Code: aep.ProblemRequired, Message: ranged}},
	)
	runAnswerProblemCases(t, cases)

	t.Run("one-sided ranges say so", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			min, max *float64
			text     string
			want     string
		}{
			{min: answerFloat(1), text: "0", want: "Enter a number of at least 1"},
			{max: answerFloat(-0.25), text: "0", want: "Enter a number no greater than -0.25"},
			{min: answerFloat(0), max: answerFloat(1e21), text: "-1", want: "Enter a number between 0 and 1000000000000000000000"},
		} {
			req := aep.Request{Kind: aep.KindForm, Fields: []aep.FieldSpec{{ID: "n", Type: aep.FieldNumber, Label: "N", Min: tc.min, Max: tc.max}}}
			_, problems := ParseAnswer(req, url.Values{"f0": {tc.text}})
			require.Len(t, problems, 1, "problems for %q: got %v, want one", tc.text, problems)
			assert.Equal(t, tc.want, problems[0].Message, "message: got %q, want %q", problems[0].Message, tc.want)
		}
	})
}

func TestParseAnswerBoolean(t *testing.T) {
	t.Parallel()
	runAnswerValueCases(t, []answerValueCase{
		{name: "checked is true", form: answerPost(map[string][]string{"f4": {"on"}}), field: "page", want: true},
		{name: "any value present is true", form: answerPost(map[string][]string{"f4": {""}}), field: "page", want: true},
		{name: "unchecked is false", form: answerPost(map[string][]string{"f4": nil}), field: "page", want: false},
		{name: "required unchecked is false, not a problem", form: answerValidPost(), field: "page", want: false},
	})
}

func TestParseAnswerOnlyDeclaredFields(t *testing.T) {
	t.Parallel()
	form := answerValidPost()
	for k, v := range map[string]string{
		"f9": "beyond the fields", "f-1": "negative", "f01": "leading zero", "title": "agent id as a name",
		"f0-other": "Other on a string", "option": "0", "text": "a reply", "values[title]": "x", "f2-other": "9",
	} {
		form.Set(k, v)
	}
	ans, problems := ParseAnswer(answerEveryType(), form)
	require.Empty(t, problems)
	want := aep.Values{
		"title": "Release 4", "replicas": json.Number("3"), "page": false,
		"env": "staging", "regions": []any{"us-east"}, "tags": []any{},
	}
	assert.Equal(t, want, ans.Values, "values: got %#v, want only the declared fields %#v", ans.Values, want)
	assert.Empty(t, ans.Option, "option on a form with fields: got %q, want ignored", ans.Option)
	assert.Nil(t, ans.Text, "text on a form with fields: got %v, want ignored", ans.Text)
}

func TestParseAnswerProblemsMerged(t *testing.T) {
	t.Parallel()
	// An empty post: ParseAnswer and aep.ValidateValues both see the missing
	// required fields; each field gets one problem, in form order.
	_, problems := ParseAnswer(answerEveryType(), url.Values{})
	var fields []string
	for _, p := range problems {
		fields = append(fields, p.Field)
		assertAnswerMessage(t, p.Message)
	}
	want := []string{"title", "replicas", "env", "regions"}
	assert.Equal(t, want, fields, "problem fields: got %v, want %v", fields, want)
	assert.Equal(t, aep.ProblemRequired, problems[0].Code, "first problem: got %v", problems[0])
}

func TestParseAnswerCoreCheckProblems(t *testing.T) {
	t.Parallel()
	// Other text that repeats a ticked choice's id would send that id
	// twice (aep.CheckValues' duplicate): it is refused before, as an id
	// the operator never saw (readOther).
	runAnswerProblemCases(t, []answerProblemCase{
		{name: "Other text repeating a ticked id", form: answerPost(map[string][]string{"f8": {"0"}, "f8-other": {"a"}}),
			want: aep.Problem{Field: "tags", Code: CodeOtherIsChoice}},
	})
}

func TestMergeProblems(t *testing.T) {
	t.Parallel()
	fields := answerEveryType().Fields
	whole := aep.Problem{Code: "x", Message: "whole"}
	got := mergeProblems(fields,
		[]aep.Problem{{Field: "env", Code: "mine", Message: "m"}},
		[]aep.Problem{{Field: "ghost", Code: "unknown-key", Message: "g"}, {Field: "env", Code: "theirs", Message: "t"}, whole},
		[]aep.Problem{{Field: "title", Code: "c", Message: "c"}, whole, {Field: "title", Code: "d", Message: "d"}},
	)
	want := []aep.Problem{
		whole,
		{Field: "title", Code: "c", Message: "c"},
		{Field: "env", Code: "mine", Message: "m"},
		{Field: "ghost", Code: "unknown-key", Message: "g"},
	}
	assert.Equal(t, want, got, "merged: got %v, want %v", got, want)
}

func TestParseAnswerPassesCoreChecks(t *testing.T) {
	t.Parallel()
	// Whatever ParseAnswer accepts, the agent's rule and the UI's stricter
	// checks accept too.
	for name, form := range map[string]url.Values{
		"minimal": answerValidPost(),
		"everything": answerPost(map[string][]string{
			"f1": {"notes"}, "f3": {"-0"}, "f4": {"on"}, "f6": {"other"}, "f6-other": {"CockroachDB"},
			"f7": {"0", "1", "2"}, "f8": {"0", "1", "other"}, "f8-other": {"c"},
		}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ans, problems := ParseAnswer(answerEveryType(), form)
			require.Empty(t, problems)
			fields := answerEveryType().Fields
			assert.Empty(t, aep.ValidateValues(fields, ans.Values), "ValidateValues")
			assert.Empty(t, aep.CheckValues(fields, ans.Values), "CheckValues")
		})
	}
}
