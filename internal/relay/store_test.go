package relay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// The replay buffers are bounded by bytes across sessions, not only by
// events per session: 120 requests of 8 MB no longer keep a gigabyte.
// The session flooded with big events loses its own oldest events (and
// a resume from before them is told so); a quiet session keeps its one.
func TestStoreBoundedByBytes(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	s := newStore(10000, 500, limit)
	build := func(session, id string, seq int64, prompt string) *aep.Event {
		t.Helper()
		e, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Time: "2026-07-03T10:00:00Z",
			Source: "aep://t", Agent: "t", Session: session, Seq: aep.Int64(seq),
			Data: map[string]any{"kind": "confirm", "prompt": prompt}})
		require.NoError(t, err)
		return e
	}
	require.True(t, s.add(build("quiet", "q1", 1, "deploy?")))
	big := strings.Repeat("x", 100<<10)
	for i := range 120 {
		require.True(t, s.add(build(fmt.Sprintf("flood-%d", i%3), fmt.Sprintf("f%d", i), int64(i/3+1), big)))
		var sum int64
		for _, r := range s.all() {
			sum += r.bytes
		}
		require.Equal(t, s.bytes, sum, "the store's count is its rings'")
		require.LessOrEqual(t, s.bytes, int64(limit), "after %d big events", i+1)
	}
	q := s.session("quiet")
	require.NotNil(t, q)
	assert.Equal(t, 1, q.len(), "the quiet session keeps its request")
	f := s.session("flood-0")
	_, exhausted, _ := f.after(aep.Position{})
	assert.True(t, exhausted, "a resume of the flooded session from its start is told events are gone")
}
