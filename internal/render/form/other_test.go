package form

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
)

// deployPost answers the demo deploy form (samples.DeployForm: f0 name,
// f1 staged, f2 regions, f3 db with Other) with edits applied.
func deployPost(edits map[string][]string) url.Values {
	post := url.Values{"token": {"tok"}, "f0": {"billing"}}
	for k, v := range edits {
		post[k] = v
	}
	return post
}

// TestOtherTextOnTheDeployForm is the attack run's finding: Other "2" on
// the deploy card was recorded as db:"2", which the agent reads as SQLite.
func TestOtherTextOnTheDeployForm(t *testing.T) {
	t.Parallel()
	t.Run("an id is refused, naming the choice it would be read as", func(t *testing.T) {
		t.Parallel()
		ans, problems := ParseAnswer(samples.DeployForm(), deployPost(map[string][]string{"f3": {"other"}, "f3-other": {"2"}}))
		assert.Equal(t, aep.Answer{}, ans, "answer: got %#v, want nothing sent", ans)
		require.Len(t, problems, 1, "problems: got %v", problems)
		assert.Equal(t, aep.Problem{Field: "db", Code: CodeOtherIsChoice,
			Message: "“2” would be read as the choice “SQLite”; choose it above, or type something else"}, problems[0])
		assert.Nil(t, OtherReadings(samples.DeployForm(), deployPost(map[string][]string{"f3-other": {"2"}})))
	})
	t.Run("a label is sent as the choice's id, and said so", func(t *testing.T) {
		t.Parallel()
		post := deployPost(map[string][]string{"f3": {"other"}, "f3-other": {" sqlite "}})
		ans, problems := ParseAnswer(samples.DeployForm(), post)
		require.Empty(t, problems)
		assert.Equal(t, "2", ans.Values["db"], "db: got %#v, want the SQLite id", ans.Values["db"])
		assert.Equal(t, []OtherReading{{Field: "db", Text: " sqlite ", Choice: aep.Choice{ID: "2", Label: "SQLite"}}},
			OtherReadings(samples.DeployForm(), post))
	})
	t.Run("other text is sent as typed, with no reading", func(t *testing.T) {
		t.Parallel()
		post := deployPost(map[string][]string{"f3-other": {"MariaDB"}})
		ans, problems := ParseAnswer(samples.DeployForm(), post)
		require.Empty(t, problems)
		assert.Equal(t, "MariaDB", ans.Values["db"])
		assert.Nil(t, OtherReadings(samples.DeployForm(), post))
	})
}

func TestOtherTextNeverAnotherChoice(t *testing.T) {
	t.Parallel()
	// answerEveryType: f6 db (pg PostgreSQL, sqlite SQLite, Other), f8 tags
	// (a Alpha, b Beta, Other, multi).
	runAnswerValueCases(t, []answerValueCase{
		{name: "single: label any case", form: answerPost(map[string][]string{"f6-other": {"POSTGRESQL"}}), field: "db", want: "pg"},
		{name: "single: label beside the same choice picked", form: answerPost(map[string][]string{"f6": {"1"}, "f6-other": {"SQLite"}}), field: "db", want: "sqlite"},
		{name: "single: label of the choice whose id it is", form: answerPost(map[string][]string{"f6-other": {"sqlite"}}), field: "db", want: "sqlite"},
		{name: "single: text containing a label", form: answerPost(map[string][]string{"f6-other": {"SQLite 3"}}), field: "db", want: "SQLite 3"},
		{name: "multi: label ticks the choice", form: answerPost(map[string][]string{"f8-other": {"beta"}}), field: "tags", want: []any{"b"}},
		{name: "multi: label of a ticked choice folds", form: answerPost(map[string][]string{"f8": {"1", "other"}, "f8-other": {" Beta"}}), field: "tags", want: []any{"b"}},
		{name: "multi: label in choice order", form: answerPost(map[string][]string{"f8": {"1"}, "f8-other": {"alpha"}}), field: "tags", want: []any{"a", "b"}},
	})
	placeholders := answerEveryType()
	for i := range placeholders.Fields[6].Choices {
		c := &placeholders.Fields[6].Choices[i]
		c.Label = c.ID // capture metadata: labels are placeholders equal to ids
	}
	alike := answerEveryType()
	alike.Fields[6].Choices = []aep.Choice{{ID: "x", Label: "Prod"}, {ID: "y", Label: "prod"}}
	runAnswerProblemCases(t, []answerProblemCase{
		{name: "single: an id", form: answerPost(map[string][]string{"f6": {"other"}, "f6-other": {"pg"}}),
			want: aep.Problem{Field: "db", Code: CodeOtherIsChoice, Message: "“pg” would be read as the choice “PostgreSQL”; choose it above, or type something else"}},
		{name: "single: an id in other case and spaces", form: answerPost(map[string][]string{"f6-other": {" PG "}}),
			want: aep.Problem{Field: "db", Code: CodeOtherIsChoice}},
		{name: "single: an id beside a choice", form: answerPost(map[string][]string{"f6": {"0"}, "f6-other": {"sqlite "}}),
			want: aep.Problem{Field: "db", Code: CodeOtherConflict}},
		{name: "single: a label beside another choice", form: answerPost(map[string][]string{"f6": {"0"}, "f6-other": {"SQLite"}}),
			want: aep.Problem{Field: "db", Code: CodeOtherConflict}},
		{name: "multi: an id", form: answerPost(map[string][]string{"f8-other": {"b"}}),
			want: aep.Problem{Field: "tags", Code: CodeOtherIsChoice, Message: "“b” would be read as the choice “Beta”; choose it above, or type something else"}},
		{name: "labels alike", req: &alike, form: answerPost(map[string][]string{"f6-other": {"PROD"}}),
			want: aep.Problem{Field: "db", Code: CodeOtherAmbiguous}},
	})
	t.Run("capture metadata: the placeholder is the choice", func(t *testing.T) {
		t.Parallel()
		post := answerPost(map[string][]string{"f6-other": {"sqlite"}})
		ans, problems := ParseAnswer(placeholders, post)
		require.Empty(t, problems)
		assert.Equal(t, "sqlite", ans.Values["db"])
		assert.Equal(t, []OtherReading{{Field: "db", Text: "sqlite", Choice: aep.Choice{ID: "sqlite", Label: "sqlite"}}},
			OtherReadings(placeholders, post))
	})
}
