package storetest

import (
	"context"
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
}
