package relay

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestOutboxDropsLowSeverityFirstAndFailsLoudly(t *testing.T) {
	t.Parallel()
	o := newOutbox(8)
	at := func(sevs ...string) item {
		var evs []*aep.Event
		for _, s := range sevs {
			e, err := aep.Build(aep.Envelope{ID: "x", Type: "progress.status", Time: "2026-07-03T10:00:00Z",
				Source: "aep://t", Agent: "t", Session: "s", Seq: aep.Int64(0), Severity: s})
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, e)
		}
		return item{kind: itemEvents, batch: newBatch(evs)}
	}
	for range 6 {
		o.pushEvents(at("info"))
	}
	o.pushEvents(at("debug"))
	o.pushEvents(at("info", "debug"))
	assert.Equal(t, 3, o.dropped, "past three quarters, debug and info are dropped")
	o.pushEvents(at("info", "notice"))
	o.pushEvents(at("warning"))
	items, failed := o.take(nil)
	assert.Len(t, items, 8, "notice and above still fit until the limit")
	assert.False(t, failed)

	for range 8 {
		o.pushEvents(at("error"))
	}
	o.pushEvents(at("debug", "notice"))
	_, failed = o.take(nil)
	assert.True(t, failed, "a notice event that does not fit fails the outbox: never a silent loss")
	o.pushControl(item{kind: itemFrame})
	items, _ = o.take(nil)
	assert.Empty(t, items, "a failed outbox takes nothing more")

	c := newOutbox(2)
	for range 4 {
		c.pushControl(item{kind: itemFrame})
	}
	_, failed = c.take(nil)
	assert.False(t, failed, "frames may use twice the limit")
	for range 5 {
		c.pushControl(item{kind: itemFrame})
	}
	_, failed = c.take(nil)
	assert.True(t, failed)
}

// Attention and control events are what an answering UI acts on: at info
// they are still never dropped toward a slow subscriber.
func TestOutboxNeverDropsAttentionOrControl(t *testing.T) {
	t.Parallel()
	build := func(typ string) item {
		e, err := aep.Build(aep.Envelope{ID: "x", Type: typ, Time: "2026-07-03T10:00:00Z",
			Source: "aep://t", Agent: "t", Session: "s", Seq: aep.Int64(0), Severity: "info"})
		if err != nil {
			t.Fatal(err)
		}
		return item{kind: itemEvents, batch: newBatch([]*aep.Event{e})}
	}
	o := newOutbox(4)
	for range 3 {
		o.pushEvents(build("progress.status"))
	}
	o.pushEvents(build("progress.status"))
	assert.Equal(t, 1, o.dropped, "an info progress event past three quarters is dropped")
	o.pushEvents(build("attention.requested"))
	assert.Equal(t, 1, o.dropped, "an info attention.requested is not")
	items, failed := o.take(nil)
	assert.Len(t, items, 4)
	assert.False(t, failed)

	for range 4 {
		o.pushEvents(build("attention.answered"))
	}
	o.pushEvents(build("control.accepted"))
	_, failed = o.take(nil)
	assert.True(t, failed, "an ack that does not fit disconnects the subscriber, never a silent loss")
}

// The outbox is bounded by bytes as well as items: a slow subscriber
// cannot hold a thousand 8 MB requests. Big info events are dropped past
// three quarters of the bytes, a big request fails the outbox (its peer
// resumes exactly), and one ingest larger than the bound still passes an
// empty queue.
func TestOutboxBoundedByBytes(t *testing.T) {
	t.Parallel()
	build := func(typ string, size int) item {
		e, err := aep.Build(aep.Envelope{ID: "x", Type: typ, Time: "2026-07-03T10:00:00Z",
			Source: "aep://t", Agent: "t", Session: "s", Seq: aep.Int64(0), Severity: "info",
			Data: map[string]any{"text": strings.Repeat("x", size)}})
		require.NoError(t, err)
		return item{kind: itemEvents, batch: newBatch([]*aep.Event{e})}
	}
	o := newOutboxWithin(1024, 1000)
	o.pushEvents(build("attention.requested", 5000))
	items, failed := o.take(nil)
	assert.Len(t, items, 1, "one ingest bigger than the bound passes an empty queue")
	assert.False(t, failed)

	o.pushEvents(build("progress.status", 200))
	o.pushEvents(build("progress.status", 200))
	o.pushEvents(build("progress.status", 200))
	assert.Equal(t, 1, o.dropped, "an info event past three quarters of the bytes is dropped")
	o.pushEvents(build("attention.requested", 600))
	_, failed = o.take(nil)
	assert.True(t, failed, "a request past the bytes fails the outbox, never a silent loss")
}
