package web

import (
	"net/http"
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

// A name is one account of the identity provider: another account the
// provider gives the same name (a name claim its users may edit, or one
// two users share) is refused at sign-in, so it neither answers as the
// other person nor takes their teams, assignments or devices.
func TestAnotherAccountOfTheSameNameIsRefused(t *testing.T) {
	t.Parallel()
	op, _ := withOP(t, func(o *OIDC) { o.NameClaims = []string{"family_name"} }) // every test user's is "Test"
	h := newHarness(t, op)
	ck := h.signInAtOP(h.browser(), "ann")
	require.NotNil(t, ck)

	c := h.browser()
	r := h.callback(c, h.loginAtOP(c, "ada"))
	assert.Equal(t, http.StatusForbidden, r.StatusCode, "ada's account named like ann's: %s", r.body)
	assert.Contains(t, r.body, "a name another of its accounts already goes by here")
	assert.Nil(t, sessionCookie(r.Response), "no session")

	again := h.browser()
	assert.NotNil(t, h.signInAtOP(again, "ann"), "the account the name is stays able to sign in")
}
