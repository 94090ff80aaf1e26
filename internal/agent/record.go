package agent

import (
	"bytes"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Outcome is the agent's decision on a command.
type Outcome string

// Outcomes.
const (
	// OutcomeAccepted: control.accepted was emitted (and the outcome events).
	OutcomeAccepted Outcome = "accepted"
	// OutcomeRejected: control.rejected was emitted; nothing else changed.
	OutcomeRejected Outcome = "rejected"
	// OutcomeIgnored: NeverAck mode; no ack, nothing executed.
	OutcomeIgnored Outcome = "ignored"
	// OutcomeDropped: the command names no session of this agent, so
	// there is no session to ack in (a relay does not route such commands).
	OutcomeDropped Outcome = "dropped"
)

// Decision is the one decision the agent made on a command.
type Decision struct {
	Outcome Outcome
	Reason  string // control.rejected reason; "" otherwise
	// Detail is the rejection's detail as emitted ("" when the ack carries
	// none), or, for ignored and dropped commands, why.
	Detail string
}

// Received is the record of one distinct command, keyed by (Source, ID).
type Received struct {
	Source, ID, Type, Session, Subject string
	// Raw is the first transmission's bytes.
	Raw []byte
	// Count is how many times (Source, ID) arrived.
	Count int
	// Differing counts the redeliveries whose bytes differed from Raw (a
	// sender that reused an id for another command).
	Differing int
	Decision  Decision
	// Ack is the ack event's bytes, re-emitted unchanged on every
	// redelivery; nil when the agent did not ack.
	Ack         []byte
	First, Last time.Time

	ack *aep.Event
}

// Record returns every command the agent has received (up to MaxCommands
// distinct ones, oldest forgotten first), in arrival order.
func (a *Agent) Record() []Received {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Received, 0, len(a.order))
	for _, k := range a.order {
		out = append(out, *a.commands[k])
	}
	return out
}

// redeliveredLocked returns the record of key, if any, counting this
// transmission.
func (a *Agent) redeliveredLocked(key aep.Key, raw []byte, now time.Time) (*Received, bool) {
	r, ok := a.commands[key]
	if !ok {
		return nil, false
	}
	r.Count++
	r.Last = now
	if !bytes.Equal(raw, r.Raw) {
		r.Differing++
	}
	return r, true
}

// recordLocked stores a new command's record, forgetting the oldest beyond
// MaxCommands.
func (a *Agent) recordLocked(ev *aep.Event, raw []byte, now time.Time) *Received {
	r := &Received{
		Source: ev.Source(), ID: ev.ID(), Type: ev.Type(), Session: ev.Session(), Subject: ev.Subject(),
		Raw: bytes.Clone(raw), Count: 1, First: now, Last: now,
	}
	key := ev.Key()
	a.commands[key] = r
	a.order = append(a.order, key)
	if len(a.order) > a.cfg.MaxCommands {
		delete(a.commands, a.order[0])
		a.order[0] = aep.Key{}
		a.order = a.order[1:]
	}
	return r
}
