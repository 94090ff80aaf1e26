package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
)

// Two replicas' lists on one journal: a person seen on one is not in
// the other's list until it reads the journal again, but Holds (whether
// a rule's maker still has access) looks there once more before saying
// no; a person unseen past the forget time is not held.
func TestPeopleListHoldsWhoAnotherReplicaSaw(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	journal := &memoryPeople{m: map[string]store.Person{}}
	here, there := NewPeopleList(journal, time.Hour, clock), NewPeopleList(journal, time.Hour, clock)
	require.NoError(t, there.see(t.Context(), store.Person{Name: "ada", Role: "admin", LastSeen: now}))

	assert.Empty(t, here.Get(), "not read again yet")
	assert.True(t, here.Holds("ada", time.Second), "found in the journal")
	assert.Equal(t, "ada", here.Get()[0].Name, "and listed from then on")
	assert.False(t, here.Holds("vera", time.Second), "nobody saw vera")

	now = now.Add(2 * time.Hour)
	assert.False(t, here.Holds("ada", time.Second), "unseen past the forget time")
	assert.Empty(t, here.Operators())
}
