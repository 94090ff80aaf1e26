package aep

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMappingsFixtures drives fixtures/mappings/claude-code.json: both
// mapped forms (AskUserQuestion, MCP elicitation) are valid
// attention.requested events (their payloads against the schema: e2e/aeptest)
// and well-formed forms at both capture levels, and a hop down-levelling the redacted form to metadata yields the
// same field structure and placeholder labels the adapter emits at metadata.
func TestMappingsFixtures(t *testing.T) {
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
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var m struct {
				ExpectedData         json.RawMessage `json:"expected_data"`
				ExpectedDataMetadata json.RawMessage `json:"expected_data_metadata"`
			}
			require.NoError(t, json.Unmarshal(c[name], &m))
			event := func(capture string, data json.RawMessage) *Event {
				e, err := Build(Envelope{ID: "M1", Type: "attention.requested", Subject: "AskUserQuestion", Time: "2026-07-03T10:00:00Z",
					Source: "aep://h/agent/claude-code", Agent: "claude-code", Session: "s", Seq: Int64(0), Capture: capture, Data: data})
				require.NoError(t, err)
				require.NoError(t, ValidateEnvelope(e))
				var r Request
				require.NoError(t, e.DecodeData(&r))
				require.NoError(t, ValidateRequest(r))
				return e
			}
			full := event("redacted", m.ExpectedData)
			meta := event("metadata", m.ExpectedDataMetadata)

			down, err := Downlevel(full, CaptureMetadata)
			require.NoError(t, err)
			var got, want Request
			require.NoError(t, down.DecodeData(&got))
			require.NoError(t, meta.DecodeData(&want))
			assert.Equal(t, want.Kind, got.Kind)
			assert.Equal(t, want.Fields, got.Fields, "fields and placeholder labels")
			assert.Equal(t, want.RespondVia, got.RespondVia)
			assert.Equal(t, "claude-code requests form: AskUserQuestion", got.Prompt, "a hop synthesizes the prompt")
		})
	}
}
