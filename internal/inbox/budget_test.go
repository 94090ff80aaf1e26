package inbox

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// selects is a form of n select fields with k choices each.
func selects(n, k int) aep.Request {
	req := aep.Request{Kind: aep.KindForm, Prompt: "Pick"}
	for i := range n {
		f := aep.FieldSpec{ID: "f" + strconv.Itoa(i), Type: aep.FieldSelect, Label: "F", Multi: true}
		for j := range k {
			f.Choices = append(f.Choices, aep.Choice{ID: "c" + strconv.Itoa(j), Label: "C"})
		}
		req.Fields = append(req.Fields, f)
	}
	return req
}

func TestControls(t *testing.T) {
	t.Parallel()
	req := selects(2, 3)
	req.Fields = append(req.Fields, aep.FieldSpec{ID: "s", Type: aep.FieldString, Label: "S"}, aep.FieldSpec{ID: "b", Type: aep.FieldBoolean, Label: "B"})
	assert.Equal(t, 8, Controls(req))
	assert.Equal(t, 3, Controls(aep.Request{Kind: aep.KindPermission, Options: []aep.Option{{ID: "a"}, {ID: "b"}, {ID: "c"}}}))
	assert.Equal(t, 449_550, Controls(selects(450, 999)))
}

// A request needing more controls than MaxControls is kept and shown,
// but not answerable here: the domain says why, so the page and the answer
// path agree. A large prompt alone never makes a request unanswerable.
func TestControlBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  aep.Request
		want error
	}{
		{"at the budget", selects(2, 1000), nil},
		{"one over", func() aep.Request {
			r := selects(2, 1000)
			r.Fields = append(r.Fields, aep.FieldSpec{ID: "x", Type: aep.FieldString, Label: "X"})
			return r
		}(), ErrTooManyControls},
		{"450 × 999", selects(450, 999), ErrTooManyControls},
		{"a 1 MB prompt", aep.Request{Kind: aep.KindInput, Prompt: strings.Repeat("diff\n", 200_000)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(request(t, "r1", 1, tc.req))
			c, ok := in.Card(cardIDOf("r1"))
			require.True(t, ok, "the request is kept whatever its size")
			assert.Empty(t, c.Malformed)
			assert.Equal(t, tc.want != nil, c.OverBudget)
			assert.Equal(t, Controls(tc.req), c.Controls)
			assert.ErrorIs(t, c.CanAnswer(in.opts.Now()), tc.want)
			_, err := in.BeginSubmission(c.ID, Submission{Token: "t", CommandID: "c"})
			if tc.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.want)
			}
		})
	}
}
