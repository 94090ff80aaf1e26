package storetest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
)

// The VAPID key pair is made on first use and then read back, after a
// reopen too, and (on a shared store) by a second process: every
// replica signs with the key the browsers subscribed with.
func testPushKeys(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	made := 0
	gen := func(priv, pub string) func() (store.PushKeys, error) {
		return func() (store.PushKeys, error) {
			made++
			return store.PushKeys{Private: priv, Public: pub, Created: T0}, nil
		}
	}
	k, err := j.PushKeys(ctx, gen("priv-1", "pub-1"))
	require.NoError(t, err)
	assert.Equal(t, "priv-1", k.Private)
	assert.Equal(t, "pub-1", k.Public)
	assert.True(t, k.Created.Equal(T0))
	k, err = j.PushKeys(ctx, gen("priv-2", "pub-2"))
	require.NoError(t, err)
	assert.Equal(t, "pub-1", k.Public, "the kept pair, not a new one")
	assert.Equal(t, 1, made)
	require.NoError(t, j.Close())

	j = st.Open()
	k, err = j.PushKeys(ctx, gen("priv-3", "pub-3"))
	require.NoError(t, err)
	assert.Equal(t, "priv-1", k.Private)
	if st.Shared {
		other := st.Open()
		k, err := other.PushKeys(ctx, gen("priv-4", "pub-4"))
		require.NoError(t, err)
		assert.Equal(t, "pub-1", k.Public)
	}
}

func utcSub(s store.PushSubscription) store.PushSubscription {
	s.Created = s.Created.UTC()
	return s
}

func sub(endpoint, operator, session string, at time.Time) store.PushSubscription {
	return store.PushSubscription{Endpoint: endpoint, P256dh: "p-" + endpoint, Auth: "a-" + endpoint, Operator: operator, Session: session, Created: at}
}

// Subscriptions are per device (endpoint), several per operator; saving
// an endpoint again replaces it; removal is by its operator only, or by
// the signing-out session; a failure is kept until cleared.
func testPushSubscriptions(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	require.NoError(t, j.SavePushSubscription(ctx, sub("https://push.example/a", "alice", "s-a1", T0)))
	phone := sub("https://push.example/b", "alice", "s-a2", T0.Add(time.Second))
	phone.Actions = true
	require.NoError(t, j.SavePushSubscription(ctx, phone))
	require.NoError(t, j.SavePushSubscription(ctx, sub("https://push.example/c", "bob", "s-b", T0)))

	got, err := j.PushSubscriptions(ctx)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, phone, utcSub(got[1]), "kept whole")
	assert.Equal(t, []string{"alice", "alice", "bob"}, []string{got[0].Operator, got[1].Operator, got[2].Operator})

	require.NoError(t, j.PushFailed(ctx, phone.Endpoint, "The push service refused the push (HTTP 500).", T0.Add(time.Minute)))
	got, err = j.PushSubscriptions(ctx)
	require.NoError(t, err)
	assert.Equal(t, "The push service refused the push (HTTP 500).", got[1].LastFailure)
	assert.True(t, got[1].LastFailureAt.Equal(T0.Add(time.Minute)))
	require.NoError(t, j.PushFailed(ctx, phone.Endpoint, "", T0.Add(2*time.Minute)))
	got, err = j.PushSubscriptions(ctx)
	require.NoError(t, err)
	assert.Empty(t, got[1].LastFailure)
	assert.True(t, got[1].LastFailureAt.IsZero())

	// The same device subscribed again, now by bob: one row, bob's.
	require.NoError(t, j.SavePushSubscription(ctx, sub("https://push.example/a", "bob", "s-b", T0.Add(time.Hour))))
	got, err = j.PushSubscriptions(ctx)
	require.NoError(t, err)
	require.Len(t, got, 3)

	gone, err := j.DeletePushSubscription(ctx, "alice", "https://push.example/c")
	require.NoError(t, err)
	assert.False(t, gone, "bob's device is not alice's to remove")
	gone, err = j.DeletePushSubscription(ctx, "bob", "https://push.example/c")
	require.NoError(t, err)
	assert.True(t, gone)

	require.NoError(t, j.DeleteSessionPushSubscriptions(ctx, "s-b"))
	got, err = j.PushSubscriptions(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, phone.Endpoint, got[0].Endpoint)
}

// Each card's push of each kind is claimed once, however many callers
// (replicas) race for it.
func testPushClaims(t *testing.T, st Store) {
	ctx := context.Background()
	stores := []Backend{st.Open()}
	if st.Shared {
		stores = append(stores, st.Open())
	}
	var mu sync.Mutex
	won := map[string]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		j := stores[i%len(stores)]
		for _, kind := range []string{store.ClaimNew, store.ClaimSettled} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := j.ClaimPush(ctx, "c1", kind, T0)
				assert.NoError(t, err)
				if ok {
					mu.Lock()
					won[kind+"#"+strconv.Itoa(i%len(stores))]++
					won[kind]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, 1, won[store.ClaimNew])
	assert.Equal(t, 1, won[store.ClaimSettled])
	ok, err := stores[0].ClaimPush(ctx, "c2", store.ClaimNew, T0.Add(time.Hour))
	require.NoError(t, err)
	assert.True(t, ok, "another card is its own claim")

	// The claims of a kind are listed, by any replica, with their time.
	for _, kind := range []string{"routing:new:oncall", "routing:answered:oncall"} {
		ok, err := stores[len(stores)-1].ClaimPush(ctx, "c3", kind, T0.Add(2*time.Hour))
		require.NoError(t, err)
		require.True(t, ok)
	}
	claims, err := stores[0].PushClaimsOf(ctx, "routing:")
	require.NoError(t, err)
	for i := range claims {
		claims[i].At = claims[i].At.UTC()
	}
	assert.Equal(t, []store.PushClaim{{Card: "c3", Kind: "routing:answered:oncall", At: T0.Add(2 * time.Hour)},
		{Card: "c3", Kind: "routing:new:oncall", At: T0.Add(2 * time.Hour)}}, claims)

	n, err := stores[0].PrunePushClaims(ctx, T0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "c1's two claims")
	claims, err = stores[0].PushClaimsOf(ctx, "routing:")
	require.NoError(t, err)
	assert.Len(t, claims, 2, "the later claims are kept")
	ok, err = stores[0].ClaimPush(ctx, "c2", store.ClaimNew, T0.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, ok, "a later claim is kept")
}

// An operator is looking while one of their pages last said visible,
// recently enough; a hidden report or an old one does not count.
func testPageVisibility(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	require.NoError(t, j.SetPageVisible(ctx, "p1", "alice", true, T0))
	require.NoError(t, j.SetPageVisible(ctx, "p2", "alice", false, T0))
	require.NoError(t, j.SetPageVisible(ctx, "p3", "bob", false, T0))
	got, err := j.VisibleOperators(ctx, T0.Add(-time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"alice"}, got)

	require.NoError(t, j.SetPageVisible(ctx, "p1", "alice", false, T0.Add(time.Second)))
	require.NoError(t, j.SetPageVisible(ctx, "p3", "bob", true, T0.Add(time.Second)))
	got, err = j.VisibleOperators(ctx, T0.Add(-time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"bob"}, got)

	got, err = j.VisibleOperators(ctx, T0.Add(2*time.Second))
	require.NoError(t, err)
	assert.Empty(t, got, "a report older than since is stale")
}
