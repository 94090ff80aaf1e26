package aep

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type downlevelCorpus struct {
	Cases []struct {
		Name          string          `json:"name"`
		Ceiling       string          `json:"ceiling"`
		Event         json.RawMessage `json:"event"`
		ExpectCapture string          `json:"expect_capture"`
		ExpectData    json.RawMessage `json:"expect_data"`
	} `json:"cases"`
}

func TestDownlevelFixtures(t *testing.T) {
	t.Parallel()
	var c downlevelCorpus
	readFixture(t, "downlevel/cases.json", &c)
	var names []string
	for _, tc := range c.Cases {
		names = append(names, tc.Name)
	}
	requireNames(t, "downlevel", names, []string{
		"attention.answered redacted->metadata: nested answer.text dropped, values keep structural entries only",
		"control.attention.respond redacted->metadata: same rule on the command copy observers see",
		"attention.requested kind=form redacted->metadata: prompt synthesized, labels degrade to ids, structure survives",
		"attention.requested kind=permission redacted->metadata: option labels degrade to ids",
		"tool.failed redacted->metadata: nested error.message dropped, error.type kept",
		"tool.completed full at a redacted ceiling: mechanical hop lands on metadata (§8.2e), full-gated result dropped, digest kept",
		"ceiling not lower: event passes through untouched",
		"type without annotations: data stripped wholesale (conservative direction), full input lands on metadata (§8.2e)",
		"ceiling none: envelope only",
		"tool.completed full w/ verbatim result_redacted at a redacted ceiling: the provenance claim is never minted mechanically — metadata out, redacted-gated field dropped (§8.2e)",
		"session.started full w/ verbatim label+cwd at a redacted ceiling: metadata out, redacted-gated fields dropped, structural client kept (§8.2e)",
		"tool.failed redacted source through a redacted ceiling: provenance minted at source rides unchanged (§8.2e)",
		"resource.retrieval.returned full->metadata: per-document content (full) and content_redacted drop via documents[].* annotations, id/score/metadata provenance survives",
		"assessment.evaluation.recorded full->metadata: explanation (redacted) drops, name/score.value/score.label/evaluator provenance survives",
		"assessment.feedback.received full->metadata: comment+correction (redacted) drop, rating/label/source survive",
		"resource.retrieval.reranked full->metadata: per-document content (full) and content_redacted drop in both input_documents and output_documents via [].* annotations, id/score/metadata provenance and query_digest/model/top_k/count/duration_ms survive; the query (redacted) drops",
		"resource.citation.recorded full->metadata: per-citation cited_text (full) and cited_text_redacted drop, source.uri/title (redacted) drop, source.id + offset (char/block) + document_index survive, count survives",
		"assessment.guardrail.recorded full->metadata: guardrail.explanation (redacted) drops, stage/verdict/categories/detector survive via guardrail.* annotations",
	})
	for _, tc := range c.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			in, err := Decode(tc.Event)
			require.NoError(t, err)
			require.NoError(t, ValidateEnvelope(in), "fixture input is a valid event (payloads: e2e/aeptest)")
			ceiling, err := ParseCapture(tc.Ceiling)
			require.NoError(t, err)

			out, err := Downlevel(in, ceiling)
			require.NoError(t, err)
			assert.Equal(t, tc.ExpectCapture, out.Capture().String(), "capture")
			if string(tc.ExpectData) == "null" {
				assert.False(t, out.Has("data"), "data must be gone, got %s", out.Data())
			} else {
				jsonEqual(t, tc.ExpectData, out.Data(), "data of %s", out.Raw())
			}
			assert.NoError(t, ValidateEnvelope(out), "down-levelled event stays valid: %s", out.Raw())
			if in.Capture() <= ceiling {
				assert.Same(t, in, out, "an event at or below the ceiling is returned as is")
				assert.Equal(t, string(in.Raw()), string(out.Raw()))
			}
			// Everything but capture and data is kept, bytes and order.
			assert.Equal(t, stripped(t, in.Raw()), stripped(t, out.Raw()), "envelope kept")
			// Never up-levels: applying it again at the same ceiling changes nothing.
			again, err := Downlevel(out, ceiling)
			require.NoError(t, err)
			assert.Equal(t, string(out.Raw()), string(again.Raw()), "idempotent")
		})
	}
}

// stripped returns the members of an event other than capture and data, in order.
func stripped(t *testing.T, raw []byte) []member {
	t.Helper()
	ms, err := objectMembers(raw)
	require.NoError(t, err)
	var out []member
	for _, m := range ms {
		if m.Key != "capture" && m.Key != "data" {
			out = append(out, m)
		}
	}
	return out
}

func TestDownlevelMore(t *testing.T) {
	t.Parallel()
	t.Run("extension attributes and member order survive", func(t *testing.T) {
		t.Parallel()
		in, err := Decode([]byte(`{"aep":"0.1","id":"E1","type":"tool.failed","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s","seq":1,"acmeregion":"eu-1","capture":"full","data":{"tool":{"name":"Bash"},"error":{"type":"X","message":"secret"}},"acmez":true}`))
		require.NoError(t, err)
		out, err := Downlevel(in, CaptureMetadata)
		require.NoError(t, err)
		assert.Equal(t, `{"aep":"0.1","id":"E1","type":"tool.failed","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s","seq":1,"acmeregion":"eu-1","capture":"metadata","data":{"tool":{"name":"Bash"},"error":{"type":"X"}},"acmez":true}`, string(out.Raw()))
	})
	t.Run("absent capture is metadata and gets written when lowered", func(t *testing.T) {
		t.Parallel()
		in, err := Decode([]byte(`{"aep":"0.1","id":"E2","type":"run.started","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s","seq":1,"data":{"trigger":"user"}}`))
		require.NoError(t, err)
		same, err := Downlevel(in, CaptureMetadata)
		require.NoError(t, err)
		assert.Same(t, in, same)
		out, err := Downlevel(in, CaptureNone)
		require.NoError(t, err)
		assert.Equal(t, `{"aep":"0.1","id":"E2","type":"run.started","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s","seq":1,"capture":"none"}`, string(out.Raw()))
	})
	t.Run("request without subject or option ids", func(t *testing.T) {
		t.Parallel()
		in, err := Decode([]byte(`{"aep":"0.1","id":"E3","type":"attention.requested","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"bot","session":"s","seq":1,"capture":"full","data":{"kind":"input","prompt":"What is your name?","context":{"x":1},"options":[{"label":"Yes"}]}}`))
		require.NoError(t, err)
		out, err := Downlevel(in, CaptureRedacted)
		require.NoError(t, err)
		assert.Equal(t, CaptureMetadata, out.Capture())
		jsonEqual(t, []byte(`{"kind":"input","prompt":"bot requests input","options":[{"label":"1"}]}`), out.Data())
	})
	t.Run("unknown ceiling", func(t *testing.T) {
		t.Parallel()
		in, err := Decode([]byte(`{"type":"run.started","capture":"full"}`))
		require.NoError(t, err)
		_, err = Downlevel(in, Capture(9))
		assert.Error(t, err)
	})
}
