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

type itemKind uint8

const (
	itemEvent  itemKind = iota // a live event for sub
	itemReplay                 // sub's replay, before its live events
	itemFrame                  // bytes written as they are (WS frames, forwarded commands)
)

// item is one unit in an outbox.
type item struct {
	kind   itemKind
	sub    *subscriber
	d      *delivery
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

// pushEvent queues a live event without blocking. Past three quarters of
// the limit, debug and info events are dropped (counted); at the limit, a
// notice-or-above event fails the outbox so its peer is disconnected and
// resumes exactly: never a silent loss (AEP-0003 §8.4).
func (o *outbox) pushEvent(it item, sev aep.Severity) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed {
		return
	}
	n := len(o.items)
	if sev <= aep.SeverityInfo && n >= o.limit*3/4 {
		o.dropped++
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
