package inbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// hostileRequest wraps a data member (raw JSON) in a request envelope.
func hostileRequest(t *testing.T, data string) *aep.Event {
	t.Helper()
	return raw(t, `{"aep":"0.1","id":"r1","type":"attention.requested","time":"2026-07-03T10:00:00Z",`+
		`"source":"`+testSource+`","agent":"demo","session":"s1","seq":1,"capture":"full","data":`+data+`}`)
}

func TestHostileRequests(t *testing.T) {
	t.Parallel()
	many := func(n int, item func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = item(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	tests := []struct {
		name      string
		data      string
		malformed string // a substring of Card.Malformed; "" = well formed
	}{
		{"data is a string", `"hello"`, "its data must be an object"},
		{"data is an array", `[1,2]`, "its data must be an object"},
		{"prompt is a number", `{"kind":"input","prompt":42}`, `"prompt" is not text (it is a number)`},
		{"fields is an object", `{"kind":"form","prompt":"p","fields":{"id":"a"}}`, `"fields" is not a list (it is an object)`},
		{"min is a string", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"number","label":"A","min":"0"}]}`, `"fields.min" is not a number in range (it is text)`},
		{"required is a string", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"string","label":"A","required":"yes"}]}`, `"fields.required" is not true or false (it is text)`},
		{"respond_via is a string", `{"kind":"input","prompt":"p","respond_via":"oob"}`, `"respond_via" is not a list (it is text)`},
		{"number overflow", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"number","label":"A","max":1e400}]}`, `"fields.max" is a number out of range`},
		{"kind missing", `{"prompt":"p"}`, "kind is missing"},
		{"duplicate field ids", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"string","label":"A"},{"id":"a","type":"boolean","label":"B"}]}`, `"a"`},
		{"select without choices", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"select","label":"A"}]}`, "without choices"},
		{"unknown field type", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"date","label":"A"}]}`, "unknown type"},
		{"min above max", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"number","label":"A","min":5,"max":1}]}`, "above max"},
		{"expires_at not a time", `{"kind":"input","prompt":"p","expires_at":"tomorrow"}`, "RFC 3339"},
		{"too many fields", `{"kind":"form","prompt":"p","fields":` +
			many(5000, func(i int) string { return fmt.Sprintf(`{"id":"f%d","type":"boolean","label":"F"}`, i) }) + `}`, "5000 fields"},
		{"too many options", `{"kind":"permission","prompt":"p","options":` +
			many(20000, func(i int) string { return fmt.Sprintf(`{"id":"o%d","label":"O"}`, i) }) + `}`, "20000 options"},
		{"too many choices", `{"kind":"form","prompt":"p","fields":[{"id":"a","type":"select","label":"A","choices":` +
			many(2000, func(i int) string { return fmt.Sprintf(`{"id":"c%d","label":"C"}`, i) }) + `}]}`, "2000 choices"},
		{"HTML in labels is text, not a fault", `{"kind":"form","prompt":"<img src=x onerror=alert(1)>",` +
			`"fields":[{"id":"<b>","type":"select","label":"<script>alert(1)</script>","choices":[{"id":"\"'><","label":"</fieldset>"}]}]}`, ""},
		{"unknown members are tolerated", `{"kind":"input","prompt":"p","x-extra":{"deep":[1,2,{"a":null}]}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(hostileRequest(t, tc.data))
			c, ok := in.Card(cardIDOf("r1"))
			require.True(t, ok, "a hostile request is still shown as a card")
			assert.Equal(t, StatePending, c.State)
			if tc.malformed == "" {
				assert.Empty(t, c.Malformed)
				return
			}
			assert.Contains(t, c.Malformed, tc.malformed, "Malformed got %q", c.Malformed)
			for _, internal := range []string{"json:", "Go ", "aep.", "struct"} {
				assert.NotContains(t, c.Malformed, internal, "the operator's words, not Go's")
			}
			_, err := in.BeginSubmission(c.ID, Submission{Token: "t", CommandID: "c"})
			assert.ErrorIs(t, err, ErrMalformed)
		})
	}
}

func TestHTMLLabelsKeptVerbatim(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(hostileRequest(t, `{"kind":"form","prompt":"<img src=x onerror=alert(1)>",`+
		`"fields":[{"id":"a","type":"string","label":"<script>alert(1)</script>"}]}`))
	c, _ := in.Card(cardIDOf("r1"))
	assert.Equal(t, "<img src=x onerror=alert(1)>", c.Request.Prompt, "the inbox keeps text; render escapes it")
	assert.Equal(t, "<script>alert(1)</script>", c.Request.Fields[0].Label)
}

