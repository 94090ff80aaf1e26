package inbox

import (
	"cmp"
	"slices"
	"strings"
)

// The inbox's bounds and who pays for them. Three bounds hold what the
// inbox keeps: MaxSettled (settled cards, oldest settled first),
// MaxPending (open cards) and MaxBytes (raw request bytes of every card).
// When the last two bind, the rule is the fair share:
//
//   - the agent holding the most (open cards for the count, bytes for the
//     bytes) loses its own oldest card, when it holds more than the
//     newcomer's agent does, or is the newcomer's agent: an agent that
//     floods the inbox pays for its flood, and a quiet agent's question
//     survives it;
//   - otherwise, when no agent holds more than the newcomer's (a flood
//     under a new name, source or session for every request), the
//     newcomer is refused: a request that was pending before the flood
//     stays, and the refusal is counted as a drop of the newcomer's agent.
//
// Under the byte bound, the heaviest agent's settled cards go first (an
// outcome already seen is worth less than a question still waiting). A
// card whose answer is in flight is never evicted by any of them: the
// operator's answer, and its outcome, must find their card.

// maxDroppedAgents bounds the agents whose drops are counted by name
// (agent names are the emitters' to choose); the rest are counted
// together as Status.DroppedOthers.
const maxDroppedAgents = 1024

// maxDroppedName bounds the bytes of a name the drop counts keep (names
// are the agents' to choose: 1024 names of 1 MiB would be a gigabyte
// kept for a counter); the page shows even less of one.
const maxDroppedName = 256

// agentLoad is what one agent holds in the inbox: its cards in arrival
// order (a list through entry.older/newer) and their count and bytes.
type agentLoad struct {
	name           string
	cards          int
	settled        int
	bytes          int64
	oldest, newest *entry
}

func (l *agentLoad) open() int { return l.cards - l.settled }

// agentOf is the name a card's share is counted under: its agent
// attribute, else its source.
func agentOf(c *Card) string {
	if c.Agent != "" {
		return c.Agent
	}
	return c.Key.Source
}

// protected reports whether a card must not be evicted: the operator's
// answer to it is on its way. That is an answer queued, or sent and not yet acked
// (journaled, its ack still to find the card), or accepted on a card
// still open (waiting for its outcome). An accepted answer on a settled
// card has its outcome: protecting it would keep every card the operator
// answered for good.
func (en *entry) protected() bool {
	s := en.card.Submission
	switch {
	case en.reserved != nil: // being journaled: it becomes an answer in flight
		return true
	case s == nil:
		return false
	case s.State == SubmissionSending, s.State == SubmissionQueued:
		return true // a queued answer is sent when the relay is back: its card must be there
	case s.State == SubmissionAccepted:
		return en.settledOrder == 0
	}
	return false
}

// account adds a new card of size bytes to its agent's share.
func (in *Inbox) account(en *entry, size int64) {
	name := agentOf(&en.card)
	l := in.loads[name]
	if l == nil {
		l = &agentLoad{name: name}
		in.loads[name] = l
	}
	en.load, en.size = l, size
	l.cards++
	l.bytes += size
	in.bytes += size
	en.older = l.newest
	if l.newest != nil {
		l.newest.newer = en
	} else {
		l.oldest = en
	}
	l.newest = en
}

// unaccount takes a card leaving the inbox out of its agent's share.
func (in *Inbox) unaccount(en *entry) {
	l := en.load
	if l == nil {
		return
	}
	l.cards--
	l.bytes -= en.size
	in.bytes -= en.size
	if en.settledOrder != 0 {
		l.settled--
	}
	if en.older != nil {
		en.older.newer = en.newer
	} else {
		l.oldest = en.newer
	}
	if en.newer != nil {
		en.newer.older = en.older
	} else {
		l.newest = en.older
	}
	en.older, en.newer, en.load = nil, nil, nil
	if l.cards == 0 {
		delete(in.loads, l.name)
	}
}

// settledChanged keeps the agent's settled count in step when a card
// settles (or reopens).
func (en *entry) settledChanged(settled bool) {
	if en.load == nil {
		return
	}
	if settled {
		en.load.settled++
	} else {
		en.load.settled--
	}
}

