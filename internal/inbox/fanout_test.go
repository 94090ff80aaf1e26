package inbox

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestFanOutDropsASlowSubscriber(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	const n = 200
	slow := in.Subscribe(1) // never read while Apply runs
	// room for every change: a reader that keeps up is never dropped,
	// however the scheduler runs it
	fast := in.Subscribe(n)
	defer fast.Close()

	got := make(chan []Change, 1)
	go func() {
		var seen []Change
		for ch := range fast.C() {
			seen = append(seen, ch)
			if len(seen) == n {
				break
			}
		}
		got <- seen
	}()

	applied := make(chan struct{})
	go func() {
		defer close(applied)
		for i := range n {
			in.Apply(request(t, fmt.Sprintf("r%d", i), int64(i), formData("")))
		}
	}()
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		t.Fatal("Apply blocked on a subscriber")
	}

	var seen []Change
	select {
	case seen = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the fast subscriber did not get every change")
	}
	require.Len(t, seen, n)
	for i, ch := range seen {
		assert.Equal(t, uint64(i+1), ch.Seq, "change %d in order", i)
		assert.Equal(t, ChangeAdded, ch.Kind)
	}

	assert.True(t, slow.Dropped(), "slow subscriber dropped")
	assert.False(t, fast.Dropped())
	first, ok := <-slow.C()
	assert.True(t, ok, "what was queued before the drop is still readable")
	assert.Equal(t, uint64(1), first.Seq)
	_, ok = <-slow.C()
	assert.False(t, ok, "a dropped subscriber's channel is closed")
	slow.Close() // safe after a drop

	// the dropped subscriber catches up with Since from its last change
	missed, ok := in.Since(first.Seq)
	require.True(t, ok)
	assert.Len(t, missed, n-1)
}

func TestSubscriptionClose(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	s := in.Subscribe(0)
	s.Close()
	s.Close()
	_, ok := <-s.C()
	assert.False(t, ok)
	in.Apply(request(t, "r1", 1, formData(""))) // publishing after Close must not panic
	assert.False(t, s.Dropped())
}

func TestSince(t *testing.T) {
	t.Parallel()
	clk := newClock()
	in := New(Options{Now: clk.Now, History: 5})
	got, ok := in.Since(0)
	require.True(t, ok)
	assert.Empty(t, got, "nothing happened yet")

	for i := range 8 {
		in.Apply(request(t, fmt.Sprintf("r%d", i), int64(i), formData("")))
	}
	require.Equal(t, uint64(8), in.Seq())
	seqs := func(cs []Change) []uint64 {
		var out []uint64
		for _, c := range cs {
			out = append(out, c.Seq)
		}
		return out
	}
	tests := []struct {
		since uint64
		ok    bool
		want  []uint64
	}{
		{8, true, nil},
		{7, true, []uint64{8}},
		{3, true, []uint64{4, 5, 6, 7, 8}},
		{2, false, nil}, // change 3 is no longer kept
		{0, false, nil},
		{9, false, nil}, // from the future: another process
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.since), func(t *testing.T) {
			t.Parallel()
			got, ok := in.Since(tc.since)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, seqs(got))
		})
	}
	got, _ = in.Since(7)
	assert.Equal(t, Change{Seq: 8, Card: cardIDOf("r7"), Kind: ChangeAdded}, got[0])
}

func TestSubscribeSince(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	in.Apply(request(t, "r2", 2, formData("")))
	s, missed, ok := in.SubscribeSince(1, 4)
	defer s.Close()
	require.True(t, ok)
	require.Len(t, missed, 1)
	assert.Equal(t, uint64(2), missed[0].Seq)
	in.Apply(request(t, "r3", 3, formData("")))
	assert.Equal(t, uint64(3), next(t, s).Seq, "the subscription continues right after the catch-up")
}

func TestStatus(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	s := in.Subscribe(16)
	defer s.Close()
	assert.Equal(t, Status{FeedConnecting: true}, in.Status(), "connecting, until the feed has connected once")

	in.FeedState(true, nil)
	assert.Equal(t, Change{Seq: 1, Kind: ChangeStatus}, next(t, s))
	in.FeedState(true, nil)
	assert.Empty(t, drainNow(s), "the same state again publishes nothing")

	in.FeedState(false, errors.New("feed: connection refused"))
	assert.Equal(t, ChangeStatus, next(t, s).Kind)
	st := in.Status()
	assert.False(t, st.FeedConnected)
	assert.Equal(t, "feed: connection refused", st.FeedError)

	in.ReplayExhausted("s:1 x", aep.Position{Epoch: 0, Seq: 42})
	assert.Equal(t, ChangeStatus, next(t, s).Kind)
	in.ReplayExhausted("s:1 x", aep.Position{Epoch: 0, Seq: 42})
	assert.Empty(t, drainNow(s), "the same gap twice is one notice")
	st = in.Status()
	require.Len(t, st.Notices, 1)
	assert.Equal(t, Notice{Session: "s:1 x", Earliest: aep.Position{Seq: 42},
		Message: "events may be missing for session s:1 x", At: clk.Now()}, st.Notices[0])

	in.Apply(request(t, "r1", 1, formData("")))
	assert.Equal(t, 1, in.Status().Pending)
}

func TestNoticesBounded(t *testing.T) {
	t.Parallel()
	clk := newClock()
	in := New(Options{Now: clk.Now, MaxNotices: 3})
	for i := range 5 {
		in.ReplayExhausted(fmt.Sprintf("s%d", i), aep.Position{})
	}
	in.ReplayExhausted("s2", aep.Position{Seq: 7}) // newer gap for s2 moves it last
	var got []string
	for _, n := range in.Status().Notices {
		got = append(got, n.Session)
	}
	assert.Equal(t, []string{"s3", "s4", "s2"}, got)
}