func TestHostileLifecycle(t *testing.T) {
	t.Parallel()
	lc := func(typ, data string) string {
		return `{"aep":"0.1","id":"x-` + typ + `","type":"` + typ + `","subject":"r1","cause":"r1","time":"2026-07-03T10:00:01Z",` +
			`"source":"` + testSource + `","agent":"demo","session":"s1","seq":2,"data":` + data + `}`
	}
	tests := []struct {
		name  string
		event string
		check func(t *testing.T, c Card)
	}{
		{"answer is a string", lc("attention.answered", `{"answer":"yes","by":"eve"}`), func(t *testing.T, c Card) {
			assert.Equal(t, StateAnswered, c.State)
			require.NotNil(t, c.Recorded)
			assert.Contains(t, c.Recorded.Malformed, "does not decode")
			assert.Equal(t, "eve", c.Recorded.By, "what decoded is kept")
		}},
		{"values hold objects and nulls", lc("attention.answered", `{"answer":{"values":{"a":{"b":[null,{"c":1}]},"d":null}}}`),
			func(t *testing.T, c Card) {
				require.NotNil(t, c.Recorded)
				assert.Empty(t, c.Recorded.Malformed)
				assert.Contains(t, c.Recorded.Answer.Values, "a")
			}},
		{"latency is a string", lc("attention.resolved", `{"resolution":"answered","latency_ms":"soon"}`), func(t *testing.T, c Card) {
			assert.Equal(t, StateResolved, c.State)
		}},
		{"timeout data has the wrong member types", lc("attention.timeout", `{"after_ms":"soon"}`), func(t *testing.T, c Card) {
			assert.Equal(t, StateTimedOut, c.State, "a timeout is a fact even when its data is unreadable")
		}},
		// Data that is not an object breaks the envelope rules: the event
		// changes no card (validate.go).
		{"timeout data is an array", lc("attention.timeout", `[1]`), func(t *testing.T, c Card) {
			assert.Equal(t, StatePending, c.State)
		}},
		{"route data is a number", lc("attention.routed", `7`), func(t *testing.T, c Card) {
			assert.Equal(t, StatePending, c.State)
		}},
		{"reject data is a string", `{"aep":"0.1","id":"k","type":"control.rejected","cause":"c1","time":"2026-07-03T10:00:01Z","source":"` + testSource +
			`","agent":"demo","session":"s1","seq":2,"data":"nope"}`, func(t *testing.T, c Card) {
			assert.Equal(t, SubmissionSending, c.Submission.State)
		}},
		{"reject reason is a number", `{"aep":"0.1","id":"k","type":"control.rejected","cause":"c1","time":"2026-07-03T10:00:01Z","source":"` + testSource +
			`","agent":"demo","session":"s1","seq":2,"data":{"reason":7}}`, func(t *testing.T, c Card) {
			assert.Equal(t, SubmissionRejected, c.Submission.State)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(request(t, "r1", 1, formData("")))
			_, err := in.BeginSubmission(cardIDOf("r1"), Submission{Token: "t", CommandID: "c1"})
			require.NoError(t, err)
			in.Apply(raw(t, tc.event))
			c, _ := in.Card(cardIDOf("r1"))
			tc.check(t, c)
			// copies survive odd values
			_ = in.Cards(Query{})
		})
	}
}

func TestOddEnvelopes(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(nil)
	in.Apply(raw(t, `{"type":"attention.requested"}`)) // no id, source, session
	in.Apply(raw(t, `{"type":"attention.answered","id":"a"}`))
	in.Apply(raw(t, `{"type":"control.accepted","id":"b"}`))
	in.Apply(raw(t, `{"type":"session.ended","id":"c"}`))
	in.Apply(raw(t, `{"type":"x.vendor.thing","id":"d","session":"s1","data":{"any":"thing"}}`))
	cards := in.Cards(Query{})
	require.Len(t, cards, 1)
	assert.Contains(t, cards[0].Malformed, "it has no event id", "an envelope without its required attributes is shown malformed")
}

// TestOrphansBounded: lifecycle events for requests never seen are held
// only up to MaxOrphans.
func TestOrphansBounded(t *testing.T) {
	t.Parallel()
	clk := newClock()
	in := New(Options{Now: clk.Now, MaxOrphans: 10})
	for i := range 200 {
		in.Apply(lifecycle(t, "attention.timeout", fmt.Sprintf("t%d", i), fmt.Sprintf("r%d", i), "", int64(i), nil))
	}
	in.mu.Lock()
	held, indexed := in.orphans.len(), len(in.orphanIdx)
	in.mu.Unlock()
	assert.Equal(t, 10, held)
	assert.Equal(t, 10, indexed, "evicted orphans leave no index entries")
	// the newest are the ones kept
	in.Apply(request(t, "r199", 2000, formData("")))
	c, _ := in.Card(cardIDOf("r199"))
	assert.Equal(t, StateTimedOut, c.State)
	in.Apply(request(t, "r0", 2001, formData("")))
	c, _ = in.Card(cardIDOf("r0"))
	assert.Equal(t, StatePending, c.State)
}
