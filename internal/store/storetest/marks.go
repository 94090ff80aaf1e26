package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// onIt is who card id's verdict says is on it at now ("" nobody).
func onIt(t *testing.T, in *inbox.Inbox, id inbox.CardID, now time.Time) string {
	t.Helper()
	c, ok := in.Card(id)
	require.True(t, ok)
	if vd := c.Verdict(now, inbox.Viewer{}); vd.Claim != nil {
		return vd.Claim.By
	}
	return ""
}

// A claim and an assignment are kept: the inbox of a restarted process
// on the same journal has them on the card (SeeClaims), and on a store
// replicas share, another replica's inbox does too, and sees the claim
// end when its operator signs out on the first.
func testClaimsKeptAndShared(t *testing.T, st Store) {
	now := T0
	clock := func() time.Time { return now }
	ja := st.Open()
	a := inbox.New(inbox.Options{Journal: ja, Now: clock})
	id := askOn(t, a)
	_, err := a.Claim(id, "ann")
	require.NoError(t, err)
	_, err = a.Assign(id, inbox.Assignment{To: "oncall", Team: true, By: "ann"})
	require.NoError(t, err)

	jb := ja
	if st.Shared {
		jb = st.Open()
	} else {
		require.NoError(t, a.Flush(context.Background()))
		require.NoError(t, ja.Close(), "the process ends")
		jb = st.Open()
	}
	b := inbox.New(inbox.Options{Journal: jb, Now: clock})
	askOn(t, b)
	assert.Empty(t, onIt(t, b, id, now), "not read yet")
	now = now.Add(time.Second)
	b.SeeClaims()
	assert.Equal(t, "ann", onIt(t, b, id, now), "the claim, read back")
	c, _ := b.Card(id)
	as := c.Verdict(now, inbox.Viewer{}).Assigned
	require.NotNil(t, as)
	assert.Equal(t, inbox.Assignment{To: "oncall", Team: true, By: "ann", At: as.At, Rev: as.Rev}, *as)
	assert.True(t, as.At.Equal(T0), "assigned at %v, want %v", as.At, T0)

	now = now.Add(inbox.DefaultClaimIdle)
	b.SeeClaims()
	assert.Empty(t, onIt(t, b, id, now), "lapsed")
	if !st.Shared {
		return
	}
	now = T0.Add(time.Minute)
	_, err = a.Claim(id, "ann")
	require.NoError(t, err)
	b.SeeClaims()
	require.Equal(t, "ann", onIt(t, b, id, now), "claimed again")
	a.EndClaims("ann")
	require.NoError(t, a.Flush(context.Background()))
	b.SeeClaims()
	assert.Empty(t, onIt(t, b, id, now), "signed out on the other replica")

	_, err = a.Assign(id, inbox.Assignment{By: "ann"})
	require.NoError(t, err)
	b.SeeClaims()
	c, _ = b.Card(id)
	assert.Nil(t, c.Verdict(now, inbox.Viewer{}).Assigned, "an assignment ended on the other replica ends here")
}

// assignee is who card id's verdict says it is assigned to at now (""
// nobody).
func assignee(t *testing.T, in *inbox.Inbox, id inbox.CardID, now time.Time) string {
	t.Helper()
	c, ok := in.Card(id)
	require.True(t, ok)
	if as := c.Verdict(now, inbox.Viewer{}).Assigned; as != nil {
		return as.To
	}
	return ""
}

