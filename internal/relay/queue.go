package relay

import (
	"sync"

	"github.com/aepforms/aepforms/internal/aep"
)

// delivery is one live event on its way to subscribers. The down-levelled
// forms for each capture ceiling are computed once and shared.
type delivery struct {
	ev   *aep.Event
	mu   sync.Mutex
	down [aep.CaptureFull + 1]*aep.Event
	err  [aep.CaptureFull + 1]error
	str  [aep.CaptureFull + 1]string // SSE data, once per ceiling
	has  [aep.CaptureFull + 1]bool
}

// at returns the event as delivered under ceiling c: itself when its
// capture is at or below c, else its down-levelled form (never up-levelled).
func (d *delivery) at(c aep.Capture) (*aep.Event, error) {
	if d.ev.Capture() <= c || c < aep.CaptureNone || c > aep.CaptureFull {
		return d.ev, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down[c] == nil && d.err[c] == nil {
		d.down[c], d.err[c] = aep.Downlevel(d.ev, c)
	}
	return d.down[c], d.err[c]
}

// data returns ev's bytes (ev = d.at(c)) as a string, converted once per
// ceiling for all SSE subscribers.
func (d *delivery) data(c aep.Capture, ev *aep.Event) string {
	if c < aep.CaptureNone || c > aep.CaptureFull {
		return string(ev.Raw())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.has[c] {
		d.str[c], d.has[c] = string(ev.Raw()), true
	}
	return d.str[c]
}

// downlevel applies ceiling c to one event, for replay.
func downlevel(ev *aep.Event, c aep.Capture) (*aep.Event, error) {
	if ev.Capture() <= c {
		return ev, nil
	}
	return aep.Downlevel(ev, c)
}

// batch is the live events of one ingest (one POST, one frame), shared by
// every subscriber it is queued to; each subscriber applies its filter as
// it writes. Queuing a burst as one item means a big NDJSON batch costs a
// subscriber one queue slot, not a slot per event.
type batch struct {
	ds     []*delivery
	maxSev aep.Severity
}

func newBatch(evs []*aep.Event) *batch {
	b := &batch{ds: make([]*delivery, len(evs))}
	for i, ev := range evs {
		b.ds[i] = &delivery{ev: ev}
		b.maxSev = max(b.maxSev, ev.Severity())
	}
	return b
}

type itemKind uint8

const (
	itemEvents itemKind = iota // live events (a batch) for sub
	itemReplay                 // sub's replay, before its live events
	itemFrame                  // bytes written as they are (WS frames, forwarded commands)
)

// item is one unit in an outbox.
type item struct {
	kind   itemKind
	sub    *subscriber
	batch  *batch
	replay *replay
	frame  []byte
}

// outbox is the bounded queue between the relay (which never blocks on
// it) and the one goroutine that writes to a peer.
type outbox struct {
	mu      sync.Mutex
	items   []item
	limit   int
	notify  chan struct{} // cap 1: something was queued or the outbox failed
	failed  bool          // overflowed: the writer ends the stream
	dropped int           // debug/info events dropped toward this peer
}

func newOutbox(limit int) *outbox {
	return &outbox{limit: limit, notify: make(chan struct{}, 1)}
}

func (o *outbox) signal() {
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// pushEvents queues live events without blocking. Past three quarters of
// the limit, a batch of only debug and info events is dropped (counted);
// at the limit, a batch holding a notice-or-above event fails the outbox
// so its peer is disconnected and resumes exactly: never a silent loss
// (AEP-0003 §8.4).
func (o *outbox) pushEvents(it item) {
	sev := it.batch.maxSev
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed {
		return
	}
	n := len(o.items)
	if sev <= aep.SeverityInfo && n >= o.limit*3/4 {
		o.dropped += len(it.batch.ds)
		return
	}
	if n >= o.limit {
		o.failed = true
		o.signal()
		return
	}
	o.items = append(o.items, it)
	o.signal()
}

// pushControl queues a frame, a forwarded command or a replay, which are
// never dropped; past twice the limit the peer is too slow to keep and
// the outbox fails.
func (o *outbox) pushControl(it item) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed {
		return
	}
	if len(o.items) >= 2*o.limit {
		o.failed = true
		o.signal()
		return
	}
	o.items = append(o.items, it)
	o.signal()
}

// take removes and returns everything queued, reusing buf, and whether the
// outbox failed.
func (o *outbox) take(buf []item) ([]item, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append(buf[:0], o.items...)
	clear(o.items)
	o.items = o.items[:0]
	if cap(o.items) > 4*o.limit {
		o.items = nil
	}
	return out, o.failed
}

// fail marks the outbox failed (peer gone or being dropped).
func (o *outbox) fail() {
	o.mu.Lock()
	o.failed = true
	o.mu.Unlock()
	o.signal()
}
