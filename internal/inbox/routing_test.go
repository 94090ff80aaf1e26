package inbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A card's routing is set from outside (the routes file's team, the
// reminders sent): a change is a new version pushed to every open page,
// the same routing again is none, and the state stays the events'.
func TestSetRoutingIsAChangeOfTheCard(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	id := cardIDOf("r1")
	before, ok := in.Card(id)
	require.True(t, ok)
	sub := in.Subscribe(8)
	t.Cleanup(sub.Close)

	r := Routing{Team: "oncall", Steps: []RoutingStep{{Kind: StepReminded, Team: "oncall", At: clk.Now()}}}
	require.True(t, in.SetRouting(id, r))
	ch := next(t, sub)
	assert.Equal(t, Change{Card: id, Kind: ChangeUpdated}, Change{Card: ch.Card, Kind: ch.Kind})
	after, _ := in.Card(id)
	assert.Equal(t, before.Version+1, after.Version)
	assert.Equal(t, r, after.Routing)
	assert.Equal(t, before.State, after.State, "routing never changes a card's state")
	assert.False(t, after.Routing.Escalated())

	require.True(t, in.SetRouting(id, r))
	assert.Empty(t, drainNow(sub), "the same routing again is no change")
	assert.False(t, in.SetRouting("nope", r))

	after.Routing.Steps[0].Team = "changed"
	again, _ := in.Card(id)
	assert.Equal(t, "oncall", again.Routing.Steps[0].Team, "a copy's steps are its own")
}
