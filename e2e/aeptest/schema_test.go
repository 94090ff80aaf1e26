package aeptest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// base is a valid run.started event the payload cases edit.
const base = `{"aep":"0.1","id":"E1","type":"run.started","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s1","seq":0}`

func TestValidatePayload(t *testing.T) {
	t.Parallel()
	ev := func(typ, data string) *aep.Event {
		s := strings.Replace(base, `"run.started"`, `"`+typ+`"`, 1)
		if data != "" {
			s = strings.TrimSuffix(s, "}") + `,"data":` + data + `}`
		}
		e, err := aep.Decode([]byte(s))
		require.NoError(t, err)
		return e
	}
	cases := []struct {
		name, typ, data string
		attrs           []string
	}{
		{"no data passes", "attention.requested", "", nil},
		{"vendor type passes", "x.acme.tool.ran", `{"anything":[1,2]}`, nil},
		{"unregistered core-looking type passes", "tool.exploded", `{"x":1}`, nil},
		{"reserved type without schema passes", "message.user.submitted", `{"x":1}`, nil},
		{"unknown payload members pass", "run.started", `{"trigger":"user","acme":{"deep":true}}`, nil},
		{"form request with a bad field type", "attention.requested", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"date","label":"A"}]}`, []string{"data.fields[0].type"}},
		{"request without prompt", "attention.requested", `{"kind":"input"}`, []string{"data"}},
		{"expires_at must be a date-time", "attention.requested", `{"kind":"input","prompt":"p","expires_at":"soon"}`, []string{"data.expires_at"}},
		{"two failures", "attention.requested", `{"kind":"nope","prompt":7}`, []string{"data.kind", "data.prompt"}},
		{"respond answer must be an object", "control.attention.respond", `{"answer":"yes"}`, []string{"data.answer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidatePayload(ev(tc.typ, tc.data))
			if tc.attrs == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			var got []string
			for _, ve := range validationErrors(t, err) {
				got = append(got, ve.Attr)
				assert.NotEmpty(t, ve.Rule)
			}
			assert.ElementsMatch(t, tc.attrs, got, "paths: %v", err)
		})
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	ti, ok := LookupType("attention.requested")
	require.True(t, ok)
	assert.Equal(t, TypeInfo{Type: "attention.requested", Status: "mandatory", Scope: "session", Schema: "attention.requested.schema.json", Summary: ti.Summary}, ti)
	ti, ok = LookupType("message.user.submitted")
	require.True(t, ok)
	assert.Empty(t, ti.Schema, "reserved type has no schema")
	_, ok = LookupType("x.acme.tool.ran")
	assert.False(t, ok)

	mandatory := 0
	for _, ti := range RegisteredTypes() {
		if ti.Status == "mandatory" {
			mandatory++
		}
		if ti.Schema != "" {
			sch, err := payloadSchema(ti.Type)
			require.NoError(t, err)
			assert.NotNil(t, sch, "%s compiles", ti.Type)
		}
		assert.Equal(t, ti.Scope == "agent", aep.IsAgentScoped(ti.Type), "%s scope", ti.Type)
		assert.Equal(t, ti.Scope == "command", aep.IsCommand(ti.Type), "%s command", ti.Type)
	}
	assert.Equal(t, 14, mandatory, "the 14 mandatory types (AEP-0002 §1)")
}

// BenchmarkPayload is payload-schema validation of already decoded events.
func BenchmarkPayload(b *testing.B) {
	events := goldenEvents(b)
	if _, err := compiledSchemas(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ValidatePayload(events[i%len(events)]); err != nil {
			b.Fatal(err)
		}
	}
}
