package aep

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type attrMatchCorpus struct {
	Match []struct {
		Name   string          `json:"name"`
		Filter json.RawMessage `json:"filter"`
		Event  json.RawMessage `json:"event"`
		Match  bool            `json:"match"`
	} `json:"match"`
	Invalid []struct {
		Name   string          `json:"name"`
		Filter json.RawMessage `json:"filter"`
	} `json:"invalid"`
}

func TestAttrMatchFixtures(t *testing.T) {
	t.Parallel()
	var c attrMatchCorpus
	readFixture(t, "attr-match/cases.json", &c)

	var names []string
	for _, m := range c.Match {
		names = append(names, m.Name)
	}
	requireNames(t, "attr-match match", names, []string{
		"category glob hits", "category glob does not hit prefix-only", "exact type",
		"vendor glob", "severity gte hits declared", "severity gte misses default info",
		"severity band includes default", "agent inclusion", "session equality misses other",
		"epoch default applies", "absent attribute never matches", "extension attribute equality",
		"empty filter matches everything", "conjunction across keys",
	})
	names = nil
	for _, m := range c.Invalid {
		names = append(names, m.Name)
	}
	requireNames(t, "attr-match invalid", names, []string{
		"seq not filterable", "data not filterable", "time not filterable", "aep not filterable",
		"traceparent not filterable (core attribute, not an extension key)", "bare star not a pattern",
		"malformed key fails closed (not core, not a legal extension name)",
		"gt is not a severity operator", "glob on non-type key", "empty inclusion array",
	})

	for _, m := range c.Match {
		t.Run("match/"+m.Name, func(t *testing.T) {
			t.Parallel()
			f, err := ParseFilter(m.Filter)
			require.NoError(t, err, "filter %s", m.Filter)
			e, err := Decode(m.Event)
			require.NoError(t, err)
			assert.Equal(t, m.Match, f.Match(e), "filter %s on %s: got %v, want %v", m.Filter, m.Event, !m.Match, m.Match)
		})
	}
	for _, m := range c.Invalid {
		t.Run("invalid/"+m.Name, func(t *testing.T) {
			t.Parallel()
			f, err := ParseFilter(m.Filter)
			require.Error(t, err, "filter %s must be refused", m.Filter)
			assert.ErrorIs(t, err, ErrInvalidFilter)
			assert.Nil(t, f)
		})
	}
}

func TestParseFilterMore(t *testing.T) {
	t.Parallel()
	invalid := map[string]string{
		"not an object":                `["type"]`,
		"null":                         `null`,
		"not JSON":                     `{"type":`,
		"trailing data":                `{} {}`,
		"repeated key":                 `{"agent":"a","agent":"b"}`,
		"float scalar":                 `{"epoch":1.5}`,
		"null scalar":                  `{"agent":null}`,
		"object on a plain key":        `{"agent":{"gte":"a"}}`,
		"nested array":                 `{"agent":[["a"]]}`,
		"star in the middle of a type": `{"type":"attention.*.x"}`,
		"suffix glob on type":          `{"type":"*.requested"}`,
		"bare star in a list":          `{"type":["tool.*","*"]}`,
		"integer type":                 `{"type":3}`,
		"unknown severity level":       `{"severity":{"gte":"fatal"}}`,
		"unknown severity name":        `{"severity":"fatal"}`,
		"unknown capture name":         `{"capture":"secret"}`,
		"empty severity comparison":    `{"severity":{}}`,
		"extension name too long":      `{"abcdefghijklmnopqrstu":"x"}`,
		"uppercase extension":          `{"Acme":"x"}`,
		"glob in an inclusion list":    `{"session":["s1","s*"]}`,
		"huge integer":                 `{"epoch":99999999999999999999}`,
	}
	for name, in := range invalid {
		t.Run("invalid/"+name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseFilter([]byte(in))
			assert.ErrorIs(t, err, ErrInvalidFilter, "filter %s", in)
		})
	}

	ev := func(s string) *Event {
		e, err := Decode([]byte(s))
		require.NoError(t, err)
		return e
	}
	matches := []struct {
		name, filter, event string
		want                bool
	}{
		{"capture default applies", `{"capture":"metadata"}`, `{"type":"run.started"}`, true},
		{"capture inclusion", `{"capture":["redacted","full"]}`, `{"type":"run.started","capture":"full"}`, true},
		{"severity lte", `{"severity":{"lte":"notice"}}`, `{"type":"a.b","severity":"error"}`, false},
		{"severity equality", `{"severity":"warning"}`, `{"type":"a.b","severity":"warning"}`, true},
		{"unknown event severity matches no range", `{"severity":{"gte":"debug"}}`, `{"type":"a.b","severity":"fatal"}`, false},
		{"epoch integer", `{"epoch":[1,2]}`, `{"type":"a.b","epoch":2}`, true},
		{"no coercion: string epoch", `{"epoch":"0"}`, `{"type":"a.b"}`, false},
		{"no coercion: integer vs string extension", `{"acmen":1}`, `{"type":"a.b","acmen":"1"}`, false},
		{"integer extension", `{"acmen":1}`, `{"type":"a.b","acmen":1}`, true},
		{"boolean extension", `{"acmeok":true}`, `{"type":"a.b","acmeok":true}`, true},
		{"boolean extension mismatch", `{"acmeok":false}`, `{"type":"a.b","acmeok":true}`, false},
		{"absent extension", `{"acmeok":true}`, `{"type":"a.b"}`, false},
		{"type pattern needs the dot", `{"type":"attention.*"}`, `{"type":"attention"}`, false},
		{"type pattern is a prefix of segments", `{"type":"attention.*"}`, `{"type":"attentionx.y"}`, false},
		{"exact and pattern mixed", `{"type":["tool.completed","attention.*"]}`, `{"type":"tool.completed"}`, true},
		{"session with colon and space", `{"session":"a: b"}`, `{"type":"a.b","session":"a: b"}`, true},
		{"escaped string value", `{"subject":"caf\u00e9"}`, `{"type":"a.b","subject":"café"}`, true},
		{"absent type never matches", `{"type":"run.*"}`, `{"session":"s"}`, false},
	}
	for _, tc := range matches {
		t.Run("match/"+tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := ParseFilter([]byte(tc.filter))
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.Match(ev(tc.event)), "filter %s on %s", tc.filter, tc.event)
		})
	}

	t.Run("no filter matches all", func(t *testing.T) {
		t.Parallel()
		var nilFilter *Filter
		assert.True(t, nilFilter.Match(ev(`{"type":"a.b"}`)))
		for _, in := range []string{"", "  ", "{}"} {
			f, err := ParseFilter([]byte(in))
			require.NoError(t, err, "input %q", in)
			assert.Empty(t, f.preds, "input %q", in)
			assert.True(t, f.Match(ev(`{"type":"a.b"}`)), "input %q", in)
		}
	})
}
