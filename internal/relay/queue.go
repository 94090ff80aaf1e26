package relay

import (
	"strings"
	"sync"

	"github.com/aepforms/aepforms/internal/aep"
)

// delivery is one live event on its way to subscribers. Its form under
// each capture ceiling (down-levelled, and as an SSE data string) is
// computed once, by whichever subscriber needs it first, and shared.
type delivery struct {
	ev *aep.Event
	v  [aep.CaptureFull + 1]variant
}

type variant struct {
	once    sync.Once
	ev      *aep.Event
	err     error
	strOnce sync.Once
	str     string
}

// slot is the variant index for ceiling c: the event's own capture when c
// is at or above it (never up-levelled).
func (d *delivery) slot(c aep.Capture) aep.Capture {
	return min(max(c, aep.CaptureNone), d.ev.Capture(), aep.CaptureFull)
}

// at returns the event as delivered under ceiling c.
func (d *delivery) at(c aep.Capture) (*aep.Event, error) {
	i := d.slot(c)
	if i == d.ev.Capture() {
		return d.ev, nil
	}
	v := &d.v[i]
	v.once.Do(func() { v.ev, v.err = aep.Downlevel(d.ev, i) })
	return v.ev, v.err
}

// data returns ev's bytes (ev = d.at(c)) as a string, converted once per
// ceiling for all SSE subscribers.
func (d *delivery) data(c aep.Capture, ev *aep.Event) string {
	v := &d.v[d.slot(c)]
	v.strOnce.Do(func() { v.str = string(ev.Raw()) })
	return v.str
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
	bytes  int64 // of its events
}

func newBatch(evs []*aep.Event) *batch {
	b := &batch{ds: make([]*delivery, len(evs))}
	for i, ev := range evs {
		b.ds[i] = &delivery{ev: ev}
		b.bytes += int64(len(ev.Raw()))
		b.maxSev = max(b.maxSev, deliverySeverity(ev))
	}
	return b
}

// deliverySeverity is the severity that decides whether an event may be
// dropped toward a slow subscriber. AEP-0003 §8.4 lets a relay drop debug
// and info, but attention and control events (a request, its outcome, an
// ack) are what answering UIs and control senders act on, and they default
// to info: losing one silently loses a question or an answer. They are
// treated as notice: delivered, or the subscriber is disconnected so it
// resumes exactly.
func deliverySeverity(ev *aep.Event) aep.Severity {
	sev := ev.Severity()
	if t := ev.Type(); sev < aep.SeverityNotice && (strings.HasPrefix(t, "attention.") || strings.HasPrefix(t, "control.")) {
		return aep.SeverityNotice
	}
	return sev
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
	mu       sync.Mutex
	items    []item
	limit    int
	maxBytes int64 // of the live events queued (Config.QueueBytes); 0: no bound
	bytes    int64
	notify   chan struct{} // cap 1: something was queued or the outbox failed
	failed   bool          // overflowed: the writer ends the stream
	dropped  int           // debug/info events dropped toward this peer
}

func newOutbox(limit int) *outbox {
	return &outbox{limit: limit, notify: make(chan struct{}, 1)}
}

// newOutboxWithin is newOutbox whose live events are also bounded by
// bytes: a queue of big events is as full as one of many.
func newOutboxWithin(limit int, maxBytes int64) *outbox {
	o := newOutbox(limit)
	o.maxBytes = maxBytes
	return o
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
// (AEP-0003 §8.4). The limit is in items and, when maxBytes is set, in
// bytes of the events queued: whichever is nearer full counts.
func (o *outbox) pushEvents(it item) {
	sev := it.batch.maxSev
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed {
		return
	}
	n := len(o.items)
	overBytes := func(num, den int64) bool { // past num/den of maxBytes with it
		return o.maxBytes > 0 && n > 0 && (o.bytes+it.batch.bytes)*den > o.maxBytes*num
	}
	if sev <= aep.SeverityInfo && (n >= o.limit*3/4 || overBytes(3, 4)) {
		o.dropped += len(it.batch.ds)
		return
	}
	if n >= o.limit || overBytes(1, 1) {
		o.failed = true
		o.signal()
		return
	}
	o.items = append(o.items, it)
	o.bytes += it.batch.bytes
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
	o.bytes = 0
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
