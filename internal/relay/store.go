package relay

import (
	"container/list"
	"slices"
	"sort"

	"github.com/aepforms/aepforms/internal/aep"
)

// entry is one buffered event with its sort key. Sequenced events sort by
// their own (epoch, seq); seq-less ones (commands, attention.routed) take
// the highest position the session had when they arrived, so they keep
// arrival order among the sequenced ones.
type entry struct {
	ev  *aep.Event
	pos aep.Position
}

// ring is one bounded, (epoch, seq)-ordered replay buffer with (source, id)
// admission dedupe.
type ring struct {
	name    string
	entries []entry // live entries are entries[head:]
	head    int
	ids     map[aep.Key]struct{}
	high    aep.Position // highest sort position ever admitted
	hasHigh bool
	// evictedHigh is the highest position trimmed away; a resume from below
	// it missed something (replay-exhausted).
	evictedHigh aep.Position
	evicted     bool
	lrw         *list.Element // in store.lrw, nil for the agent ring
	bytes       int64         // what the live entries count (entryBytes)
}

// entryOverhead is what one buffered event counts besides its bytes: its
// entry, its dedupe key and the map slot.
const entryOverhead = 256

// entryBytes is what a buffered event counts against Config.BufferBytes.
func entryBytes(ev *aep.Event) int64 { return int64(len(ev.Raw())) + entryOverhead }

func newRing(name string) *ring {
	return &ring{name: name, ids: make(map[aep.Key]struct{})}
}

func (b *ring) live() []entry { return b.entries[b.head:] }

func (b *ring) len() int { return len(b.entries) - b.head }

// add admits ev unless its (source, id) is held; it reports whether ev was
// stored.
func (b *ring) add(ev *aep.Event, depth int) bool {
	k := ev.Key()
	if _, dup := b.ids[k]; dup {
		return false
	}
	pos, sequenced := ev.Position()
	if !sequenced {
		pos = b.high
	}
	if !b.hasHigh || b.high.Less(pos) {
		b.high, b.hasHigh = pos, true
	}
	b.ids[k] = struct{}{}
	b.bytes += entryBytes(ev)
	live := b.live()
	if n := len(live); n == 0 || !pos.Less(live[n-1].pos) {
		b.entries = append(b.entries, entry{ev: ev, pos: pos})
	} else {
		i := b.upper(pos)
		b.entries = slices.Insert(b.entries, b.head+i, entry{ev: ev, pos: pos})
	}
	for b.len() > depth {
		b.dropOldest()
	}
	return true
}

// dropOldest trims the ring's oldest entry: a resume from before it
// is told replay-exhausted.
func (b *ring) dropOldest() {
	old := b.entries[b.head]
	b.entries[b.head] = entry{}
	b.head++
	delete(b.ids, old.ev.Key())
	b.bytes -= entryBytes(old.ev)
	if !b.evicted || b.evictedHigh.Less(old.pos) {
		b.evictedHigh, b.evicted = old.pos, true
	}
	if b.head > 64 && b.head > len(b.entries)/2 {
		b.entries = append(b.entries[:0:0], b.entries[b.head:]...)
		b.head = 0
	}
}

// upper returns the index in live() of the first entry after p.
func (b *ring) upper(p aep.Position) int {
	live := b.live()
	return sort.Search(len(live), func(i int) bool { return p.Less(live[i].pos) })
}

// after returns the entries strictly after p, whether the resume from p
// missed evicted events, and the earliest position held.
func (b *ring) after(p aep.Position) (out []entry, exhausted bool, earliest aep.Position) {
	live := b.live()
	if len(live) > 0 {
		earliest = live[0].pos
		for _, e := range live {
			if q, ok := e.ev.Position(); ok {
				earliest = q
				break
			}
		}
	}
	if b.evicted && p.Less(b.evictedHigh) {
		return live, true, earliest
	}
	return live[b.upper(p):], false, earliest
}

// store holds the per-session rings, at most max of them, evicting the
// least recently written, plus one ring for agent-scoped events. What
// they hold together is bounded by maxBytes: past it, the ring holding
// the most bytes loses its oldest events (so a session flooded with big
// events pays for them, not a quiet one).
type store struct {
	depth, max int
	maxBytes   int64
	bytes      int64 // of every ring
	sessions   map[string]*ring
	lrw        *list.List // front = most recently written
	agent      *ring
	// tombs remembers the highest position of up to max evicted sessions,
	// oldest first, so a session that comes back still reports
	// replay-exhausted to a resume from before its eviction.
	tombs     map[string]aep.Position
	tombOrder []string
}

func newStore(depth, max int, maxBytes int64) *store {
	return &store{depth: depth, max: max, maxBytes: maxBytes, sessions: make(map[string]*ring), lrw: list.New(), agent: newRing(""),
		tombs: make(map[string]aep.Position)}
}

