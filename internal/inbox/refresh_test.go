package inbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func refreshInbox(t *testing.T) *Inbox {
	t.Helper()
	in := New(Options{})
	in.Apply(raw(t, `{"aep":"0.1","id":"r1","type":"attention.requested","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s1","seq":0,"data":{"kind":"input","prompt":"Name?"}}`))
	in.Apply(raw(t, `{"aep":"0.1","id":"r2","type":"attention.requested","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s2","seq":0,"data":{"kind":"input","prompt":"Age?"}}`))
	in.Apply(raw(t, `{"aep":"0.1","id":"r3","type":"attention.requested","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s3","seq":0,"data":{"kind":"input","prompt":"City?"}}`))
	in.Apply(raw(t, `{"aep":"0.1","id":"t2","type":"attention.timeout","subject":"r2","time":"2026-07-03T10:01:00Z","source":"aep://h/a","agent":"a","session":"s2","seq":1,"data":{}}`))
	return in
}

func TestOpenSessionsListsSessionsWithOpenCards(t *testing.T) {
	t.Parallel()
	assert.ElementsMatch(t, []string{"s1", "s3"}, refreshInbox(t).openSessions(), "s2's only card timed out")
}

func TestRefreshReachRepublishesOnlyTheOpenCardsWhoseReachChanged(t *testing.T) {
	t.Parallel()
	in := refreshInbox(t)
	roster := map[string]Reach{"s1": ReachConnected, "s2": ReachConnected, "s3": ReachNotConnected}
	in.RefreshReach(func(s string) Reach { return roster[s] })
	sub := in.Subscribe(8)
	defer sub.Close()

	roster["s1"], roster["s2"] = ReachNotConnected, ReachNotConnected
	in.RefreshReach(func(s string) Reach { return roster[s] })

	require.Len(t, sub.C(), 1, "one change: s1's open card (s2's is settled, s3's reach did not change)")
	ch := <-sub.C()
	assert.Equal(t, ChangeUpdated, ch.Kind)
	c, ok := in.Card(ch.Card)
	require.True(t, ok)
	assert.Equal(t, "s1", c.Key.Session)

	in.RefreshReach(func(s string) Reach { return roster[s] })
	assert.Empty(t, sub.C(), "nothing changed: nothing republished")
}
