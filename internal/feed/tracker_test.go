package feed

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestTrackerWindow(t *testing.T) {
	t.Parallel()
	tr := newTracker(3, 10)
	s := tr.session(aep.SessionKey{Source: "src", Session: "s"})
	for _, id := range []string{"a", "b", "c"} {
		assert.True(t, s.add(id, 3), "%s is new", id)
	}
	assert.False(t, s.add("a", 3), "a is a duplicate")
	assert.True(t, s.add("d", 3), "d is new and pushes out the oldest, a")
	assert.False(t, s.add("b", 3), "b is still remembered")
	assert.True(t, s.add("a", 3), "a was forgotten")
	assert.Len(t, s.seen, 3, "memory stays at the window")
}

func TestTrackerSessionCap(t *testing.T) {
	t.Parallel()
	tr := newTracker(10, 2)
	k := func(s string) aep.SessionKey { return aep.SessionKey{Source: "src", Session: s} }
	tr.session(k("one")).add("x", 10)
	tr.session(k("two")).add("y", 10)
	tr.session(k("one")) // written again: "two" is now the least recently written
	tr.session(k("three"))
	assert.Len(t, tr.sessions, 2)
	assert.Contains(t, tr.sessions, k("one"))
	assert.NotContains(t, tr.sessions, k("two"), "the least recently written session is forgotten")
}

func TestTrackerPositions(t *testing.T) {
	t.Parallel()
	tr := newTracker(10, 10)
	tr.session(aep.SessionKey{Source: "a", Session: "shared"}).advance(aep.Position{Seq: 9})
	tr.session(aep.SessionKey{Source: "b", Session: "shared"}).advance(aep.Position{Seq: 4})
	s := tr.session(aep.SessionKey{Source: "a", Session: "own"})
	s.advance(aep.Position{Epoch: 1, Seq: 2})
	s.advance(aep.Position{Epoch: 0, Seq: 50}) // lower: ignored
	tr.session(aep.SessionKey{Source: "a", Session: "no-position"})
	tr.session(aep.SessionKey{Source: "agent-scoped"}).advance(aep.Position{Seq: 1})
	assert.Equal(t, []fromPosition{
		{Session: "own", Epoch: 1, Seq: 2},
		{Session: "shared", Seq: 4},
	}, tr.positions(), "one entry per session name, the earlier of two sources")
}

// The dedupe window keeps digests, not ids: what it costs does not grow
// with the length of the ids agents send.
func TestTrackerKeepsDigestsNotIDs(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	tr := newTracker(100, 10)
	s := tr.session(aep.SessionKey{Source: "aep://t", Session: "s"})
	long := strings.Repeat("i", 1<<20)
	before := heap()
	for i := range 32 {
		id := long + strconv.Itoa(i)
		require.True(t, s.add(id, 100))
		require.False(t, s.add(id, 100), "a repeat is a duplicate")
	}
	grown := int64(heap()) - int64(before)
	assert.Less(t, grown, int64(1<<20), "32 ids of 1 MiB kept %d bytes alive", grown)
	runtime.KeepAlive(tr)
}
