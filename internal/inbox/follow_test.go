package inbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// takeWithin waits up to a second for f's signal and takes what waits.
func takeWithin(t *testing.T, f *Follower) ([]Change, bool) {
	t.Helper()
	select {
	case <-f.Ready():
	case <-time.After(time.Second):
		t.Fatal("no signal for waiting changes")
	}
	return f.Take(nil)
}

// TestFollowerTakesWaitingChangesTogether: a Follower's changes wait in a
// list made only while they wait (a push stream holds no 256-change
// buffer while idle), in order; one signal stands for all of them.
func TestFollowerTakesWaitingChangesTogether(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	f := in.Follow(8)
	defer f.Close()
	select {
	case <-f.Ready():
		t.Fatal("a signal with nothing waiting")
	default:
	}
	got, open := f.Take(nil)
	assert.True(t, open)
	assert.Empty(t, got)

	for i := range 3 {
		in.Apply(request(t, fmt.Sprintf("r%d", i), int64(i), formData("")))
	}
	got, open = takeWithin(t, f)
	require.True(t, open)
	require.Len(t, got, 3, "the three changes at once")
	for i, ch := range got {
		assert.Equal(t, uint64(i+1), ch.Seq)
		assert.Equal(t, ChangeAdded, ch.Kind)
	}
	select {
	case <-f.Ready():
		t.Fatal("one signal for the three, not one each")
	default:
	}
	assert.Zero(t, cap(f.pending), "nothing held once taken")

	in.Apply(request(t, "r3", 3, formData("")))
	got, open = takeWithin(t, f)
	require.True(t, open)
	require.Len(t, got, 1)
	assert.Equal(t, uint64(4), got[0].Seq)
	assert.False(t, f.Dropped())

	f.Wake()
	got, open = takeWithin(t, f)
	assert.True(t, open, "woken, not ended")
	assert.Empty(t, got, "woken with nothing waiting")

	f.Close()
	f.Close() // twice is fine
	got, open = takeWithin(t, f)
	assert.False(t, open, "closed")
	assert.Empty(t, got)
	assert.False(t, f.Dropped(), "closed, not dropped")
}

// TestFollowerDroppedPastItsBound: more than max changes waiting drop the
// follower (as a Subscription's full queue does); Apply never waits.
func TestFollowerDroppedPastItsBound(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	slow := in.Follow(4)
	defer slow.Close()
	fast := in.Follow(100)
	defer fast.Close()
	for i := range 5 {
		in.Apply(request(t, fmt.Sprintf("r%d", i), int64(i), formData("")))
	}
	got, open := takeWithin(t, slow)
	assert.False(t, open, "the fifth change overflowed its four")
	assert.Empty(t, got, "a dropped follower catches up by reconnecting")
	assert.True(t, slow.Dropped())
	got, open = takeWithin(t, fast)
	assert.True(t, open)
	assert.Len(t, got, 5)
	assert.False(t, fast.Dropped())

	in.Apply(request(t, "r5", 5, formData("")))
	got, open = takeWithin(t, fast)
	assert.True(t, open, "the dropped one is no longer offered changes")
	assert.Len(t, got, 1)
}

// TestFollowSince: the catch-up and the follower are taken together.
func TestFollowSince(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	for i := range 3 {
		in.Apply(request(t, fmt.Sprintf("r%d", i), int64(i), formData("")))
	}
	f, catchUp, ok := in.FollowSince(1, 8)
	defer f.Close()
	require.True(t, ok)
	require.Len(t, catchUp, 2)
	assert.Equal(t, uint64(2), catchUp[0].Seq)
	assert.Equal(t, uint64(3), catchUp[1].Seq)
	in.Apply(request(t, "r3", 3, formData("")))
	got, open := takeWithin(t, f)
	require.True(t, open)
	require.Len(t, got, 1)
	assert.Equal(t, uint64(4), got[0].Seq, "nothing missed or repeated between the two")

	g, _, ok := in.FollowSince(99, 8)
	defer g.Close()
	assert.False(t, ok, "ahead of the inbox: reload")
}
