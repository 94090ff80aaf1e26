package aeptest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// TestDownlevelKeepsPayloadsValid drives fixtures/downlevel: each input is
// a valid event, payload included, and so is what aep.Downlevel makes of it
// (capture gating drops fields, never a field the schema requires).
func TestDownlevelKeepsPayloadsValid(t *testing.T) {
	t.Parallel()
	var c struct {
		Cases []struct {
			Name    string          `json:"name"`
			Ceiling string          `json:"ceiling"`
			Event   json.RawMessage `json:"event"`
		} `json:"cases"`
	}
	readFixture(t, "downlevel/cases.json", &c)
	require.NotEmpty(t, c.Cases)
	for _, tc := range c.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			in, err := aep.Decode(tc.Event)
			require.NoError(t, err)
			require.NoError(t, ValidateEvent(in), "fixture input is a valid event")
			ceiling, err := aep.ParseCapture(tc.Ceiling)
			require.NoError(t, err)
			out, err := aep.Downlevel(in, ceiling)
			require.NoError(t, err)
			assert.NoError(t, ValidateEvent(out), "down-levelled event stays valid: %s", out.Raw())
		})
	}
}

// TestMappingsArePayloadValid drives fixtures/mappings/claude-code.json:
// both mapped forms are valid attention.requested payloads at both capture
// levels.
func TestMappingsArePayloadValid(t *testing.T) {
	t.Parallel()
	var c map[string]json.RawMessage
	readFixture(t, "mappings/claude-code.json", &c)
	var names []string
	for k := range c {
		if k != "$comment" {
			names = append(names, k)
		}
	}
	requireNames(t, "mappings", names, []string{"ask_user_question", "elicitation"})
	for _, name := range names {
		var m struct {
			ExpectedData         json.RawMessage `json:"expected_data"`
			ExpectedDataMetadata json.RawMessage `json:"expected_data_metadata"`
		}
		require.NoError(t, json.Unmarshal(c[name], &m))
		for capture, data := range map[string]json.RawMessage{"redacted": m.ExpectedData, "metadata": m.ExpectedDataMetadata} {
			e, err := aep.Build(aep.Envelope{ID: "M1", Type: "attention.requested", Subject: "AskUserQuestion", Time: "2026-07-03T10:00:00Z",
				Source: "aep://h/agent/claude-code", Agent: "claude-code", Session: "s", Seq: aep.Int64(0), Capture: capture, Data: data})
			require.NoError(t, err)
			assert.NoError(t, ValidateEvent(e), "%s at %s", name, capture)
		}
	}
}

// TestBuiltRespondIsPayloadValid: a control.attention.respond made by
// aep.Build from an aep.Respond matches its payload schema.
func TestBuiltRespondIsPayloadValid(t *testing.T) {
	t.Parallel()
	text := "ship it"
	for name, answer := range map[string]aep.Answer{
		"option": {Option: "allow"},
		"text":   {Text: &text},
		"values": {Values: aep.Values{"env": "staging", "count": json.Number("3"), "ok": true}},
	} {
		e, err := aep.Build(aep.Envelope{ID: "c1", Type: "control.attention.respond", Time: "2026-07-03T10:00:00Z", Source: "aep://ui/agent/op", Agent: "op",
			Session: "s1", Subject: "r1", Cause: "r1", Capture: "redacted", Data: aep.Respond{Answer: answer}})
		require.NoError(t, err)
		assert.NoError(t, ValidateEvent(e), "%s: %s", name, e.Raw())
	}
}

// FuzzValidate: payload validation and the stream rules never panic on an
// event that decodes.
func FuzzValidate(f *testing.F) {
	for _, line := range goldenLines(f) {
		f.Add(line)
	}
	var inv invalidCorpus
	readFixture(f, "invalid/cases.json", &inv)
	for _, tc := range inv.Cases {
		if tc.Event != nil {
			f.Add([]byte(tc.Event))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := aep.Decode(b)
		if err != nil {
			return
		}
		_ = ValidateEvent(e)
		sc := NewStreamChecker()
		_ = sc.Check(e)
		_ = sc.Check(e)
	})
}
