package aep

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep/schemas"
)

// base is a valid session-scoped event; cases edit it.
const base = `{"aep":"0.1","id":"E1","type":"run.started","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s1","seq":0}`

// edit returns base with members set (raw JSON values) or removed (nil).
func edit(t *testing.T, set map[string]*string) []byte {
	t.Helper()
	ms, err := objectMembers([]byte(base))
	require.NoError(t, err)
	var out []member
	for _, m := range ms {
		if v, ok := set[m.Key]; ok {
			if v != nil {
				out = append(out, member{Key: m.Key, Value: json.RawMessage(*v)})
			}
			delete(set, m.Key)
			continue
		}
		out = append(out, m)
	}
	for k, v := range set {
		if v != nil {
			out = append(out, member{Key: k, Value: json.RawMessage(*v)})
		}
	}
	return encodeObject(out)
}

func raw(s string) *string { return &s }

func TestValidateEnvelopeRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		set   map[string]*string
		attrs []string // attributes named, in order; nil = valid
	}{
		{"base is valid", nil, nil},
		{"every optional attribute", map[string]*string{"subject": raw(`"x"`), "run": raw(`"r"`), "step": raw(`"s"`), "epoch": raw(`2`), "cause": raw(`"c"`),
			"traceparent": raw(`"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`), "severity": raw(`"critical"`), "capture": raw(`"none"`), "data": raw(`{}`)}, nil},
		{"missing id", map[string]*string{"id": nil}, []string{"id"}},
		{"missing everything required", map[string]*string{"aep": nil, "id": nil, "type": nil, "time": nil, "source": nil, "agent": nil}, []string{"aep", "id", "type", "time", "source", "agent"}},
		{"null optional attribute", map[string]*string{"run": raw(`null`)}, []string{"run"}},
		{"empty id", map[string]*string{"id": raw(`""`)}, []string{"id"}},
		{"empty session", map[string]*string{"session": raw(`""`)}, []string{"session"}},
		{"time without zone", map[string]*string{"time": raw(`"2026-07-03T10:00:00"`)}, []string{"time"}},
		{"time with offset and fraction", map[string]*string{"time": raw(`"2026-07-03T10:00:00.123456+02:00"`)}, nil},
		{"time lowercase t and z", map[string]*string{"time": raw(`"2026-07-03t10:00:00z"`)}, nil},
		{"time on a missing day", map[string]*string{"time": raw(`"2026-02-30T10:00:00Z"`)}, []string{"time"}},
		{"time on a leap day", map[string]*string{"time": raw(`"2028-02-29T10:00:00Z"`)}, nil},
		{"time as a date only", map[string]*string{"time": raw(`"2026-07-03"`)}, []string{"time"}},
		{"source without scheme", map[string]*string{"source": raw(`"host/agent/a"`)}, []string{"source"}},
		{"source with a space", map[string]*string{"source": raw(`"aep://h/agent a"`)}, []string{"source"}},
		{"negative epoch", map[string]*string{"epoch": raw(`-1`)}, []string{"epoch"}},
		{"unknown capture", map[string]*string{"capture": raw(`"secret"`)}, []string{"capture"}},
		{"empty severity", map[string]*string{"severity": raw(`""`)}, []string{"severity"}},
		{"data not an object", map[string]*string{"data": raw(`[1]`)}, []string{"data"}},
		{"data null", map[string]*string{"data": raw(`null`)}, []string{"data"}},
		{"extension float", map[string]*string{"acmex": raw(`1.5`)}, []string{"acmex"}},
		{"extension null", map[string]*string{"acmex": raw(`null`)}, []string{"acmex"}},
		{"extension array", map[string]*string{"acmex": raw(`["a"]`)}, []string{"acmex"}},
		{"extension scalars", map[string]*string{"acmes": raw(`"v"`), "acmei": raw(`-3`), "acmeb": raw(`false`)}, nil},
		{"bad extension name and value", map[string]*string{"Acme": raw(`{}`)}, []string{"Acme", "Acme"}},
		{"uppercase traceparent", map[string]*string{"traceparent": raw(`"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"`)}, []string{"traceparent"}},
		{"type with empty segment", map[string]*string{"type": raw(`"run..started"`)}, []string{"type"}},
		{"vendor type with dash in vendor", map[string]*string{"type": raw(`"x.my-co.tool.ran"`)}, nil},
		{"vendor type with dash in rest", map[string]*string{"type": raw(`"x.acme.tool.ran-fast"`)}, []string{"type"}},
		{"vendor agent-scoped type omits session and seq", map[string]*string{"type": raw(`"x.acme.agent.ping"`), "session": nil, "seq": nil}, nil},
		{"command without session", map[string]*string{"type": raw(`"control.pause"`), "session": nil, "seq": nil}, []string{"session"}},
		{"vendor command with seq", map[string]*string{"type": raw(`"x.acme.control.reboot"`)}, []string{"seq"}},
		{"agent-scoped with run and step", map[string]*string{"type": raw(`"agent.heartbeat"`), "session": nil, "seq": nil, "run": raw(`"r"`), "step": raw(`"s"`)}, []string{"run", "step"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := map[string]*string{}
			for k, v := range tc.set {
				set[k] = v
			}
			b := edit(t, set)
			e, err := Decode(b)
			require.NoError(t, err)
			err = ValidateEnvelope(e)
			if tc.attrs == nil {
				assert.NoError(t, err, "event %s", b)
				return
			}
			require.Error(t, err, "event %s", b)
			var got []string
			for _, ve := range validationErrors(t, err) {
				got = append(got, ve.Attr)
				assert.Contains(t, ve.Error(), "aep: "+ve.Attr+": ")
			}
			assert.Equal(t, tc.attrs, got, "attributes named: %v", err)
		})
	}
}

