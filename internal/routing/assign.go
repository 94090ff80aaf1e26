package routing

import (
	"context"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routes"
	"github.com/aepforms/aepforms/internal/store"
)

// assigned tells card c's assignee of its assignment (vd's): a person's
// devices, or a team's members' devices and its chat channel with the
// assigner's words and the card's link (devices with a page in view
// are not pushed: the page shows it). Once per assignment of every
// replica sharing the journal (claimed by keeping it in the question's
// routing history, store.Assigned, which History reads: who assigned it
// to whom, and when); the assigner is not told of their own assignment;
// a question no longer open, or an assignment ended, tells nobody.
func (r *Router) assigned(ctx context.Context, c inbox.Card, vd inbox.Verdict) {
	a := vd.Assigned
	if a == nil || a.To == "" || !vd.Open || vd.Closed != nil {
		// Nothing to answer here (no longer open, or answered in the
		// agent's own UI, malformed, over budget): nobody is sent to it.
		return
	}
	if won, _ := r.claim(ctx, c.ID, store.Assigned, store.AssignedTeam(*a)); !won {
		return
	}
	r.cfg.Logger.Info("routing: assigned", "card", string(c.ID), "to", a.To, "team", a.Team, "by", a.By)
	if r.cfg.Push != nil {
		// The pusher says each delivery on the wire (webpush.Config.Delivered).
		r.cfg.Push.Renotify(ctx, c, notBy(r.assignee(*a), a.By))
	}
	if !a.Team {
		return
	}
	if tm, ok := r.cfg.Routes.Table().Team(a.To); ok {
		r.post(c, tm, assignedText(c, *a, r.link(c)))
	}
}

// assignee is who assignment a names: the operator, or the team's
// members.
func (r *Router) assignee(a inbox.Assignment) func(string) bool {
	if a.Team {
		return r.members(a.To)
	}
	to := a.To
	return func(op string) bool { return strings.EqualFold(op, to) }
}

// notBy is audience without operator by (who made the assignment: they
// know of it).
func notBy(audience func(string) bool, by string) func(string) bool {
	return func(op string) bool { return audience(op) && (by == "" || !strings.EqualFold(op, by)) }
}

// reminder is who a reminder of a question of team tm goes to, and the
// time its remind clock runs from: the team from the question's arrival,
// or, when it is assigned, the assignee (a person's devices; a team's
// members and channel) from the assignment. An assignment restarts the
// remind clock: its assignee was just told of the question, and is
// reminded remind after that, once per assignee. Escalation's clock does
// not restart: it runs from the question's arrival whoever holds it.
func (r *Router) reminder(vd inbox.Verdict, tm routes.Team, arrived time.Time) (target, time.Time) {
	a := vd.Assigned
	if a == nil || a.To == "" {
		return r.teamTarget(tm), arrived
	}
	to := target{name: a.To, audience: r.assignee(*a)}
	if a.Team {
		to.team, _ = r.cfg.Routes.Table().Team(a.To)
	}
	if a.At.After(arrived) {
		arrived = a.At
	}
	return to, arrived
}

// target is who a step notifies: by name (a team's, or an assigned
// operator's), their devices (audience) and, for a team, its chat
// channel (team; the zero Team for a person).
type target struct {
	name     string
	team     routes.Team
	audience func(string) bool
}

// teamTarget is team tm as a step's target.
func (r *Router) teamTarget(tm routes.Team) target {
	return target{name: tm.Name, team: tm, audience: r.members(tm.Name)}
}
