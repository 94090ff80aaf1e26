package samples

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/aeptest"
	"github.com/aepforms/aepforms/internal/aep"
)

// TestSamplesAreValidAEP: every sample is a well-formed form and, asked in
// an event, a valid attention.requested (envelope and payload schema).
func TestSamplesAreValidAEP(t *testing.T) {
	t.Parallel()
	for name, req := range map[string]aep.Request{
		"DeployForm":     DeployForm(),
		"EveryFieldForm": EveryFieldForm(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, aep.ValidateRequest(req))
			raw := Requested("r1", "s1", 0, req)
			e, err := aep.Decode(raw)
			require.NoError(t, err)
			assert.NoError(t, aeptest.ValidateEvent(e), "%s", raw)
			var got aep.Request
			require.NoError(t, e.DecodeData(&got))
			assert.Equal(t, req.Prompt, got.Prompt)
			assert.Len(t, got.Fields, len(req.Fields))
		})
	}
}

// TestSamplesAreFresh: a caller's change to a sample does not leak into the next call.
func TestSamplesAreFresh(t *testing.T) {
	t.Parallel()
	a := EveryFieldForm()
	a.Prompt = "changed"
	a.Fields[0].Label = "changed"
	*a.Fields[2].Min = 99
	b := EveryFieldForm()
	assert.NotEqual(t, "changed", b.Prompt)
	assert.NotEqual(t, "changed", b.Fields[0].Label)
	assert.Equal(t, 0.5, *b.Fields[2].Min)
}
