package form

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestParseAnswerSingleSelect(t *testing.T) {
	t.Parallel()
	runAnswerValueCases(t, []answerValueCase{
		{name: "index maps to id", form: answerPost(map[string][]string{"f5": {"2"}}), field: "env", want: "dev"},
		{name: "same index twice collapses", form: answerPost(map[string][]string{"f5": {"0", "0"}}), field: "env", want: "prod"},
		{name: "Other text on a closed field is not a control", form: answerPost(map[string][]string{"f5-other": {"mars"}}), field: "env", want: "staging"},
		{name: "Other chosen gives its text", form: answerPost(map[string][]string{"f6": {"other"}, "f6-other": {"MariaDB"}}), field: "db", want: "MariaDB"},
		{name: "Other text as typed", form: answerPost(map[string][]string{"f6": {"other"}, "f6-other": {" My DB "}}), field: "db", want: " My DB "},
		{name: "Other text alone counts as choosing Other", form: answerPost(map[string][]string{"f6-other": {"MariaDB"}}), field: "db", want: "MariaDB"},
		{name: "blank Other text beside a choice is no conflict", form: answerPost(map[string][]string{"f6": {"1"}, "f6-other": {"  "}}), field: "db", want: "sqlite"},
		{name: "optional with nothing chosen left out", form: answerValidPost(), field: "db", absent: true},
		{name: "Choose entry posts empty: nothing chosen", form: answerPost(map[string][]string{"f6": {""}}), field: "db", absent: true},
	})
	const choose = "Choose one of the options"
	cases := []answerProblemCase{
		{name: "required with nothing chosen", form: answerPost(map[string][]string{"f5": nil}),
			want: aep.Problem{Field: "env", Code: aep.ProblemRequired, Message: choose}},
		{name: "required with the Choose entry", form: answerPost(map[string][]string{"f5": {""}}),
			want: aep.Problem{Field: "env", Code: aep.ProblemRequired, Message: choose}},
		{name: "two choices", form: answerPost(map[string][]string{"f5": {"0", "1"}}),
			want: aep.Problem{Field: "env", Code: aep.ProblemNotSingle, Message: "Choose only one of the options"}},
		{name: "other on a closed field", form: answerPost(map[string][]string{"f5": {"other"}}),
			want: aep.Problem{Field: "env", Code: aep.ProblemNotAChoice, Message: choose}},
		{name: "Other chosen with no text", form: answerPost(map[string][]string{"f6": {"other"}}),
			want: aep.Problem{Field: "db", Code: aep.ProblemBlank, Message: "Type your answer under Other, or choose one of the options"}},
		{name: "Other chosen with blank text", form: answerPost(map[string][]string{"f6": {"other"}, "f6-other": {"   "}}),
			want: aep.Problem{Field: "db", Code: aep.ProblemBlank}},
		{name: "Other text beside a choice names both", form: answerPost(map[string][]string{"f6": {"0"}, "f6-other": {"MariaDB"}}),
			want: aep.Problem{Field: "db", Code: CodeOtherConflict, Message: "Choose either “PostgreSQL” or your Other answer “MariaDB”, not both"}},
		{name: "Other and a choice both picked", form: answerPost(map[string][]string{"f6": {"other", "1"}}),
			want: aep.Problem{Field: "db", Code: CodeOtherConflict, Message: "Choose either “SQLite” or Other, not both"}},
		{name: "Other text not UTF-8", form: answerPost(map[string][]string{"f6-other": {"\xff"}}),
			want: aep.Problem{Field: "db", Code: CodeNotText}},
	}
	for _, bad := range []string{"3", "-1", "01", " 1", "+1", "1.0", "abc", "Staging", "staging", "99999999999999999999"} {
		cases = append(cases, answerProblemCase{name: "garbage " + bad, form: answerPost(map[string][]string{"f5": {bad}}),
			want: aep.Problem{Field: "env", Code: aep.ProblemNotAChoice, Message: choose}})
	}
	runAnswerProblemCases(t, cases)

	t.Run("a long Other answer is cut in the message", func(t *testing.T) {
		t.Parallel()
		long := strings.Repeat("x", 200)
		_, problems := ParseAnswer(answerEveryType(), answerPost(map[string][]string{"f6": {"0"}, "f6-other": {long + "\nmore"}}))
		require.Len(t, problems, 1)
		assert.Contains(t, problems[0].Message, "“"+strings.Repeat("x", quoteInMessageMax)+"…”", "message: got %q", problems[0].Message)
		assert.NotContains(t, problems[0].Message, "\n", "message: got %q, want one line", problems[0].Message)
	})
}

func TestParseAnswerMultiSelect(t *testing.T) {
	t.Parallel()
	runAnswerValueCases(t, []answerValueCase{
		{name: "choice order, not post order", form: answerPost(map[string][]string{"f7": {"2", "0"}}), field: "regions", want: []any{"us-east", "ap-south"}},
		{name: "duplicates collapsed", form: answerPost(map[string][]string{"f7": {"1", "1", "0", "1"}}), field: "regions", want: []any{"us-east", "eu-west"}},
		{name: "every choice", form: answerPost(map[string][]string{"f7": {"0", "1", "2"}}), field: "regions", want: []any{"us-east", "eu-west", "ap-south"}},
		{name: "nothing chosen is empty array", form: answerValidPost(), field: "tags", want: []any{}},
		{name: "Other text is one more element", form: answerPost(map[string][]string{"f8": {"other", "1"}, "f8-other": {"urgent"}}), field: "tags", want: []any{"b", "urgent"}},
		{name: "Other text alone counts as ticking Other", form: answerPost(map[string][]string{"f8-other": {"urgent"}}), field: "tags", want: []any{"urgent"}},
		{name: "Other text beside choices, Other unticked", form: answerPost(map[string][]string{"f8": {"0"}, "f8-other": {"urgent"}}), field: "tags", want: []any{"a", "urgent"}},
		{name: "Other text as typed", form: answerPost(map[string][]string{"f8": {"other"}, "f8-other": {" two words "}}), field: "tags", want: []any{" two words "}},
		{name: "Other text on a closed field is not a control", form: answerPost(map[string][]string{"f7-other": {"mars"}}), field: "regions", want: []any{"us-east"}},
	})
	cases := []answerProblemCase{
		{name: "required with nothing chosen", form: answerPost(map[string][]string{"f7": nil}),
			want: aep.Problem{Field: "regions", Code: aep.ProblemRequired, Message: "Choose at least one option"}},
		{name: "Other ticked with no text", form: answerPost(map[string][]string{"f8": {"0", "other"}}),
			want: aep.Problem{Field: "tags", Code: aep.ProblemBlank, Message: "Type your answer under Other, or untick Other"}},
		{name: "other on a closed field", form: answerPost(map[string][]string{"f7": {"0", "other"}}),
			want: aep.Problem{Field: "regions", Code: aep.ProblemNotAChoice, Message: "Choose from the options shown"}},
		{name: "Other text not UTF-8", form: answerPost(map[string][]string{"f8-other": {"\xc3"}}),
			want: aep.Problem{Field: "tags", Code: CodeNotText}},
	}
	for _, bad := range []string{"3", "-1", "x", "00"} {
		cases = append(cases, answerProblemCase{name: "garbage " + bad, form: answerPost(map[string][]string{"f7": {"0", bad}}),
			want: aep.Problem{Field: "regions", Code: aep.ProblemNotAChoice, Message: "Choose from the options shown"}})
	}
	runAnswerProblemCases(t, cases)
}
