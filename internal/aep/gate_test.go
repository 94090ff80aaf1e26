package aep

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type gatingCorpus struct {
	Cases []struct {
		Name    string          `json:"name"`
		Fields  []FieldSpec     `json:"fields"`
		Values  Values          `json:"values"`
		Ceiling string          `json:"ceiling"`
		Expect  json.RawMessage `json:"expect"`
	} `json:"cases"`
}

func TestCaptureGatingFixtures(t *testing.T) {
	t.Parallel()
	var c gatingCorpus
	readFixture(t, "capture-gating/cases.json", &c)
	var names []string
	for _, tc := range c.Cases {
		names = append(names, tc.Name)
	}
	requireNames(t, "capture-gating", names, []string{
		"metadata ceiling drops free text, keeps structural (the asymmetry)",
		"redacted ceiling keeps everything (free text through the pipeline)",
		"closed single-select id is structural at metadata",
		"other free text on a select is dropped at metadata even though a choice id would survive",
		"none ceiling drops even structural values (values object empties, not leaks)",
		"keys without a matching field_spec are dropped (conservative)",
	})
	for _, tc := range c.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			ceiling, err := ParseCapture(tc.Ceiling)
			require.NoError(t, err)
			got := GateValues(tc.Fields, tc.Values, ceiling)
			require.NotNil(t, got)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			jsonEqual(t, tc.Expect, b, "gated values")
		})
	}
}

func TestGateValuesMore(t *testing.T) {
	t.Parallel()
	fields := deployForm
	in := Values{
		"name":     "mail jane@example.com",
		"regions":  []any{"1", "mars"},
		"tier":     "gold",
		"replicas": "three", // text in a number field is not structural
	}
	t.Run("metadata keeps only structural", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, Values{"tier": "gold"}, GateValues(fields, in, CaptureMetadata))
	})
	t.Run("redacted passes text through the pipeline", func(t *testing.T) {
		t.Parallel()
		got := GateValues(fields, in, CaptureRedacted)
		assert.Equal(t, "mail "+RedactedPII, got["name"])
		assert.Equal(t, []any{"1", "mars"}, got["regions"])
		assert.Equal(t, "three", got["replicas"])
	})
	t.Run("full is verbatim and copies lists", func(t *testing.T) {
		t.Parallel()
		got := GateValues(fields, in, CaptureFull)
		assert.Equal(t, "mail jane@example.com", got["name"])
		got["regions"].([]any)[0] = "changed"
		assert.Equal(t, "1", in["regions"].([]any)[0], "input not shared")
	})
	t.Run("nil values", func(t *testing.T) {
		t.Parallel()
		got := GateValues(fields, nil, CaptureFull)
		assert.NotNil(t, got)
		assert.Empty(t, got)
	})
}
