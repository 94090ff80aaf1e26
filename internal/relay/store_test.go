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

// The commands a session owes its claimant: each not acknowledged and
// not replaced by a later command of the same type and subject (an
// answer the operator changed). A replacing answer stays owed though the
// one it replaced was acknowledged; commands without a subject replace
// none.
func TestStoreUnackedSkipsReplacedCommands(t *testing.T) {
	t.Parallel()
	s := newStore(100, 10, 1<<20)
	seq := int64(0)
	add := func(typ, id, subject, cause string) {
		t.Helper()
		env := aep.Envelope{ID: id, Type: typ, Time: "2026-07-03T10:00:00Z", Source: "aep://t", Agent: "t", Session: "s",
			Subject: subject, Cause: cause, Data: map[string]any{}}
		if !aep.IsCommand(typ) {
			seq++
			env.Seq = aep.Int64(seq)
		}
		if typ == "control.cancel" {
			env.Data = map[string]any{"scope": "session"}
		}
		e, err := aep.Build(env)
		require.NoError(t, err)
		require.True(t, s.add(e))
	}
	ids := func() (out []string) {
		for _, e := range s.unacked("s") {
			out = append(out, e.ID())
		}
		return out
	}
	add("control.attention.respond", "a1", "req-1", "")
	add("control.attention.respond", "b1", "req-2", "")
	add("control.cancel", "c1", "", "")
	add("control.cancel", "c2", "", "")
	assert.Equal(t, []string{"a1", "b1", "c1", "c2"}, ids())
	add("control.accepted", "ack-a1", "req-1", "a1")
	add("control.attention.respond", "a2", "req-1", "")
	assert.Equal(t, []string{"b1", "c1", "c2", "a2"}, ids(), "a2 replaces a1, acknowledged or not")
	add("control.attention.respond", "b2", "req-2", "")
	assert.Equal(t, []string{"c1", "c2", "a2", "b2"}, ids(), "b2 replaces b1, unacknowledged")
	add("control.rejected", "rej-b2", "req-2", "b2")
	assert.Equal(t, []string{"c1", "c2", "a2"}, ids(), "nothing owed for req-2 once its latest answer is acknowledged")
}