// bury remembers an evicted session's highest position.
func (s *store) bury(b *ring) {
	if !b.hasHigh {
		return
	}
	if _, ok := s.tombs[b.name]; !ok {
		s.tombOrder = append(s.tombOrder, b.name)
	}
	s.tombs[b.name] = b.high
	for len(s.tombOrder) > s.max {
		delete(s.tombs, s.tombOrder[0])
		s.tombOrder = s.tombOrder[1:]
	}
}

// add buffers ev in its session's ring (or the agent ring) and reports
// whether it was admitted (false: a (source, id) already held).
func (s *store) add(ev *aep.Event) bool {
	if !ev.SessionScoped() {
		return s.admit(s.agent, ev)
	}
	name := ev.Session()
	b := s.sessions[name]
	if b == nil {
		for len(s.sessions) >= s.max {
			oldest := s.lrw.Back()
			victim := oldest.Value.(*ring)
			s.lrw.Remove(oldest)
			delete(s.sessions, victim.name)
			s.bytes -= victim.bytes
			s.bury(victim)
		}
		b = newRing(name)
		if p, ok := s.tombs[name]; ok {
			b.evicted, b.evictedHigh = true, p
			b.high, b.hasHigh = p, true
		}
		b.lrw = s.lrw.PushFront(b)
		s.sessions[name] = b
	}
	if !s.admit(b, ev) {
		return false
	}
	s.lrw.MoveToFront(b.lrw)
	return true
}

// admit adds ev to ring b and trims the rings back within maxBytes.
func (s *store) admit(b *ring, ev *aep.Event) bool {
	before := b.bytes
	if !b.add(ev, s.depth) {
		return false
	}
	s.bytes += b.bytes - before
	for s.bytes > s.maxBytes {
		heavy := s.agent
		for _, r := range s.sessions {
			if r.bytes > heavy.bytes {
				heavy = r
			}
		}
		if heavy.len() == 0 {
			break
		}
		before := heavy.bytes
		heavy.dropOldest()
		s.bytes -= before - heavy.bytes
	}
	return true
}

// holds reports whether ev's (source, id) is held.
func (s *store) holds(ev *aep.Event) bool {
	b := s.agent
	if ev.SessionScoped() {
		if b = s.sessions[ev.Session()]; b == nil {
			return false
		}
	}
	_, ok := b.ids[ev.Key()]
	return ok
}

// unacked lists the commands session holds that no held ack
// (control.accepted or control.rejected, whose cause is the command's id)
// answers and no later command replaces, oldest first. A later command of
// the same type and subject replaces an earlier one: the UI sends a
// second answer to a request only when the operator answers differently,
// and the agent is owed that answer, not the one it replaced.
func (s *store) unacked(session string) []*aep.Event {
	b := s.sessions[session]
	if b == nil {
		return nil
	}
	type target struct{ typ, subject string }
	acked := make(map[string]bool)
	latest := make(map[target]string) // command id last sent to each target
	for _, e := range b.live() {
		switch t := e.ev.Type(); {
		case t == "control.accepted" || t == "control.rejected":
			acked[e.ev.Cause()] = true
		case aep.IsCommand(t) && e.ev.Subject() != "":
			latest[target{t, e.ev.Subject()}] = e.ev.ID()
		}
	}
	var out []*aep.Event
	for _, e := range b.live() {
		if !aep.IsCommand(e.ev.Type()) || acked[e.ev.ID()] {
			continue
		}
		if id, ok := latest[target{e.ev.Type(), e.ev.Subject()}]; ok && id != e.ev.ID() {
			continue
		}
		out = append(out, e.ev)
	}
	return out
}

// distrust marks every held session as having lost events before the
// earliest it holds, so a resume from before it is told replay-exhausted:
// the relay read the sessions from a JetStream stream that had already
// let events go, and cannot say which sessions they were of.
func (s *store) distrust() {
	for _, b := range s.sessions {
		live := b.live()
		if len(live) == 0 {
			continue
		}
		if p := live[0].pos; !b.evicted || b.evictedHigh.Less(p) {
			b.evictedHigh, b.evicted = p, true
		}
	}
}

// session returns the ring of a held session, nil when none.
func (s *store) session(name string) *ring { return s.sessions[name] }

// all lists the held rings, least recently written first, the agent ring
// first of all when it holds anything.
func (s *store) all() []*ring {
	out := make([]*ring, 0, len(s.sessions)+1)
	if s.agent.len() > 0 {
		out = append(out, s.agent)
	}
	for e := s.lrw.Back(); e != nil; e = e.Prev() {
		out = append(out, e.Value.(*ring))
	}
	return out
}
