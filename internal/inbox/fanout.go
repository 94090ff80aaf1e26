package inbox

import (
	"sync"
	"sync/atomic"
)

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
	for f := range in.followers {
		in.offer(f, ch)
	}
}

// Follower receives every change after it was made, in order, like a
// Subscription, but its changes wait in a list that exists only while
// some wait, and one signal (Ready) stands for all that arrived since the
// last Take. A Subscription's channel holds its whole queue for its life
// (256 changes of 40 bytes, 10 KiB, for each of thousands of push
// streams), and wakes its reader once per change. More than max changes
// waiting drop the follower, as a full Subscription is dropped.
type Follower struct {
	in      *Inbox
	max     int
	ready   chan struct{} // one slot: changes wait, or the follower ended
	closed  bool          // guarded by in.mu
	dropped atomic.Bool

	mu      sync.Mutex
	pending []Change
	ended   bool
}

// Follow returns a follower of every change from now on, dropped past max
// waiting changes (DefaultSubscriptionBuffer for max <= 0).
func (in *Inbox) Follow(max int) *Follower {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.follow(max)
}

// FollowSince atomically returns the changes after seq (as Since does)
// and a follower of every change after those; on false (too far behind,
// or ahead) the follower is still made: reload, then follow.
func (in *Inbox) FollowSince(seq uint64, max int) (*Follower, []Change, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	changes, ok := in.since(seq)
	return in.follow(max), changes, ok
}

func (in *Inbox) follow(max int) *Follower {
	if max <= 0 {
		max = DefaultSubscriptionBuffer
	}
	f := &Follower{in: in, max: max, ready: make(chan struct{}, 1)}
	in.followers[f] = struct{}{}
	return f
}

// Ready is signalled when changes wait, and when the follower ends
// (closed or dropped); Take then says which.
func (f *Follower) Ready() <-chan struct{} { return f.ready }

// Take appends the waiting changes to dst, oldest first, and returns it;
// open is false once the follower ended (closed or dropped: what waited
// is not returned, a dropped browser catches up as it reconnects).
func (f *Follower) Take(dst []Change) (changes []Change, open bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return dst, false
	}
	dst = append(dst, f.pending...)
	f.pending = nil // held only while changes wait
	return dst, true
}

// Wake signals Ready with no change, for a reader that waits on Ready
// alone and has other things to look at too (its timers, its context):
// Take then returns what waits, perhaps nothing.
func (f *Follower) Wake() { f.signal() }

// Dropped reports whether the inbox dropped the follower because more than
// its max changes waited.
func (f *Follower) Dropped() bool { return f.dropped.Load() }

// Close ends the follower. It is safe to call more than once and after a
// drop.
func (f *Follower) Close() {
	f.in.mu.Lock()
	defer f.in.mu.Unlock()
	f.in.unfollow(f)
}

// unfollow ends f (in.mu held).
func (in *Inbox) unfollow(f *Follower) {
	if f.closed {
		return
	}
	f.closed = true
	delete(in.followers, f)
	f.mu.Lock()
	f.ended, f.pending = true, nil
	f.mu.Unlock()
	f.signal()
}

// offer queues ch for f, or drops f past its max (in.mu held).
func (in *Inbox) offer(f *Follower, ch Change) {
	f.mu.Lock()
	full := len(f.pending) >= f.max
	if !full {
		f.pending = append(f.pending, ch)
	}
	f.mu.Unlock()
	if full {
		f.dropped.Store(true)
		in.unfollow(f)
		return
	}
	f.signal()
}

func (f *Follower) signal() {
	select {
	case f.ready <- struct{}{}:
	default: // already signalled
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
