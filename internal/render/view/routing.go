package view

import (
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// RoutingView is where a card is routed, as the card says it: its team
// (a small label) and the reminders and escalations sent.
type RoutingView struct {
	// Team is the team the routes file sends the question to; Title the
	// label's title in words.
	Team, Title string
	// Steps says what was sent since, oldest first: "reminded oncall
	// 09:12, escalated to leads 09:22"; "" when nothing was.
	Steps string
	// Escalated is true once a step escalated it (data-escalated).
	Escalated bool
}

// routingOf is card c's routing view; nil when it is routed to no team.
func routingOf(r inbox.Routing, now time.Time) *RoutingView {
	if r.Team == "" {
		return nil
	}
	v := &RoutingView{Team: r.Team, Title: "Routed to team " + r.Team + " by this UI's routes file", Escalated: r.Escalated()}
	steps := make([]string, 0, len(r.Steps))
	for _, s := range r.Steps {
		switch s.Kind {
		case inbox.StepReminded:
			steps = append(steps, "reminded "+s.Team+" "+deadlineTime(s.At, now))
		case inbox.StepEscalated:
			steps = append(steps, "escalated to "+s.Team+" "+deadlineTime(s.At, now))
		}
	}
	if v.Steps = strings.Join(steps, ", "); v.Steps != "" {
		v.Steps = strings.ToUpper(v.Steps[:1]) + v.Steps[1:]
	}
	return v
}
