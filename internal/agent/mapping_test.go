package agent

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// mappingFixture is testdata/aep/fixtures/mappings/claude-code.json.
type mappingFixture struct {
	AskUserQuestion struct {
		Input                askUserQuestion `json:"input"`
		ExpectedData         aep.Request     `json:"expected_data"`
		ExpectedDataMetadata aep.Request     `json:"expected_data_metadata"`
	} `json:"ask_user_question"`
	Elicitation struct {
		Input                json.RawMessage `json:"input"`
		ExpectedData         aep.Request     `json:"expected_data"`
		ExpectedDataMetadata aep.Request     `json:"expected_data_metadata"`
	} `json:"elicitation"`
}

func loadMappings(t *testing.T) mappingFixture {
	t.Helper()
	b, err := os.ReadFile("../../testdata/aep/fixtures/mappings/claude-code.json")
	require.NoError(t, err)
	var f mappingFixture
	require.NoError(t, json.Unmarshal(b, &f))
	return f
}

func TestMapAskUserQuestionMatchesFixture(t *testing.T) {
	t.Parallel()
	f := loadMappings(t).AskUserQuestion
	full := mapAskUserQuestion("claude-code", f.Input)

	assert.Equal(t, f.ExpectedData, full, "mapping at full: got vs fixture expected_data")
	assert.Equal(t, f.ExpectedData, requestAt(full, full.Prompt, aep.CaptureRedacted),
		"at redacted the real labels pass the pipeline unchanged")
	assert.Equal(t, f.ExpectedDataMetadata, requestAt(full, full.Prompt, aep.CaptureMetadata),
		"at metadata labels degrade to the index ids")
}

func TestMapElicitationMatchesFixture(t *testing.T) {
	t.Parallel()
	f := loadMappings(t).Elicitation
	in, err := parseElicitation(f.Input)
	require.NoError(t, err)
	full, meta := mapElicitation("claude-code", in)

	assert.Equal(t, f.ExpectedData, full, "mapping at full: got vs fixture expected_data")
	assert.Equal(t, f.ExpectedData, requestAt(full, meta, aep.CaptureRedacted))
	assert.Equal(t, f.ExpectedDataMetadata, requestAt(full, meta, aep.CaptureMetadata),
		"at metadata: synthesized prompt, labels = keys and enum values")
}

func TestScenarioInputsAreTheFixtureInputs(t *testing.T) {
	t.Parallel()
	f := loadMappings(t)
	var in askUserQuestion
	mustUnmarshal(askUserQuestionInput, &in)
	assert.Equal(t, f.AskUserQuestion.Input, in)

	got, err := parseElicitation([]byte(elicitationInput))
	require.NoError(t, err)
	want, err := parseElicitation(f.Elicitation.Input)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestParseElicitationKeepsPropertyOrder(t *testing.T) {
	t.Parallel()
	e, err := parseElicitation([]byte(`{"message":"m","requestedSchema":{"properties":{"z":{"type":"string"},"a":{"type":"integer","minimum":1,"maximum":5},"m":{"type":"boolean"}}}}`))
	require.NoError(t, err)
	require.Len(t, e.Properties, 3)
	assert.Equal(t, []string{"z", "a", "m"}, []string{e.Properties[0].Key, e.Properties[1].Key, e.Properties[2].Key})

	r, _ := mapElicitation("x", e)
	require.Len(t, r.Fields, 3)
	assert.Equal(t, aep.FieldNumber, r.Fields[1].Type)
	require.NotNil(t, r.Fields[1].Min)
	assert.Equal(t, 1.0, *r.Fields[1].Min)
	assert.Equal(t, 5.0, *r.Fields[1].Max)
	assert.Equal(t, "z", r.Fields[0].Label, "a property without title is labelled by its key")

	_, err = parseElicitation([]byte(`{"requestedSchema":{"properties":[1]}}`))
	assert.Error(t, err, "properties must be an object")
}
