package agent

import (
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
)

// timeLayout is RFC 3339 with milliseconds, as in the golden corpus.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// out is one event to emit in a session.
type out struct {
	typ      string
	subject  string
	run      string
	cause    string
	severity string      // "" = info (omitted)
	capture  aep.Capture // 0 (none) is never emitted: the zero value means the session's capture
	data     any
}

// emitLocked builds the next sequenced event of s and queues it. It
// returns nil only if the event cannot be encoded (a bug: logged).
func (a *Agent) emitLocked(s *session, now time.Time, o out) *aep.Event {
	c := o.capture
	if c == aep.CaptureNone {
		c = s.capture
	}
	env := aep.Envelope{
		ID:       ulid.Make().String(),
		Type:     o.typ,
		Subject:  o.subject,
		Time:     now.UTC().Format(timeLayout),
		Source:   s.source,
		Agent:    a.cfg.Agent,
		Session:  s.id,
		Run:      o.run,
		Seq:      aep.Int64(s.seq),
		Epoch:    aep.Int64(0),
		Cause:    o.cause,
		Severity: o.severity,
		Capture:  c.String(),
		Data:     o.data,
	}
	ev, err := aep.Build(env)
	if err != nil {
		a.log.Error("demo agent could not encode an event", "type", o.typ, "session", s.id, "err", err)
		return nil
	}
	s.seq++
	a.enqueueLocked(ev)
	return ev
}

// enqueueLocked appends ev to the queue and wakes the writer. A full queue
// drops its oldest event: a relay away that long has lost the session's
// continuity anyway, and the re-claim after the next hello re-sends every
// pending request.
func (a *Agent) enqueueLocked(ev *aep.Event) {
	if len(a.queue) >= a.cfg.MaxQueue {
		dropped := a.queue[0]
		a.queue = a.queue[1:]
		a.log.Warn("demo agent queue full: dropped the oldest event", "type", dropped.Type(), "session", dropped.Session(), "id", dropped.ID())
	}
	a.queue = append(a.queue, ev)
	select {
	case a.wake <- struct{}{}:
	default:
	}
	a.changedLocked()
}

// peek returns the queue's head, nil when empty.
func (a *Agent) peek() *aep.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.queue) == 0 {
		return nil
	}
	return a.queue[0]
}

// delivered records that ev reached the relay: it leaves the queue (if
// still its head) and becomes what the next connection re-sends to claim
// its session.
func (a *Agent) delivered(ev *aep.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.queue) > 0 && a.queue[0] == ev {
		a.queue[0] = nil
		a.queue = a.queue[1:]
	}
	a.markDeliveredLocked(ev)
	a.changedLocked()
}

func (a *Agent) markDeliveredLocked(ev *aep.Event) {
	s := a.byID[ev.Session()]
	if s == nil || ev.Source() != s.source {
		return
	}
	if ev.Type() == "attention.requested" {
		if q := s.request(ev.ID()); q != nil {
			q.delivered = true
		}
	}
	if p, _ := ev.Position(); s.lastDelivered == nil || !p.Less(mustPosition(s.lastDelivered)) {
		s.lastDelivered = ev
	}
}

func mustPosition(ev *aep.Event) aep.Position {
	p, _ := ev.Position()
	return p
}

// reclaimLocked lists what a new connection sends first, for every open
// session that already reached a relay: its delivered pending requests and
// its last delivered event, in seq order, byte-identical. The relay dedupes
// them; they make this connection the session's owner again, so commands
// route here, and a restarted relay learns the pending requests again.
func (a *Agent) reclaimLocked() []*aep.Event {
	var evs []*aep.Event
	for _, s := range a.sessions {
		if s.ended || s.lastDelivered == nil {
			continue
		}
		last := s.lastDelivered
		lastIsRequest := false
		for _, q := range s.pending("") {
			if q.delivered {
				evs = append(evs, q.ev)
				lastIsRequest = lastIsRequest || q.ev == last
			}
		}
		if !lastIsRequest {
			evs = append(evs, last)
		}
	}
	return evs
}
