package inbox

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envelope is a valid attention.requested line from the test emitter
// with one member replaced (or added) as JSON text.
func envelopeWith(member, value string) string {
	m := map[string]string{
		"aep": `"0.1"`, "id": `"r1"`, "type": `"attention.requested"`, "time": `"2026-07-03T10:00:00Z"`,
		"source": `"` + testSource + `"`, "agent": `"demo"`, "session": `"s1"`, "seq": `1`, "capture": `"full"`,
		"data": `{"kind":"input","prompt":"Deploy?"}`,
	}
	m[member] = value
	var b strings.Builder
	b.WriteString("{")
	first := true
	for _, k := range []string{"aep", "id", "type", "time", "source", "agent", "session", "seq", "epoch", "capture", "data"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(`"` + k + `":` + v)
	}
	b.WriteString("}")
	return b.String()
}

// Behind an external relay serve trusts no envelope: a request that
// breaks the envelope rules is a malformed card saying which rule, in the
// operator's words, never an answerable form.
func TestInvalidRequestIsAMalformedCard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, member, value string
		want                string // a substring of Card.Malformed
	}{
		{"a future AEP version", "aep", `"9.9"`, `it is written for AEP version "9.9"; this inbox reads AEP 0.1`},
		{"an unknown capture level", "capture", `"ultra"`, `its capture level must be one of none, metadata, redacted, full (got "ultra")`},
		{"a time in words", "time", `"yesterday"`, `its time "yesterday" is not a date and time with a time zone`},
		{"a negative seq", "seq", `-1`, "its sequence number (seq) is negative"},
		{"a negative epoch", "epoch", `-3`, "its epoch is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(raw(t, envelopeWith(tc.member, tc.value)))
			c, ok := in.Card(cardIDOf("r1"))
			require.True(t, ok, "the invalid request is still shown, read-only")
			assert.Contains(t, c.Malformed, tc.want, "Malformed got %q", c.Malformed)
			assert.NotContains(t, c.Malformed, "aep:", "the operator's words, not the validator's")
			_, err := in.BeginSubmission(c.ID, Submission{Token: "t", CommandID: "c"})
			assert.ErrorIs(t, err, ErrMalformed, "never answerable")
			assert.EqualValues(t, 1, in.Status().Invalid)
		})
	}
}

func TestMalformedWordsAreBounded(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(raw(t, `{"aep":"9.9","id":"r1","type":"attention.requested","time":"yesterday","source":"`+testSource+
		`","agent":"demo","session":"s1","seq":-1,"epoch":-1,"capture":"ultra","data":{"kind":"input","prompt":"p"}}`))
	c, ok := in.Card(cardIDOf("r1"))
	require.True(t, ok)
	assert.True(t, strings.HasSuffix(c.Malformed, "; and 2 more"), "at most three rules, then a count: got %q", c.Malformed)
}

// Other invalid events change no card; they are counted and logged once
// per source, with the rule.
func TestInvalidEventsAreCountedAndLoggedOncePerSource(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	clk := newClock()
	in := New(Options{Now: clk.Now, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	in.Apply(request(t, "r1", 1, formData("")))
	bad := func(id, source, member string) string {
		return `{"aep":"0.1","id":"` + id + `","type":"attention.resolved","subject":"r1","time":"2026-07-03T10:00:01Z",` +
			`"source":"` + source + `","agent":"demo","session":"` + testSession + `","seq":2,` + member + `"data":{"resolution":"auto"}}`
	}
	in.Apply(raw(t, bad("x1", testSource, `"capture":"ultra",`)))
	in.Apply(raw(t, bad("x2", testSource, `"epoch":-1,`)))
	in.Apply(raw(t, bad("x3", "aep://other/emitter", `"capture":"ultra",`)))

	c, ok := in.Card(cardIDOf("r1"))
	require.True(t, ok)
	assert.Equal(t, StatePending, c.State, "an invalid resolution settles nothing")
	assert.EqualValues(t, 3, in.Status().Invalid)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 2, "one line per source: got %q", log.String())
	assert.Contains(t, lines[0], `source=`+testSource)
	assert.Contains(t, lines[0], `capture: must be one of`)
	assert.Contains(t, lines[1], "source=aep://other/emitter")
}

func TestDecodeWordsNameNoGoTypes(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(hostileRequest(t, `{"kind":"form","prompt":"p","fields":"name"}`))
	c, ok := in.Card(cardIDOf("r1"))
	require.True(t, ok)
	assert.Equal(t, `"fields" is not a list (it is text)`, c.Malformed)
}

// Types the inbox does not use (agent.* liveness now reaches it for the
// roster's sake) take none of its dedupe memory, and are counted when
// invalid like any other.
func TestUnusedTypesTakeNoDedupeMemory(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(raw(t, `{"aep":"0.1","id":"hb1","type":"agent.heartbeat","time":"2026-07-03T10:00:00Z","source":"`+testSource+`","agent":"demo"}`))
	in.Apply(raw(t, `{"aep":"0.1","id":"hb2","type":"agent.heartbeat","time":"2026-07-03T10:00:00Z","source":"`+testSource+`","agent":"demo","seq":3}`))
	in.mu.Lock()
	seen := in.seen.len()
	in.mu.Unlock()
	assert.Zero(t, seen)
	assert.EqualValues(t, 1, in.Status().Invalid, "an agent-scoped event with a seq breaks the rules")
}
