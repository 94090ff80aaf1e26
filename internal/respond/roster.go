package respond

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// roster is the latest snapshot of the relay's live claims, and the state
// of the one outstanding roster request (requests are coalesced).
type roster struct {
	mu      sync.Mutex
	known   bool // a snapshot from the current connection is held
	entries map[string][]RosterEntry
	pending string // id of the request in flight, "" when none
	since   time.Time
	again   bool // Refresh was asked while a request was in flight
	seq     uint64
	// taken is closed, and replaced, each time a snapshot is taken
	// (claimant waits on it).
	taken chan struct{}
}

// next returns the id for a new request, or "" when one is already in
// flight (its reply will trigger another). A request unanswered for
// patience is given up.
func (r *roster) next(patience time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending != "" && time.Since(r.since) < patience {
		r.again = true
		return ""
	}
	r.since = time.Now()
	r.seq++
	r.pending = "roster-" + strconv.FormatUint(r.seq, 10)
	return r.pending
}

// set records the reply to request id (a reply to any other id is stale
// and dropped); it reports whether it was taken and whether another
// request is due.
func (r *roster) set(id string, entries []RosterEntry) (taken, again bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == "" || id != r.pending {
		return false, false
	}
	r.pending = ""
	r.known = true
	r.entries = make(map[string][]RosterEntry, len(entries))
	for _, e := range entries {
		r.entries[e.Session] = append(r.entries[e.Session], e)
	}
	if r.taken != nil {
		close(r.taken)
		r.taken = nil
	}
	again = r.again
	r.again = false
	return true, again
}

// refused handles an error frame answering the request id; it reports
// whether id was the roster request.
func (r *roster) refused(id string) bool {
	r.mu.Lock()
	if id == "" || id != r.pending {
		r.mu.Unlock()
		return false
	}
	r.pending, r.again, r.known, r.entries = "", false, false, nil
	r.mu.Unlock()
	return true
}

// reset forgets the snapshot (the connection ended or was replaced).
func (r *roster) reset() {
	r.mu.Lock()
	r.pending, r.again, r.known, r.entries = "", false, false, nil
	r.mu.Unlock()
}

func (r *roster) reach(session string) (inbox.Reach, *ControlDecl) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.known {
		return inbox.ReachUnknown, nil
	}
	es := r.entries[session]
	switch {
	case len(es) == 0:
		return inbox.ReachNotConnected, nil
	case len(es) > 1:
		return inbox.ReachAmbiguous, nil
	case !es[0].Control.accepts(typeRespond):
		return inbox.ReachNoControl, es[0].Control
	}
	return inbox.ReachConnected, es[0].Control
}

// claimant returns the instance of the one live claimant of session,
// and a channel closed when the next snapshot is taken.
func (r *roster) claimant(session string) (string, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken == nil {
		r.taken = make(chan struct{})
	}
	if es := r.entries[session]; r.known && len(es) == 1 {
		return es[0].Instance, true, r.taken
	}
	return "", false, r.taken
}

// Claimant returns the instance the relay's roster names for the one
// live connection claiming session (its hello's instance), "" when it
// names none or more than one. A session the snapshot held does not
// name yet (an agent that just opened it) is asked of the relay again,
// waiting at most wait (or until ctx ends) for the new snapshot: a rule
// knowing its agent's connection answers only a request whose
// connection is named.
func (c *Client) Claimant(ctx context.Context, session string, wait time.Duration) string {
	inst, ok, taken := c.roster.claimant(session)
	if ok || wait <= 0 {
		return inst
	}
	c.Refresh()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-taken:
			// A reply asked before the session was claimed may not name
			// it; Refresh asked again meanwhile, so wait for that one.
			if inst, ok, taken = c.roster.claimant(session); ok {
				return inst
			}
		case <-t.C:
			return ""
		case <-ctx.Done():
			return ""
		}
	}
}

