package inbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// A request whose cause is a tool.requested of its emitter names that
// tool; one without a cause, or caused by an event the inbox did not see
// as a tool call (another emitter's, or none), names none.
func TestARequestNamesTheToolItsCauseAsksFor(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	perm := map[string]any{"kind": "permission", "prompt": "Run ls?", "options": []map[string]any{{"id": "allow", "label": "Allow"}}}
	in.Apply(lifecycle(t, "tool.requested", "t1", "", "", 1, map[string]any{"tool": map[string]any{"name": "Bash", "call_id": "c1"}}))
	asked := func(id, cause string, seq int64) Card {
		in.Apply(ev(t, aep.Envelope{ID: id, Type: "attention.requested", Source: testSource, Agent: testAgent, Cause: cause,
			Session: testSession, Seq: aep.Int64(seq), Capture: "full", Data: perm}))
		c, ok := in.Card(cardIDOf(id))
		require.True(t, ok)
		return c
	}
	assert.Equal(t, "Bash", asked("r1", "t1", 2).Tool)
	assert.Empty(t, asked("r2", "", 3).Tool, "no cause")
	assert.Empty(t, asked("r3", "t-unseen", 4).Tool, "a cause the inbox never saw")
	other := ev(t, aep.Envelope{ID: "t2", Type: "tool.requested", Source: "aep://other/agent/x/session/s1", Agent: "x",
		Session: testSession, Seq: aep.Int64(1), Capture: "full", Data: map[string]any{"tool": map[string]any{"name": "Write"}}})
	in.Apply(other)
	assert.Empty(t, asked("r4", "t2", 5).Tool, "another emitter's tool call is not this request's")
}
