package respond

import (
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

// Observe re-reads the roster (Refresh, coalesced) after an event that may
// change it: session lifecycle (session.*), agent liveness (agent.*), and
// a question from a session the last snapshot did not have (an agent may
// claim a session without a session.started). It is feed.Config.OnEvent;
// it never blocks.
func (c *Client) Observe(e *aep.Event) {
	switch {
	case rosterEvent(e.Type()):
		c.Refresh()
	case e.Type() == "attention.requested":
		if r, _ := c.roster.reach(e.Session()); r == inbox.ReachNotConnected {
			c.Refresh()
		}
	}
}

// rosterEvent reports whether an event of type typ may change the roster.
func rosterEvent(typ string) bool {
	return strings.HasPrefix(typ, "session.") || strings.HasPrefix(typ, "agent.")
}
