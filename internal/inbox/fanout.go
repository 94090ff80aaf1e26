package inbox

import "sync/atomic"

// ChangeKind says what happened to a card, or that the status changed.
type ChangeKind string

// Change kinds.
const (
	ChangeAdded   ChangeKind = "added"   // a new card
	ChangeUpdated ChangeKind = "updated" // a card's state, facts or submission changed
	ChangeRemoved ChangeKind = "removed" // a settled card was evicted (MaxSettled)
	ChangeStatus  ChangeKind = "status"  // Status() changed (feed connection, notices); Card is ""
)

// Change is one numbered change. Seq increases by one per change across
// the whole inbox; read the card itself with Inbox.Card.
type Change struct {
	Seq  uint64
	Card CardID
	Kind ChangeKind
}

// Subscription receives every change after it was made, in order, on a
// bounded queue. When the queue is full the subscriber is dropped: its
// channel is closed and Dropped reports true; it catches up with Since.
type Subscription struct {
	in      *Inbox
	ch      chan Change
	closed  bool // guarded by in.mu
	dropped atomic.Bool
}

// DefaultSubscriptionBuffer is the queue length Subscribe uses for buf <= 0.
const DefaultSubscriptionBuffer = 64

// Subscribe returns a subscription with a queue of buf changes (default
// DefaultSubscriptionBuffer).
func (in *Inbox) Subscribe(buf int) *Subscription {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.subscribe(buf)
}

// SubscribeSince atomically returns the changes after seq (as Since does)
// and a subscription for every change after those, so nothing is missed
// or repeated between the two. On false (too far behind) the subscription
// is still made: reload the whole list, then follow it.
func (in *Inbox) SubscribeSince(seq uint64, buf int) (*Subscription, []Change, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	changes, ok := in.since(seq)
	return in.subscribe(buf), changes, ok
}

func (in *Inbox) subscribe(buf int) *Subscription {
	if buf <= 0 {
		buf = DefaultSubscriptionBuffer
	}
	s := &Subscription{in: in, ch: make(chan Change, buf)}
	in.subs[s] = struct{}{}
	return s
}

// C is the subscription's channel; it is closed by Close or on drop.
func (s *Subscription) C() <-chan Change { return s.ch }

// Dropped reports whether the inbox dropped the subscription because its
// queue was full.
func (s *Subscription) Dropped() bool { return s.dropped.Load() }

// Close ends the subscription and closes its channel. It is safe to call
// more than once and after a drop.
func (s *Subscription) Close() {
	s.in.mu.Lock()
	defer s.in.mu.Unlock()
	s.in.unsubscribe(s)
}

func (in *Inbox) unsubscribe(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	delete(in.subs, s)
	close(s.ch)
}

// publish numbers ch, keeps it in the history and offers it to every
// subscriber without blocking (called with in.mu held; sends never wait).
func (in *Inbox) publish(ch Change) {
	in.seq++
	ch.Seq = in.seq
	if len(in.history) < in.opts.History {
		in.history = append(in.history, ch)
	} else {
		in.history[in.histPos] = ch
		in.histPos = (in.histPos + 1) % len(in.history)
	}
	for s := range in.subs {
		select {
		case s.ch <- ch:
		default:
			s.dropped.Store(true)
			in.unsubscribe(s)
		}
	}
}

// Seq returns the number of the latest change (0 before any).
func (in *Inbox) Seq() uint64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.seq
}

// Since returns the changes after seq, oldest first (empty when seq is
// the latest). It returns false when seq is older than the History kept,
// or newer than any change made (a client of an earlier process): reload.
func (in *Inbox) Since(seq uint64) ([]Change, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.since(seq)
}

func (in *Inbox) since(seq uint64) ([]Change, bool) {
	if seq > in.seq {
		return nil, false
	}
	n := int(in.seq - seq)
	if n == 0 {
		return []Change{}, true
	}
	if n > len(in.history) {
		return nil, false
	}
	out := make([]Change, n)
	// the history holds the latest len(history) changes; the newest is
	// just before histPos once the ring is full, last otherwise.
	newest := len(in.history) - 1
	if len(in.history) == in.opts.History {
		newest = (in.histPos - 1 + len(in.history)) % len(in.history)
	}
	for i := 0; i < n; i++ {
		idx := (newest - (n - 1 - i) + len(in.history)) % len(in.history)
		out[i] = in.history[idx]
	}
	return out, true
}
