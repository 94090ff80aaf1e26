package routing

import (
	"context"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routes"
)

// Sweep looks at every open question with a team: one unanswered (no
// answer on its way) and unclaimed for its team's remind is reminded (the team notified
// again); after its escalate, or with less than a quarter of its time
// left, escalate_to is notified as well. A question no longer open is
// let go. Nothing here answers or closes anything.
func (r *Router) Sweep(ctx context.Context, cards Cards) {
	r.mu.Lock()
	ids := make([]inbox.CardID, 0, len(r.open))
	for id := range r.open {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	now := r.cfg.Now()
	table := r.cfg.Routes.Table()
	for _, id := range ids {
		c, ok := cards.Card(id)
		if !ok {
			r.forget(id)
			continue
		}
		vd := c.Verdict(now, inbox.Viewer{})
		if !vd.Open {
			if vd.Settled {
				r.settled(ctx, c, vd, vd.Routing.Team)
			}
			continue
		}
		if vd.Closed != nil {
			// Nobody here can answer it (answered in the agent's own UI,
			// malformed, over budget): no one is woken for it.
			continue
		}
		if vd.Claim != nil || vd.Locked {
			// Someone is on it (a claim), or an answer is on its way to
			// the agent (held for Undo, queued, sending): neither is a
			// question nobody answers.
			continue
		}
		tm, ok := table.Team(vd.Routing.Team)
		if !ok {
			continue
		}
		arrived := r.arrival(c)
		age := now.Sub(arrived)
		if to, since := r.reminder(vd, tm, arrived); tm.Remind > 0 && now.Sub(since) >= tm.Remind && !vd.Routing.Has(inbox.StepReminded, to.name) {
			r.step(ctx, cards, c, vd.Routing, inbox.StepReminded, tm, to)
			continue // one step a look: the card's routing is read again next time
		}
		if to, ok := table.Team(tm.EscalateTo); ok && !vd.Routing.Has(inbox.StepEscalated, to.Name) &&
			(age >= tm.Escalate || nearDeadline(vd, arrived, now)) {
			r.step(ctx, cards, c, vd.Routing, inbox.StepEscalated, tm, r.teamTarget(to))
		}
	}
}

// nearDeadline reports whether less than a quarter of the time between
// a question's arrival and its deadline is left.
func nearDeadline(vd inbox.Verdict, arrived, now time.Time) bool {
	if vd.Deadline.IsZero() || !vd.Deadline.After(arrived) {
		return false
	}
	total, left := vd.Deadline.Sub(arrived), vd.Deadline.Sub(now)
	return left > 0 && left < total/4
}

func (r *Router) forget(id inbox.CardID) {
	r.mu.Lock()
	delete(r.open, id)
	delete(r.asked, id)
	r.mu.Unlock()
	r.forgetSent(id)
}

// step takes step kind of card c (from team from) toward to (a team, or
// the operator it is assigned to): it is added to the card (every
// replica adds it, so every page shows it), and the one replica that
// claims it in the journal notifies to's devices and, for a team, its
// chat channel, and counts it (for the team from, when to is a person).
func (r *Router) step(ctx context.Context, cards Cards, c inbox.Card, rt inbox.Routing, kind string, from routes.Team, to target) {
	won, taken := r.claim(ctx, c.ID, kind, to.name)
	if !taken {
		return
	}
	now := r.cfg.Now()
	rt.Steps = append(rt.Steps, inbox.RoutingStep{Kind: kind, Team: to.name, At: now})
	cards.SetRouting(c.ID, rt)
	if !won {
		return
	}
	r.cfg.Logger.Info("routing: "+kind, "card", string(c.ID), "team", to.name)
	counted := to.team.Name
	if counted == "" {
		counted = from.Name
	}
	r.cfg.Metrics.stepped(kind, counted)
	if c2, ok := cards.Card(c.ID); ok {
		c = c2
	}
	if r.cfg.Push != nil {
		// The pusher says each delivery on the wire (webpush.Config.Delivered).
		r.cfg.Push.Renotify(ctx, c, to.audience)
	}
	waited := now.Sub(r.arrival(c))
	text := reminderText(c, to.name, waited, r.link(c))
	if kind == inbox.StepEscalated {
		held := from.Name
		if a := c.Verdict(now, inbox.Viewer{}).Assigned; a != nil {
			held = chatEscape(a.To) // who was given it has not answered
		}
		text = escalationText(c, held, to.name, waited, r.link(c))
	}
	r.post(c, to.team, text)
}