// enforceBounds evicts until the inbox is within its bounds, or only
// protected cards are left to evict. newest is the card that arrived in
// this transaction (nil when none). The caller holds the lock.
func (in *Inbox) enforceBounds(newest *entry) {
	for len(in.settled) > in.opts.MaxSettled {
		i := slices.IndexFunc(in.settled, func(en *entry) bool { return !en.protected() })
		if i < 0 {
			break
		}
		in.evict(in.settled[i])
	}
	dropped := false
	for len(in.byID)-len(in.settled) > in.opts.MaxPending {
		v := in.victim(func(l *agentLoad) int64 { return int64(l.open()) }, false, in.newcomer(newest))
		if v == nil {
			break
		}
		dropped = in.evict(v) || dropped
	}
	for in.bytes > in.opts.MaxBytes {
		v := in.victim(func(l *agentLoad) int64 { return l.bytes }, true, in.newcomer(newest))
		if v == nil {
			break
		}
		dropped = in.evict(v) || dropped
	}
	if dropped {
		in.publish(Change{Kind: ChangeStatus})
	}
}

// newcomer is en when it is still in the inbox, open and unprotected: a
// card the fair share may refuse.
func (in *Inbox) newcomer(en *entry) *entry {
	if en == nil || en.load == nil || in.byID[en.card.ID] != en || en.settledOrder != 0 || en.protected() {
		return nil
	}
	return en
}

// victim is the card to evict: of the agents in order of weight (most
// first; on a tie, the one holding the older card), the first that has
// an unprotected card gives its oldest one, its oldest settled card first
// when settledFirst. When that agent's open card would go but it holds no
// more than the newcomer's agent (and is not it), the newcomer goes
// instead (the fair share, above). Nil when every card is protected.
func (in *Inbox) victim(weight func(*agentLoad) int64, settledFirst bool, newest *entry) *entry {
	var tried map[*agentLoad]bool
	for {
		var best *agentLoad
		for _, l := range in.loads {
			if tried[l] {
				continue
			}
			if best == nil {
				best = l
				continue
			}
			if c := cmp.Compare(weight(l), weight(best)); c > 0 || (c == 0 && l.oldest.arrival < best.oldest.arrival) {
				best = l
			}
		}
		if best == nil {
			return nil
		}
		if settledFirst && best.settled > 0 {
			if en := best.oldestWhere(func(en *entry) bool { return en.settledOrder != 0 }); en != nil {
				return en
			}
		}
		if best.open() > 0 {
			if newest != nil && best != newest.load && weight(best) <= weight(newest.load) {
				return newest
			}
			if en := best.oldestWhere(func(en *entry) bool { return en.settledOrder == 0 }); en != nil {
				return en
			}
		}
		if tried == nil {
			tried = make(map[*agentLoad]bool)
		}
		tried[best] = true
	}
}

// oldestWhere is the agent's oldest unprotected card that ok accepts.
func (l *agentLoad) oldestWhere(ok func(*entry) bool) *entry {
	for en := l.oldest; en != nil; en = en.newer {
		if ok(en) && !en.protected() {
			return en
		}
	}
	return nil
}

// evict removes a card to keep a bound, publishes its removal, and counts
// it as dropped when it was still open (a question lost, not an outcome);
// it reports whether it was. The caller holds the lock.
func (in *Inbox) evict(en *entry) bool {
	open := en.settledOrder == 0
	if !open {
		if i := slices.Index(in.settled, en); i >= 0 {
			in.settled = slices.Delete(in.settled, i, i+1)
		}
	}
	name := agentOf(&en.card)
	if len(name) > maxDroppedName {
		name = strings.ToValidUTF8(strings.Clone(name[:maxDroppedName]), "") + "…"
	}
	in.remove(en)
	in.publish(Change{Card: en.card.ID, Kind: ChangeRemoved})
	if !open {
		return false
	}
	if _, ok := in.dropped[name]; ok || len(in.dropped) < maxDroppedAgents {
		in.dropped[name]++
	} else {
		in.droppedOthers++
	}
	return true
}

// Dropped is how many open requests of one agent the inbox let go to stay
// within its bounds.
type Dropped struct {
	Agent string // agent-controlled: encode before display
	Count uint64
}

// droppedLocked lists the drops by agent, most first, then by name. The
// caller holds the lock.
func (in *Inbox) droppedLocked() []Dropped {
	if len(in.dropped) == 0 {
		return nil
	}
	out := make([]Dropped, 0, len(in.dropped))
	for a, n := range in.dropped {
		out = append(out, Dropped{Agent: a, Count: n})
	}
	slices.SortFunc(out, func(a, b Dropped) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Agent, b.Agent)
	})
	return out
}