// Replicas whose clocks disagree order a question's claims and
// assignments as their operators saw them, not by their clocks: on a
// replica a minute behind, bo takes over the claim ann made on the
// replica ahead (he saw it), ann's sign-out there ends the claim she
// made, and an assignment ended there stays ended. ann's release on the
// replica ahead, crossing bo's claim on the one behind, ends her claim
// only: bo's stands whichever reaches the journal first. Each replica
// then shows the same.
func testMarksOrderedAsSeenAcrossSkewedClocks(t *testing.T, st Store) {
	ahead, behind := T0.Add(time.Minute), T0
	ja := st.Open()
	jb := ja
	if st.Shared {
		jb = st.Open()
	}
	a := inbox.New(inbox.Options{Journal: ja, Now: func() time.Time { return ahead }})
	b := inbox.New(inbox.Options{Journal: jb, Now: func() time.Time { return behind }})
	id := askOn(t, a)
	askOn(t, b)
	flush := func() {
		require.NoError(t, a.Flush(context.Background()))
		require.NoError(t, b.Flush(context.Background()))
		a.SeeClaims()
		b.SeeClaims()
	}
	shown := func(want, why string) {
		t.Helper()
		assert.Equal(t, want, onIt(t, a, id, ahead), "on the replica ahead: %s", why)
		assert.Equal(t, want, onIt(t, b, id, behind), "on the replica behind: %s", why)
	}

	_, err := a.Claim(id, "ann")
	require.NoError(t, err)
	flush()
	shown("ann", "ann's claim")
	_, err = b.Claim(id, "bo")
	require.NoError(t, err)
	flush()
	shown("bo", "bo took it over, after he saw ann's claim")

	_, err = a.Claim(id, "ann")
	require.NoError(t, err)
	flush()
	shown("ann", "ann took it back")
	b.EndClaims("ann")
	flush()
	shown("", "ann signed out")

	// ann's release and bo's claim cross, in both orders: neither
	// replica has seen the other's write.
	for _, releaseFirst := range []bool{true, false} {
		_, err = a.Claim(id, "ann")
		require.NoError(t, err)
		flush()
		shown("ann", "ann's claim")
		ahead = ahead.Add(time.Second)
		if releaseFirst {
			require.NoError(t, a.Release(id, "ann"))
			require.NoError(t, a.Flush(context.Background()))
		}
		_, err = b.Claim(id, "bo")
		require.NoError(t, err)
		if !releaseFirst {
			require.NoError(t, a.Release(id, "ann"))
		}
		flush()
		shown("bo", fmt.Sprintf("ann let go (first: %v) as bo took it", releaseFirst))
		b.EndClaims("bo")
		flush()
		shown("", "bo signed out")
	}

	_, err = a.Assign(id, inbox.Assignment{To: "oncall", Team: true, By: "ann"})
	require.NoError(t, err)
	flush()
	assert.Equal(t, "oncall", assignee(t, b, id, behind))
	_, err = b.Assign(id, inbox.Assignment{By: "bo"})
	require.NoError(t, err)
	flush()
	assert.Empty(t, assignee(t, a, id, ahead), "bo ended the assignment he saw, on the replica ahead")
	assert.Empty(t, assignee(t, b, id, behind), "bo ended the assignment he saw, on the replica behind")
}

// A question's first claim is counted (time to first claim) once, of
// every replica sharing the journal and every restart: ann's claim on
// one replica is its first; bo's on another that has not yet seen it is
// not, nor is cy's on a restarted process once ann's claim has lapsed.
func testFirstClaimCountedOnce(t *testing.T, st Store) {
	now := T0
	clock := func() time.Time { return now }
	ja := st.Open()
	jb := ja
	if st.Shared {
		jb = st.Open()
	}
	a := inbox.New(inbox.Options{Journal: ja, Now: clock})
	b := inbox.New(inbox.Options{Journal: jb, Now: clock})
	id := askOn(t, a)
	askOn(t, b)
	out, err := a.Claim(id, "ann")
	require.NoError(t, err)
	assert.True(t, out.FirstClaim, "ann's is the first")
	out, err = b.Claim(id, "bo")
	require.NoError(t, err)
	assert.False(t, out.FirstClaim, "bo's, on a replica that had not seen ann's, is not")

	now = now.Add(inbox.DefaultClaimIdle + time.Minute)
	c := inbox.New(inbox.Options{Journal: jb, Now: clock})
	askOn(t, c)
	c.SeeClaims()
	require.Empty(t, onIt(t, c, id, now), "the claims lapsed")
	out, err = c.Claim(id, "cy")
	require.NoError(t, err)
	assert.False(t, out.FirstClaim, "a restarted process knows it was claimed before")
}
