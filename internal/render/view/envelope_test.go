package view

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// A request whose envelope breaks the AEP rules (as an external relay may
// pass it on) is shown as a malformed card that names the rule in the
// operator's words: never a form.
func TestInvalidEnvelopeIsNeverAForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, member, want string }{
		{"aep 9.9", `"aep":"9.9"`, `AEP version "9.9"`},
		{"capture ultra", `"capture":"ultra"`, `"ultra"`},
		{"time yesterday", `"time":"yesterday"`, `"yesterday" is not a date and time`},
		{"negative epoch", `"epoch":-1`, "epoch is negative"},
		{"negative seq", `"seq":-1`, "sequence number (seq) is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := map[string]string{"aep": `"aep":"0.1"`, "time": `"time":"2026-03-01T11:59:00Z"`, "seq": `"seq":1`, "capture": `"capture":"full"`}
			key, _, _ := strings.Cut(strings.Trim(tc.member, `"`), `"`)
			base[key] = tc.member
			line := `{` + base["aep"] + `,"id":"r1","type":"attention.requested",` + base["time"] + `,"source":"aep://h/demo","agent":"demo","session":"s1",` +
				base["seq"] + `,` + base["capture"] + `,"data":{"kind":"form","prompt":"Deploy?","fields":[{"id":"a","type":"string","label":"A"}]}}`
			if _, ok := base["epoch"]; ok {
				line = strings.Replace(line, `"seq":1`, `"seq":1,`+base["epoch"], 1)
			}
			e, err := aep.Decode([]byte(line))
			require.NoError(t, err)
			in := inbox.New(inbox.Options{Now: func() time.Time { return viewNow }})
			in.Apply(e)
			cards := in.Cards(inbox.Query{})
			require.Len(t, cards, 1)
			v := Card(cards[0], viewOpts())
			assert.Nil(t, v.Form, "no form for an invalid request")
			assert.Equal(t, "malformed", v.State.Kind)
			assert.Contains(t, v.State.Text, tc.want)
			assert.NotContains(t, v.State.Text, "aep:")
		})
	}
}
