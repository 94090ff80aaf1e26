package feed

import (
	"cmp"
	"crypto/sha256"
	"slices"

	"github.com/aepforms/aepforms/internal/aep"
)

// tracker holds what the feed knows per session: the (source, id) of the
// events already applied, for the dedupe, and the last position seen, for
// resuming. Memory is bounded: window ids per session (the oldest
// arrivals forgotten first, as a relay's ring buffer forgets them) and
// maxSessions sessions (the least recently written forgotten first, as a
// relay evicts them). Agent-scoped events share one entry per source.
// Ids are kept as digests (idDigest), so what the window costs does not
// depend on how long the agents make their ids.
// A tracker is owned by one Run goroutine.
type tracker struct {
	window, maxSessions int
	sessions            map[aep.SessionKey]*sessionState
	clock               uint64 // counts writes, for least-recently-written eviction
}

// sessionState is one (source, session).
type sessionState struct {
	seen    map[idDigest]struct{}
	order   []idDigest // ids in arrival order, a ring once len == window
	next    int        // ring slot to overwrite next
	pos     aep.Position
	hasPos  bool
	written uint64

	// awaiting is set on a replay-all reconnect for a session with a
	// position: the first event of the session on the new stream tells
	// whether the relay still held that position (see Client).
	awaiting bool
	awaitPos aep.Position
}

func newTracker(window, maxSessions int) *tracker {
	return &tracker{window: window, maxSessions: maxSessions, sessions: make(map[aep.SessionKey]*sessionState)}
}

// session returns the state of k, creating it (and evicting the least
// recently written session when over the cap).
func (t *tracker) session(k aep.SessionKey) *sessionState {
	t.clock++
	s, ok := t.sessions[k]
	if !ok {
		if len(t.sessions) >= t.maxSessions {
			t.evict()
		}
		s = &sessionState{seen: make(map[idDigest]struct{})}
		t.sessions[k] = s
	}
	s.written = t.clock
	return s
}

func (t *tracker) evict() {
	var oldest aep.SessionKey
	first := true
	var at uint64
	for k, s := range t.sessions {
		if first || s.written < at {
			oldest, at, first = k, s.written, false
		}
	}
	delete(t.sessions, oldest)
}

// idDigest is an event id as the dedupe keeps it: the first 128 bits of
// its SHA-256.
type idDigest [16]byte

func digestOf(id string) idDigest {
	sum := sha256.Sum256([]byte(id))
	return idDigest(sum[:16])
}

// add records id and reports whether it is new.
func (s *sessionState) add(eventID string, window int) bool {
	id := digestOf(eventID)
	if _, dup := s.seen[id]; dup {
		return false
	}
	s.seen[id] = struct{}{}
	if len(s.order) < window {
		s.order = append(s.order, id)
		return true
	}
	delete(s.seen, s.order[s.next])
	s.order[s.next] = id
	s.next = (s.next + 1) % window
	return true
}

// advance raises the session's position to p.
func (s *sessionState) advance(p aep.Position) {
	if !s.hasPos || s.pos.Less(p) {
		s.pos, s.hasPos = p, true
	}
}

// awaitReplay marks every session with a position as awaiting its first
// event on a new replay-all stream.
func (t *tracker) awaitReplay() {
	for _, s := range t.sessions {
		s.awaiting, s.awaitPos = s.hasPos, s.pos
	}
}

// stopAwaiting clears the mark of every source's session named name (the
// relay reported it itself).
func (t *tracker) stopAwaiting(name string) {
	for k, s := range t.sessions {
		if k.Session == name {
			s.awaiting = false
		}
	}
}

// fromPosition is one element of the from=[...] query parameter.
type fromPosition struct {
	Session string `json:"session"`
	Epoch   int64  `json:"epoch"`
	Seq     int64  `json:"seq"`
}

// positions lists the resume position of every session with one, sorted by
// session. The relay names sessions without their source, so when two
// sources share a session name the earlier position is sent (more replay,
// which the dedupe absorbs, rather than a gap).
func (t *tracker) positions() []fromPosition {
	byName := make(map[string]aep.Position)
	for k, s := range t.sessions {
		if !s.hasPos || k.Session == "" {
			continue
		}
		if p, ok := byName[k.Session]; !ok || s.pos.Less(p) {
			byName[k.Session] = s.pos
		}
	}
	out := make([]fromPosition, 0, len(byName))
	for name, p := range byName {
		out = append(out, fromPosition{Session: name, Epoch: p.Epoch, Seq: p.Seq})
	}
	slices.SortFunc(out, func(a, b fromPosition) int { return cmp.Compare(a.Session, b.Session) })
	return out
}
