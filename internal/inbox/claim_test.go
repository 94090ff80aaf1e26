package inbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimedBy is who the card's verdict says is on it at the inbox clock
// ("" nobody).
func claimedBy(t *testing.T, in *Inbox, id CardID, now time.Time) string {
	t.Helper()
	c, ok := in.Card(id)
	require.True(t, ok)
	if vd := c.Verdict(now, Viewer{}); vd.Claim != nil {
		return vd.Claim.By
	}
	return ""
}

func TestClaimIsOnTheCardUntilIdle(t *testing.T) {
	t.Parallel()
	clk := newClock()
	in := New(Options{Now: clk.Now, ClaimIdle: time.Minute})
	in.Apply(request(t, "r1", 1, formData("")))
	id := cardIDOf("r1")
	sub := in.Subscribe(8)
	defer sub.Close()

	out, err := in.Claim(id, "ann")
	require.NoError(t, err)
	assert.True(t, out.FirstClaim)
	require.Len(t, drainNow(sub), 1, "a claim is a change every open page is sent")
	assert.Equal(t, "ann", claimedBy(t, in, id, clk.Now()))

	clk.Add(50 * time.Second)
	again, err := in.Claim(id, "ann") // activity: typing on the card
	require.NoError(t, err)
	assert.False(t, again.FirstClaim)
	assert.True(t, again.Claim.At.Equal(out.Claim.At), "activity keeps the claim's age")

	clk.Add(50 * time.Second)
	in.Sweep()
	assert.Equal(t, "ann", claimedBy(t, in, id, clk.Now()), "renewed 50 s ago, idle for a minute: still on it")

	clk.Add(11 * time.Second)
	in.Sweep()
	assert.Empty(t, claimedBy(t, in, id, clk.Now()), "a minute without activity: lapsed")
	c, _ := in.Card(id)
	assert.Empty(t, c.Claim.By, "the sweep ended it")
	assert.NotEmpty(t, drainNow(sub), "the lapse is pushed")
}

func TestClaimEndsOnAnswerAndSignOut(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	in.Apply(request(t, "r2", 2, formData("")))
	in.Apply(request(t, "r3", 3, formData("")))
	r1, r2, r3 := cardIDOf("r1"), cardIDOf("r2"), cardIDOf("r3")
	for _, id := range []CardID{r1, r2} {
		_, err := in.Claim(id, "ann")
		require.NoError(t, err)
	}
	_, err := in.Claim(r3, "bob")
	require.NoError(t, err)

	_, err = in.BeginSubmission(r1, Submission{Token: "t", CommandID: "c1", By: "bob"})
	require.NoError(t, err)
	c, _ := in.Card(r1)
	assert.Empty(t, c.Claim.By, "an answer ends the claim")

	assert.Equal(t, 1, in.EndClaims("ann"))
	assert.Empty(t, claimedBy(t, in, r2, clk.Now()), "signed out: ann's claim ends")
	assert.Equal(t, "bob", claimedBy(t, in, r3, clk.Now()), "bob's stays")

	require.NoError(t, in.Release(r3, "ann"), "another's claim is not released")
	assert.Equal(t, "bob", claimedBy(t, in, r3, clk.Now()))
	require.NoError(t, in.Release(r3, "bob"))
	assert.Empty(t, claimedBy(t, in, r3, clk.Now()))
}

func TestClaimRefusals(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData(clk.Now().Add(time.Second).Format(time.RFC3339Nano))))
	_, err := in.Claim("nope", "ann")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = in.Claim(cardIDOf("r1"), "")
	assert.ErrorIs(t, err, ErrNoClaimant)
	clk.Add(2 * time.Second)
	_, err = in.Claim(cardIDOf("r1"), "ann")
	assert.ErrorIs(t, err, ErrNotOpen, "past its deadline")
}

// Two inboxes on one journal (replicas): a claim made on one is on the
// other's card after SeeClaims, and so is its end.
func TestClaimsSharedThroughTheJournal(t *testing.T) {
	t.Parallel()
	clk := newClock()
	j := NewMemoryJournal()
	a := New(Options{Now: clk.Now, Journal: j})
	b := New(Options{Now: clk.Now, Journal: j})
	for _, in := range []*Inbox{a, b} {
		in.Apply(request(t, "r1", 1, formData("")))
	}
	id := cardIDOf("r1")
	_, err := a.Claim(id, "ann")
	require.NoError(t, err)
	_, err = a.Assign(id, Assignment{To: "bob", By: "ann"})
	require.NoError(t, err)
	b.SeeClaims()
	assert.Equal(t, "ann", claimedBy(t, b, id, clk.Now()))
	c, _ := b.Card(id)
	assert.Equal(t, "bob", c.Verdict(clk.Now(), Viewer{}).Assigned.To)
	b.SeeClaims()
	assert.Equal(t, "ann", claimedBy(t, b, id, clk.Now()), "read again, nothing changes")

	a.EndClaims("ann")
	require.NoError(t, a.Flush(t.Context()))
	b.SeeClaims()
	assert.Empty(t, claimedBy(t, b, id, clk.Now()), "ended on the other replica")

	_, err = a.Assign(id, Assignment{By: "ann"})
	require.NoError(t, err)
	b.SeeClaims()
	c, _ = b.Card(id)
	assert.Nil(t, c.Verdict(clk.Now(), Viewer{}).Assigned, "an assignment ended on the other replica ends here")
}

func TestClaimFilters(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	for i, r := range []string{"r1", "r2", "r3"} {
		in.Apply(request(t, r, int64(i+1), formData("")))
	}
	_, err := in.Claim(cardIDOf("r1"), "ann")
	require.NoError(t, err)
	_, err = in.Assign(cardIDOf("r2"), Assignment{To: "ann", By: "bob"})
	require.NoError(t, err)
	ids := func(q Query) []CardID {
		var out []CardID
		for _, c := range in.Heads(q) {
			out = append(out, c.ID)
		}
		return out
	}
	assert.ElementsMatch(t, []CardID{cardIDOf("r1"), cardIDOf("r2")}, ids(Query{Claim: ClaimMine, Operator: "ann"}))
	assert.ElementsMatch(t, []CardID{cardIDOf("r2"), cardIDOf("r3")}, ids(Query{Claim: ClaimNone}))
	assert.Empty(t, ids(Query{Claim: ClaimMine, Operator: "bob"}))

	_, err = in.Assign(cardIDOf("r3"), Assignment{To: "oncall", Team: true, By: "bob"})
	require.NoError(t, err)
	assert.Equal(t, []CardID{cardIDOf("r3")}, ids(Query{Claim: ClaimMine, Operator: "bob", Teams: "leads,oncall"}), "assigned to a team of bob's")
	assert.Empty(t, ids(Query{Claim: ClaimMine, Operator: "bob", Teams: "leads,oncall-2"}), "a team's name is matched whole")
	assert.ElementsMatch(t, []CardID{cardIDOf("r1"), cardIDOf("r2")}, ids(Query{Claim: ClaimMine, Operator: "ann"}), "ann is in no team")
}
