package aeptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// TestGoldenCorpus drives fixtures/golden/golden.jsonl: every event decodes,
// re-encodes byte-identically, passes envelope and payload validation and
// the stream rules in order, and a full redelivery of the corpus changes
// nothing (dedupe on (source, id)).
func TestGoldenCorpus(t *testing.T) {
	t.Parallel()
	lines := goldenLines(t)
	require.Equal(t, 64, len(lines), "golden corpus size")
	sc := NewStreamChecker()
	for pass := 1; pass <= 2; pass++ {
		for i, line := range lines {
			var head struct{ ID, Type string }
			require.NoError(t, json.Unmarshal(line, &head))
			t.Run(fmt.Sprintf("pass%d/%02d-%s-%s", pass, i, head.Type, head.ID), func(t *testing.T) {
				e, err := aep.Decode(line)
				require.NoError(t, err)
				assert.Equal(t, string(line), string(e.Raw()), "Raw round-trips the line")
				assert.Equal(t, head.ID, e.ID())
				assert.Equal(t, head.Type, e.Type())
				assert.NoError(t, aep.ValidateEnvelope(e), "envelope")
				assert.NoError(t, ValidatePayload(e), "payload")
				assert.NoError(t, sc.Check(e), "stream rules")
			})
		}
	}
}

// invalidExpect says how a fixtures/invalid case must fail.
type invalidExpect struct {
	layer string // "envelope", "payload" or "stream"
	attr  string // the attribute or payload path named
	err   error  // stream: the sentinel
}

var invalidCases = map[string]invalidExpect{
	"session-scoped without session":                   {"envelope", "session", nil},
	"session-scoped without seq":                       {"envelope", "seq", nil},
	"agent-scoped with session":                        {"envelope", "session", nil},
	"agent-scoped with seq":                            {"envelope", "seq", nil},
	"command with seq":                                 {"envelope", "seq", nil},
	"attention.routed with seq":                        {"envelope", "seq", nil},
	"single-segment type":                              {"envelope", "type", nil},
	"unknown category":                                 {"envelope", "type", nil},
	"uppercase in type":                                {"envelope", "type", nil},
	"vendor type too short (x.vendor.verb)":            {"envelope", "type", nil},
	"extension attribute name over 20 chars":           {"envelope", "acmeveryveryverylongext1", nil},
	"extension attribute with object value":            {"envelope", "acmemeta", nil},
	"extension attribute name with illegal charset":    {"envelope", "acme_ext", nil},
	"unknown severity":                                 {"envelope", "severity", nil},
	"malformed traceparent":                            {"envelope", "traceparent", nil},
	"unsupported envelope version":                     {"envelope", "aep", nil},
	"negative seq":                                     {"envelope", "seq", nil},
	"form select field without choices":                {"payload", "data.fields[0]", nil},
	"agent.presence with an unregistered state":        {"payload", "data.state", nil},
	"agent.presence missing the required state":        {"payload", "data", nil},
	"agent.health with an unregistered status":         {"payload", "data.status", nil},
	"session.compacted with a non-integer token count": {"payload", "data.estimated_token_count", nil},
	"state.delta with a non-array delta":               {"payload", "data.delta", nil},
	"run.finished cost missing the required currency":  {"payload", "data.cost", nil},
	"tool.completed cost total is a string (amounts are numbers, not bare-float strings)": {"payload", "data.cost.total", nil},
	"form answered with a non-choice string for a select without other:true":              {"stream", "data.answer.values.1", ErrInvalidAnswer},
	"second run terminal (finished then cancelled)":                                       {"stream", "type", ErrSecondTerminal},
	"run terminal repeated (failed twice, distinct events)":                               {"stream", "type", ErrSecondTerminal},
	"session ends with a dangling attention request":                                      {"stream", "type", ErrPendingAtEnd},
	"id collision within one emitter (same (source,id), different content)":               {"stream", "id", ErrIDCollision},
	"seq regression without an epoch bump":                                                {"stream", "seq", ErrSeqRegression},
	"epoch regression":                                                                    {"stream", "epoch", ErrEpochRegression},
	"second ack for one command (accepted twice, distinct events)":                        {"stream", "cause", ErrSecondAck},
	"conflicting ack decisions for one command (accepted then rejected)":                  {"stream", "cause", ErrConflictingAck},
	"second session.ended for one session (distinct events)":                              {"stream", "type", ErrSecondSessionEnd},
}

type invalidCorpus struct {
	Cases []struct {
		Name   string            `json:"name"`
		Rule   string            `json:"rule"`
		Event  json.RawMessage   `json:"event"`
		Events []json.RawMessage `json:"events"`
	} `json:"cases"`
}

// TestInvalidCorpus drives fixtures/invalid: each of the 35 cases is
// rejected, by the layer and for the attribute its rule names, and by
// nothing else.
func TestInvalidCorpus(t *testing.T) {
	t.Parallel()
	var c invalidCorpus
	readFixture(t, "invalid/cases.json", &c)
	require.Len(t, c.Cases, 35)
	var names, want []string
	for _, tc := range c.Cases {
		names = append(names, tc.Name)
	}
	for n := range invalidCases {
		want = append(want, n)
	}
	requireNames(t, "invalid", names, want)

	for _, tc := range c.Cases {
		exp := invalidCases[tc.Name]
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if exp.layer != "stream" {
				require.NotNil(t, tc.Event, "a single-event case")
				e, err := aep.Decode(tc.Event)
				require.NoError(t, err, "decodes (validation is what rejects it)")
				envErr, payErr := aep.ValidateEnvelope(e), ValidatePayload(e)
				got, other := envErr, payErr
				if exp.layer == "payload" {
					got, other = payErr, envErr
				}
				require.Error(t, got, "%s rejects it (%s)", exp.layer, tc.Rule)
				assert.NoError(t, other, "only the %s layer objects", exp.layer)
				for _, ve := range validationErrors(t, got) {
					assert.Equal(t, exp.attr, ve.Attr, "every failure names %s: %v", exp.attr, ve)
					assert.NotEmpty(t, ve.Rule)
				}
				assert.NoError(t, NewStreamChecker().Check(e), "no stream rule for a lone event")
				return
			}
			require.GreaterOrEqual(t, len(tc.Events), 2, "a stream case")
			sc := NewStreamChecker()
			for i, raw := range tc.Events {
				e, err := aep.Decode(raw)
				require.NoError(t, err)
				require.NoError(t, ValidateEvent(e), "event %d is valid on its own", i)
				err = sc.Check(e)
				if i < len(tc.Events)-1 {
					require.NoError(t, err, "event %d keeps the stream rules", i)
					continue
				}
				require.ErrorIs(t, err, exp.err, "the last event breaks %s", tc.Rule)
				var se *StreamError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, exp.attr, se.Attr)
				assert.NotEmpty(t, se.Detail)
			}
		})
	}
}

// validationErrors flattens a joined error into its *ValidationErrors and
// fails when any part is of another kind.
func validationErrors(t *testing.T, err error) []*aep.ValidationError {
	t.Helper()
	var out []*aep.ValidationError
	for _, part := range unjoin(err) {
		var ve *aep.ValidationError
		require.True(t, errors.As(part, &ve), "part %v is a *aep.ValidationError", part)
		out = append(out, ve)
	}
	return out
}
