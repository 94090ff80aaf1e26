// Package routing sends each question to its team: it follows the
// inbox, names the team the routes file gives each new question (shown
// on its card), and later reminds and escalates.
package routing

import (
	"context"
	"log/slog"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routes"
)

// Cards is what the router reads and writes of the inbox.
type Cards interface {
	Subscribe(buf int) *inbox.Subscription
	Card(inbox.CardID) (inbox.Card, bool)
	SetRouting(inbox.CardID, inbox.Routing) bool
}

// Table is the routes in force (routes.File).
type Table interface {
	Table() *routes.Table
}

// Config configures a Router.
type Config struct {
	Routes Table
	Now    func() time.Time
	Logger *slog.Logger
}

// Router names each new question's team.
type Router struct {
	cfg Config
}

// New returns a router; cfg.Routes must be set.
func New(cfg Config) *Router {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Router{cfg: cfg}
}

// Question is what a route is matched against of card c.
func Question(c inbox.Card) routes.Question {
	return routes.Question{Agent: c.Agent, Kind: c.Request.Kind, Session: c.Key.Session, Tool: c.Tool}
}

// Team is the team the routes in force send c to ("" for none).
func (r *Router) Team(c inbox.Card) string {
	team, _, _ := r.cfg.Routes.Table().Match(Question(c))
	return team
}

// Run follows the inbox from sub until ctx ends. A dropped
// subscription (the inbox outran it) is made again.
func (r *Router) Run(ctx context.Context, cards Cards, sub *inbox.Subscription) {
	for {
		r.follow(ctx, cards, sub)
		sub.Close()
		if ctx.Err() != nil {
			return
		}
		sub = cards.Subscribe(256)
	}
}

func (r *Router) follow(ctx context.Context, cards Cards, sub *inbox.Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case ch, ok := <-sub.C():
			if !ok {
				return
			}
			if ch.Kind != inbox.ChangeAdded && ch.Kind != inbox.ChangeUpdated {
				continue
			}
			if c, ok := cards.Card(ch.Card); ok {
				r.Observe(cards, c)
			}
		}
	}
}

// Observe names card c's team once, when it has none yet: a reloaded
// routes file routes the questions that come after it.
func (r *Router) Observe(cards Cards, c inbox.Card) {
	rt := c.Verdict(r.cfg.Now(), inbox.Viewer{}).Routing
	if rt.Team != "" {
		return
	}
	team := r.Team(c)
	if team == "" {
		return
	}
	rt.Team = team
	cards.SetRouting(c.ID, rt)
}
