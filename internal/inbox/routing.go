package inbox

import (
	"slices"
	"time"
)

// Routing is where this UI sends a request: the team a routes file
// names for it and each reminder and escalation sent since, oldest
// first. It informs; it never answers or closes anything.
type Routing struct {
	Team  string
	Steps []RoutingStep
}

// RoutingStep kinds.
const (
	StepReminded  = "reminded"  // the team was notified again
	StepEscalated = "escalated" // another team was notified as well
)

// RoutingStep is one reminder or escalation: its kind, the team
// notified and when.
type RoutingStep struct {
	Kind string
	Team string
	At   time.Time
}

// Escalated reports whether a step escalated the request.
func (r Routing) Escalated() bool {
	return slices.ContainsFunc(r.Steps, func(s RoutingStep) bool { return s.Kind == StepEscalated })
}

// Has reports whether a step of kind to team was taken.
func (r Routing) Has(kind, team string) bool {
	return slices.ContainsFunc(r.Steps, func(s RoutingStep) bool { return s.Kind == kind && s.Team == team })
}

// SetRouting sets card id's routing; a change is published to the
// inbox's subscribers as any other. False when the card is not in the
// inbox.
func (in *Inbox) SetRouting(id CardID, r Routing) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok {
		return false
	}
	cur := en.card.Routing
	if cur.Team == r.Team && slices.Equal(cur.Steps, r.Steps) {
		return true
	}
	defer in.commit()
	en.card.Routing = Routing{Team: r.Team, Steps: slices.Clone(r.Steps)}
	in.touch(en, true)
	return true
}