// InstanceLive reports whether the latest roster snapshot names a live
// connection whose hello declared instance, on any session; false while
// no snapshot is held.
func (c *Client) InstanceLive(instance string) bool {
	c.roster.mu.Lock()
	defer c.roster.mu.Unlock()
	if !c.roster.known || instance == "" {
		return false
	}
	for _, es := range c.roster.entries {
		for _, e := range es {
			if e.Instance == instance {
				return true
			}
		}
	}
	return false
}

// Reach reports what the relay's roster says about session. It is
// inbox.ReachUnknown while disconnected, when the relay does not advertise the
// roster frame, or before its first reply.
func (c *Client) Reach(session string) inbox.Reach {
	r, _ := c.roster.reach(session)
	return r
}

// AckWindow is how long the client waits for session's ack per
// transmission: Config.AckWindow when set, else the claimant's declared
// control.ack_window_ms, else DefaultAckWindow.
func (c *Client) AckWindow(session string) time.Duration {
	if c.cfg.AckWindow > 0 {
		return c.cfg.AckWindow
	}
	if _, d := c.roster.reach(session); d != nil && d.AckWindowMS != nil && *d.AckWindowMS > 0 {
		return time.Duration(*d.AckWindowMS) * time.Millisecond
	}
	return DefaultAckWindow
}

// Roster returns a copy of the latest snapshot's entries and whether one is
// held.
func (c *Client) Roster() ([]RosterEntry, bool) {
	c.roster.mu.Lock()
	defer c.roster.mu.Unlock()
	if !c.roster.known {
		return nil, false
	}
	out := []RosterEntry{}
	for _, es := range c.roster.entries {
		out = append(out, es...)
	}
	slices.SortStableFunc(out, func(a, b RosterEntry) int { return strings.Compare(a.Session, b.Session) })
	return out, true
}

// Observe keeps the roster current from the feed's events: it is
// feed.Config.OnEvent and never blocks. Claims belong to connections
// (AEP-0003 §4.1: a connection claims the sessions it emits sequenced
// events on, until it closes), so most events change nothing, and the
// roster is re-read (Refresh, coalesced over a burst: RosterCoalesce) only
// for an event that may add or drop a claim:
//
//   - session.started: a connection claims a session (maybe a second
//     claimant of a known one: ambiguous);
//   - agent.* (liveness): an agent starting, stopping or dying may open or
//     close its connection;
//   - any other session.* event or a question from a session the snapshot
//     does not list: an agent may claim a session without a
//     session.started.
//
// session.ended and the rest of a listed session's events are not asked
// about: an ending does not end the connection's claim, and each reply
// lists every session, so re-reading it per ended session made the answer
// path decode the whole fleet per answer. A claim that lapses without a
// word is found by the no-route refusal (which re-reads it), the ack
// window's silence, and RosterInterval.
func (c *Client) Observe(e *aep.Event) {
	c.forgetOwed(e)
	typ := e.Type()
	switch {
	case rosterEvent(typ):
		c.Refresh()
	case typ == "session.ended":
	case strings.HasPrefix(typ, "session.") || typ == "attention.requested":
		if r, _ := c.roster.reach(e.Session()); r == inbox.ReachNotConnected {
			c.Refresh()
		}
	}
}

// Redelivered is feed.Config.OnRedelivery and never blocks: an event the
// feed already had came again. After a relay restart that is how an agent
// reclaims its session (it re-sends its pending requests and its last
// event on the new connection), and the relay may list it only after this
// client read its first roster there: a session held as not connected is
// re-read (coalesced like Observe's), or its cards would say "not
// connected" until RosterInterval.
func (c *Client) Redelivered(e *aep.Event) {
	if e.Session() == "" {
		return
	}
	if r, _ := c.roster.reach(e.Session()); r == inbox.ReachNotConnected {
		c.Refresh()
	}
}

// rosterEvent reports whether an event of type typ may change the roster
// whatever its session: a session starting, or agent liveness.
func rosterEvent(typ string) bool {
	return typ == "session.started" || strings.HasPrefix(typ, "agent.")
}
