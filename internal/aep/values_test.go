package aep

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func f64(x float64) *float64 { return &x }

// deployForm is the golden s_form request plus a bounded number field.
var deployForm = []FieldSpec{
	{ID: "name", Type: FieldString, Label: "Service name", Required: true},
	{ID: "replicas", Type: FieldNumber, Label: "Replicas", Min: f64(0.5), Max: f64(2500)},
	{ID: "staged", Type: FieldBoolean, Label: "Deploy to staging first?"},
	{ID: "regions", Type: FieldSelect, Label: "Regions", Multi: true,
		Choices: []Choice{{ID: "1", Label: "us-east"}, {ID: "2", Label: "eu-west"}, {ID: "3", Label: "ap-south"}}},
	{ID: "db", Type: FieldSelect, Label: "Database", Other: true,
		Choices: []Choice{{ID: "1", Label: "PostgreSQL"}, {ID: "2", Label: "SQLite"}}},
	{ID: "tier", Type: FieldSelect, Label: "Tier", Required: true,
		Choices: []Choice{{ID: "gold", Label: "Gold"}, {ID: "free", Label: "Free"}}},
}

// valuesOf decodes JSON the way the package does (numbers as json.Number).
func valuesOf(t *testing.T, s string) Values {
	t.Helper()
	e, err := Decode([]byte(`{"data":` + s + `}`))
	require.NoError(t, err)
	var v Values
	require.NoError(t, e.DecodeData(&v))
	return v
}

type wantProblem struct{ field, code string }

func problemsOf(ps []Problem) []wantProblem {
	var out []wantProblem
	for _, p := range ps {
		out = append(out, wantProblem{p.Field, p.Code})
	}
	return out
}

func TestValidateValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values string
		want   []wantProblem
	}{
		{"complete answer passes", `{"name":"billing","tier":"gold","regions":["1","3"],"db":"MariaDB"}`, nil},
		{"required string missing", `{"tier":"gold"}`, []wantProblem{{"name", ProblemRequired}}},
		{"every required field missing", `{}`, []wantProblem{{"name", ProblemRequired}, {"tier", ProblemRequired}}},
		{"closed select with a non-choice string", `{"name":"x","tier":"platinum"}`, []wantProblem{{"tier", ProblemNotAChoice}}},
		{"closed multi select with a non-choice element", `{"name":"x","tier":"gold","regions":["1","mars"]}`, []wantProblem{{"regions", ProblemNotAChoice}}},
		{"other select accepts free text", `{"name":"x","tier":"gold","db":"MariaDB"}`, nil},
		// Never stricter than the spec: these are CheckValues' business.
		{"wrong types are not the spec's rule", `{"name":7,"tier":"gold","replicas":"lots","staged":"yes"}`, nil},
		{"out of range is not the spec's rule", `{"name":"x","tier":"gold","replicas":99999}`, nil},
		{"unknown keys are not the spec's rule", `{"name":"x","tier":"gold","surprise":1}`, nil},
		{"blank required text is present", `{"name":"  ","tier":"gold"}`, nil},
		{"duplicates are not the spec's rule", `{"name":"x","tier":"gold","regions":["1","1"]}`, nil},
		{"a number on a select is not a non-choice string", `{"name":"x","tier":2}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ValidateValues(deployForm, valuesOf(t, tc.values))
			assert.Equal(t, tc.want, problemsOf(got), "problems: got %+v", got)
			for _, p := range got {
				assert.NotEmpty(t, p.Message, "problem %s/%s has no message", p.Field, p.Code)
			}
		})
	}
}

func TestCheckValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		values  string
		want    []wantProblem
		message string // message of the first problem, when set
	}{
		{"complete answer passes", `{"name":"billing","replicas":3,"staged":false,"regions":["1","3"],"db":"1","tier":"free"}`, nil, ""},
		{"other text passes", `{"name":"billing","tier":"free","db":"MariaDB"}`, nil, ""},
		{"spec problems are included", `{"tier":"platinum"}`, []wantProblem{{"name", ProblemRequired}, {"tier", ProblemNotAChoice}}, "Enter a value"},
		{"number as a string", `{"name":"x","tier":"gold","replicas":"3"}`, []wantProblem{{"replicas", ProblemNotNumber}}, "Enter a number between 0.5 and 2500"},
		{"number below min", `{"name":"x","tier":"gold","replicas":0.25}`, []wantProblem{{"replicas", ProblemOutOfRange}}, "Enter a number between 0.5 and 2500"},
		{"number above max", `{"name":"x","tier":"gold","replicas":2500.5}`, []wantProblem{{"replicas", ProblemOutOfRange}}, "Enter a number between 0.5 and 2500"},
		{"number at the bounds", `{"name":"x","tier":"gold","replicas":2500}`, nil, ""},
		{"boolean as a string", `{"name":"x","tier":"gold","staged":"on"}`, []wantProblem{{"staged", ProblemNotBoolean}}, "Answer yes or no"},
		{"string field holding a number", `{"name":42,"tier":"gold"}`, []wantProblem{{"name", ProblemNotString}}, "Enter text"},
		{"blank required text", `{"name":"   ","tier":"gold"}`, []wantProblem{{"name", ProblemRequired}}, "Enter a value"},
		{"multi select answered with one string", `{"name":"x","tier":"gold","regions":"1"}`, []wantProblem{{"regions", ProblemNotArray}}, "Choose options from the list"},
		{"single select answered with a list", `{"name":"x","tier":["gold"]}`, []wantProblem{{"tier", ProblemNotSingle}}, "Choose only one option"},
		{"duplicate entries", `{"name":"x","tier":"gold","regions":["2","2"]}`, []wantProblem{{"regions", ProblemDuplicate}}, "Each option can be chosen only once"},
		{"multi select with a number element", `{"name":"x","tier":"gold","regions":["1",2]}`, []wantProblem{{"regions", ProblemNotAChoice}}, ""},
		{"blank other text", `{"name":"x","tier":"gold","db":" "}`, []wantProblem{{"db", ProblemBlank}}, ""},
		{"unknown keys, sorted, last", `{"zeta":1,"name":"x","alpha":"y","tier":"gold"}`, []wantProblem{{"alpha", ProblemUnknownKey}, {"zeta", ProblemUnknownKey}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := CheckValues(deployForm, valuesOf(t, tc.values))
			assert.Equal(t, tc.want, problemsOf(got), "problems: got %+v", got)
			if tc.message != "" && assert.NotEmpty(t, got) {
				assert.Equal(t, tc.message, got[0].Message)
			}
		})
	}
}

func TestCheckValuesFieldKinds(t *testing.T) {
	t.Parallel()
	reqMulti := []FieldSpec{{ID: "m", Type: FieldSelect, Label: "M", Multi: true, Required: true, Choices: []Choice{{ID: "a", Label: "A"}}}}
	assert.Equal(t, []wantProblem{{"m", ProblemRequired}}, problemsOf(CheckValues(reqMulti, Values{"m": []any{}})), "empty required multi")
	assert.Empty(t, CheckValues(reqMulti, Values{"m": []string{"a"}}), "Go []string is a list")

	minOnly := []FieldSpec{{ID: "n", Type: FieldNumber, Label: "N", Min: f64(1)}}
	got := CheckValues(minOnly, Values{"n": 0})
	require.Len(t, got, 1)
	assert.Equal(t, "Enter a number of at least 1", got[0].Message)
	maxOnly := []FieldSpec{{ID: "n", Type: FieldNumber, Label: "N", Max: f64(10)}}
	got = CheckValues(maxOnly, Values{"n": json.Number("11")})
	require.Len(t, got, 1)
	assert.Equal(t, "Enter a number no greater than 10", got[0].Message)
	assert.Empty(t, CheckValues(maxOnly, Values{"n": 10.0}), "float64 within range")

	unknownType := []FieldSpec{{ID: "d", Type: "date", Label: "D"}}
	assert.Equal(t, []wantProblem{{"d", ProblemUnknownType}}, problemsOf(CheckValues(unknownType, Values{"d": "2026-01-01"})))
}

func TestAnswerCapture(t *testing.T) {
	t.Parallel()
	text := "please hurry"
	empty := ""
	cases := []struct {
		name string
		a    Answer
		want Capture
	}{
		{"option only", Answer{Option: "allow"}, CaptureMetadata},
		{"empty answer", Answer{}, CaptureMetadata},
		{"free text", Answer{Text: &text}, CaptureFull},
		{"empty free text is still a text member", Answer{Text: &empty}, CaptureFull},
		{"numbers, booleans and choice ids", Answer{Values: Values{"replicas": json.Number("3"), "staged": true, "regions": []any{"1", "3"}, "tier": "gold"}}, CaptureMetadata},
		{"string field value", Answer{Values: Values{"name": "billing-api"}}, CaptureFull},
		{"other text on a select", Answer{Values: Values{"db": "MariaDB"}}, CaptureFull},
		{"other text inside a multi list", Answer{Values: Values{"regions": []any{"1", "mars"}}}, CaptureFull},
		{"string under an unknown key", Answer{Values: Values{"surprise": "hello"}}, CaptureFull},
		{"number under an unknown key", Answer{Values: Values{"surprise": 1}}, CaptureMetadata},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := AnswerCapture(tc.a, deployForm)
			assert.Equal(t, tc.want, got, "capture: got %s, want %s", got, tc.want)
			assert.NotEqual(t, CaptureRedacted, got, "an answer is never sent as redacted")
		})
	}
}

func TestValidateRequest(t *testing.T) {
	t.Parallel()
	sel := func(f FieldSpec) Request { return Request{Kind: KindForm, Prompt: "p", Fields: []FieldSpec{f}} }
	cases := []struct {
		name string
		r    Request
		want []string // substrings, one per expected error
	}{
		{"golden form passes", Request{Kind: KindForm, Prompt: "Configure", Fields: deployForm}, nil},
		{"permission with options passes", Request{Kind: KindPermission, Prompt: "p", Options: []Option{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}}}, nil},
		{"missing kind", Request{Prompt: "p"}, []string{"kind is missing"}},
		{"duplicate field ids", Request{Kind: KindForm, Fields: []FieldSpec{{ID: "a", Type: FieldString, Label: "A"}, {ID: "a", Type: FieldNumber, Label: "B"}}}, []string{`field "a": the id is used by an earlier field`}},
		{"select without choices", sel(FieldSpec{ID: "db", Type: FieldSelect, Label: "DB"}), []string{`field "db" is a select without choices`}},
		{"unknown field type", sel(FieldSpec{ID: "d", Type: "date", Label: "D"}), []string{`field "d" has unknown type "date"`}},
		{"missing field type", sel(FieldSpec{ID: "d", Label: "D"}), []string{`field "d" has no type`}},
		{"min above max", sel(FieldSpec{ID: "n", Type: FieldNumber, Label: "N", Min: f64(5), Max: f64(1)}), []string{`field "n" has min 5 above max 1`}},
		{"choices on a non-select", sel(FieldSpec{ID: "s", Type: FieldString, Label: "S", Choices: []Choice{{ID: "1", Label: "x"}}}), []string{`field "s" has choices but is not a select`}},
		{"multi and other on a non-select", sel(FieldSpec{ID: "s", Type: FieldBoolean, Label: "S", Multi: true, Other: true}), []string{"sets multi", "sets other"}},
		{"min on a non-number", sel(FieldSpec{ID: "s", Type: FieldString, Label: "S", Min: f64(1)}), []string{`field "s" sets min or max but is not a number`}},
		{"duplicate choice ids", sel(FieldSpec{ID: "db", Type: FieldSelect, Label: "DB", Choices: []Choice{{ID: "1", Label: "a"}, {ID: "1", Label: "b"}}}), []string{`field "db": choice id "1" is used twice`}},
		{"choice without id and label", sel(FieldSpec{ID: "db", Type: FieldSelect, Label: "DB", Choices: []Choice{{}}}), []string{"choice 1 has no id", `choice "" has no label`}},
		{"field without id and label", sel(FieldSpec{Type: FieldString}), []string{"field 1 has no id", "field 1 has no label"}},
		{"duplicate option ids", Request{Kind: KindPermission, Options: []Option{{ID: "a", Label: "A"}, {ID: "a", Label: "B"}}}, []string{`option id "a" is used twice`}},
		{"option without label", Request{Kind: KindPermission, Options: []Option{{ID: "a"}}}, []string{`option "a" has no label`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateRequest(tc.r)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidRequest)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Len(t, unjoin(err), len(tc.want), "error count: got %v", err)
		})
	}
}

// unjoin splits an errors.Join result into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