func TestValidateEnvelopeDuplicates(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in    string
		attrs []string
	}{
		"core attribute twice":       {strings.TrimSuffix(base, "}") + `,"type":"tool.failed"}`, []string{"type"}},
		"extension twice":            {strings.TrimSuffix(base, "}") + `,"acmex":1,"acmex":2}`, []string{"acmex"}},
		"escaped duplicate of a key": {strings.TrimSuffix(base, "}") + `,"\u0069d":"E2"}`, []string{"id"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, err := Decode([]byte(tc.in))
			require.NoError(t, err)
			var got []string
			for _, ve := range validationErrors(t, ValidateEnvelope(e)) {
				got = append(got, ve.Attr)
				assert.Equal(t, "appears more than once", ve.Rule)
			}
			assert.Equal(t, tc.attrs, got)
		})
	}
	e, err := Decode([]byte(strings.TrimSuffix(base, "}") + `,"type":"tool.failed"}`))
	require.NoError(t, err)
	assert.Equal(t, "tool.failed", e.Type(), "the last occurrence wins, as in encoding/json")
}

// TestEnvelopeAgreesWithSchema checks the hand-written envelope rules
// against schemas/aep-event.schema.json over every event in the corpora.
func TestEnvelopeAgreesWithSchema(t *testing.T) {
	t.Parallel()
	b, err := schemas.FS.ReadFile("aep-event.schema.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("aep://schemas/0.1/aep-event.schema.json", doc))
	sch, err := c.Compile("aep://schemas/0.1/aep-event.schema.json")
	require.NoError(t, err)

	check := func(t *testing.T, raw []byte) {
		t.Helper()
		e, err := Decode(raw)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		require.NoError(t, err)
		schemaErr := sch.Validate(inst)
		ours := ValidateEnvelope(e)
		assert.Equal(t, schemaErr == nil, ours == nil, "event %s: schema says %v, ValidateEnvelope says %v", raw, schemaErr, ours)
	}
	for _, line := range goldenLines(t) {
		check(t, line)
	}
	var inv invalidCorpus
	readFixture(t, "invalid/cases.json", &inv)
	for _, tc := range inv.Cases {
		if tc.Event != nil {
			check(t, tc.Event)
		}
		for _, ev := range tc.Events {
			check(t, ev)
		}
	}
}
