// Package routing sends each question to its team: it follows the
// inbox, names the team the routes file gives each new question (shown
// on its card), posts it to the team's chat channel, and reminds and
// escalates a question nobody answers or claims. Silence never answers
// anything: a step only notifies people.
package routing

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routes"
	"github.com/aepforms/aepforms/internal/store"
)

// Cards is what the router reads and writes of the inbox.
type Cards interface {
	Subscribe(buf int) *inbox.Subscription
	Card(inbox.CardID) (inbox.Card, bool)
	Cards(inbox.Query) []inbox.Card
	SetRouting(inbox.CardID, inbox.Routing) bool
}

// Table is the routes in force (routes.File).
type Table interface {
	Table() *routes.Table
}

// noRoutes is the Table of no routes file: no team, no route.
type noRoutes struct{}

func (noRoutes) Table() *routes.Table { return nil }

// Journal is where each question's routing history is kept (its team,
// each reminder and escalation), as long as its answer is in History, so
// a restart and every replica sharing it show the steps; keeping a step
// is its claim, so of the replicas one sends each. A question's chat
// message and the count of its answer are claimed as push claims,
// short-lived for their job.
type Journal interface {
	ClaimPush(ctx context.Context, card, kind string, at time.Time) (bool, error)
	PrunePushClaims(ctx context.Context, before time.Time) (int64, error)
	KeepRoutingStep(ctx context.Context, s store.RoutingStep) (bool, error)
	RoutingSteps(ctx context.Context, card string) ([]store.RoutingStep, error)
}

// Pusher pushes a question again to some operators' devices
// (webpush.Pusher).
type Pusher interface {
	Renotify(ctx context.Context, c inbox.Card, audience func(operator string) bool) int
}

// Config configures a Router. A nil part is off.
type Config struct {
	Routes Table
	// Journal claims each step (nil: this process alone, kept in memory).
	Journal Journal
	// Members is who is in a team: the func it returns reports an
	// operator in team (nil: nobody known).
	Members func(team string) func(operator string) bool
	Push    Pusher
	Hooks   *Webhooks
	Wire    *Wire
	// Link is the address of card c's own page, for a chat message.
	Link func(c inbox.Card) string
	// Ruled, when set, reports whether a standing answer (a rule)
	// answers c: its team's channel is not told of it.
	Ruled func(ctx context.Context, c inbox.Card) bool
	// Tick is how often the open questions are looked at for a reminder
	// or an escalation due (1 s by default).
	Tick    time.Duration
	Now     func() time.Time
	Metrics *Metrics
	Logger  *slog.Logger
}

// claimPrefix starts the kinds of the journal's push claims the router
// makes: routing:{new|answered}:{team}.
const claimPrefix = store.RoutingPrefix

// The router's push claims: a question's first chat message (no step),
// and the count of its time to answer (one replica counts it).
const (
	stepNew       = "new"
	claimAnswered = "answered"
)

// Router sends each question to its team.
type Router struct {
	cfg Config

	mu     sync.Mutex
	pruner store.PushClaimPruner
	open   map[inbox.CardID]bool      // the open questions with a team
	sent   map[string]bool            // claims this process made or saw made (card + kind)
	asked  map[inbox.CardID]time.Time // when each open question arrived (for the time to answer)
}

// New returns a router. Without cfg.Routes it routes no question and
// only tells each assignee of their assignment (Web Push).
func New(cfg Config) *Router {
	if cfg.Routes == nil {
		cfg.Routes = noRoutes{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	return &Router{cfg: cfg, open: map[inbox.CardID]bool{}, sent: map[string]bool{}, asked: map[inbox.CardID]time.Time{}}
}

// Attach gives the router its delivery parts, before Run: the pusher,
// the chat webhooks and the wire (nil: off).
func (r *Router) Attach(push Pusher, hooks *Webhooks, wire *Wire) {
	r.cfg.Push, r.cfg.Hooks, r.cfg.Wire = push, hooks, wire
}

// Metrics is the router's counts (/metrics).
func (r *Router) Metrics() *Metrics { return r.cfg.Metrics }

// Question is what a route is matched against of card c.
func Question(c inbox.Card) routes.Question {
	return routes.Question{Agent: c.Agent, Kind: c.Request.Kind, Session: c.Key.Session, Tool: c.Tool}
}

// Team is the team the routes in force send c to ("" for none).
func (r *Router) Team(c inbox.Card) string {
	team, _, _ := r.cfg.Routes.Table().Match(Question(c))
	return team
}

// Audience is who card c notifies: its assignee (an operator, or a
// team's operators) when it has one, else its team's operators; nil
// (everyone) when it has neither.
func (r *Router) Audience(c inbox.Card) func(operator string) bool {
	vd := c.Verdict(r.cfg.Now(), inbox.Viewer{})
	if a := vd.Assigned; a != nil && a.To != "" {
		if !a.Team {
			to := a.To
			return func(op string) bool { return strings.EqualFold(op, to) }
		}
		return r.members(a.To)
	}
	team := vd.Routing.Team
	if team == "" {
		team = r.Team(c)
	}
	if team == "" {
		return nil
	}
	return r.members(team)
}

func (r *Router) members(team string) func(string) bool {
	if r.cfg.Members == nil {
		return func(string) bool { return false }
	}
	if m := r.cfg.Members(team); m != nil {
		return m
	}
	return func(string) bool { return false }
}

// Run follows the inbox from sub and looks at the open questions every
// Tick until ctx ends. A dropped subscription (the inbox outran it) is
// made again, and every card looked at: the questions that came in the
// gap are routed, and their assignments told, like any other.
func (r *Router) Run(ctx context.Context, cards Cards, sub *inbox.Subscription) {
	t := time.NewTicker(r.cfg.Tick)
	defer t.Stop()
	for {
		r.follow(ctx, cards, sub, t.C)
		sub.Close()
		if ctx.Err() != nil {
			return
		}
		sub = cards.Subscribe(256)
		for _, c := range cards.Cards(inbox.Query{}) {
			if ctx.Err() != nil {
				break
			}
			r.Observe(ctx, cards, c)
		}
	}
}

// kept reads card id's routing history from the journal: the team it
// was routed to ("" when none is kept) and when (zero when none), and the
// steps any replica took, before this process started or since.
func (r *Router) kept(ctx context.Context, id inbox.CardID) (string, time.Time, []inbox.RoutingStep) {
	if r.cfg.Journal == nil {
		return "", time.Time{}, nil
	}
	history, err := r.cfg.Journal.RoutingSteps(ctx, string(id))
	if err != nil {
		r.cfg.Logger.Warn("routing: a question's reminders and escalations sent could not be read", "card", string(id), "err", err)
		return "", time.Time{}, nil
	}
	var team string
	var routedAt time.Time
	var steps []inbox.RoutingStep
	for _, s := range history {
		switch s.Kind {
		case store.RoutedTo:
			if team == "" {
				team, routedAt = s.Team, s.At
			}
		case inbox.StepReminded, inbox.StepEscalated:
			steps = append(steps, inbox.RoutingStep{Kind: s.Kind, Team: s.Team, At: s.At})
			r.mu.Lock()
			r.sent[string(id)+"\n"+s.Kind+":"+s.Team] = true
			r.mu.Unlock()
		case store.Assigned:
			r.mu.Lock()
			r.sent[string(id)+"\n"+s.Kind+":"+s.Team] = true // told already
			r.mu.Unlock()
		}
	}
	return team, routedAt, steps
}

// arrival is when card c's question arrived, as the remind and escalate
// clocks and the time to answer run from: when it was first routed, by
// any replica, before this process started or since (the journal's), or
// when this inbox first saw it if that is earlier. The inbox's own time
// starts again at each restart, which would put a question's reminder
// and escalation off by as much.
func (r *Router) arrival(c inbox.Card) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.asked[c.ID]; ok {
		return at
	}
	return c.ReceivedAt
}

func (r *Router) follow(ctx context.Context, cards Cards, sub *inbox.Subscription, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			r.Sweep(ctx, cards)
			r.pruneClaims(ctx)
		case ch, ok := <-sub.C():
			if !ok {
				return
			}
			if ch.Kind == inbox.ChangeRemoved {
				r.forget(ch.Card)
				continue
			}
			if ch.Kind != inbox.ChangeAdded && ch.Kind != inbox.ChangeUpdated {
				continue
			}
			if c, ok := cards.Card(ch.Card); ok {
				r.Observe(ctx, cards, c)
			}
		}
	}
}

// Observe names card c's team once, when it has none yet (a reloaded
// routes file routes the questions that come after it), with the steps
// the journal kept for it; an open question is then posted to its
// team's chat channel (once, of every replica) and looked at every
// Tick; a settled one is counted. A new assignment is told to its
// assignee (assigned), routed or not.
func (r *Router) Observe(ctx context.Context, cards Cards, c inbox.Card) {
	now := r.cfg.Now()
	vd := c.Verdict(now, inbox.Viewer{})
	r.assigned(ctx, c, vd)
	rt := vd.Routing
	if rt.Team == "" {
		team := r.Team(c)
		if team == "" {
			return
		}
		// The team kept first, by any replica, stays the card's.
		kept, routedAt, steps := r.kept(ctx, c.ID)
		if kept != "" {
			team = kept
		}
		arrived := c.ReceivedAt
		if !routedAt.IsZero() && routedAt.Before(arrived) {
			arrived = routedAt
		}
		rt.Team, rt.Steps = team, append(rt.Steps, steps...)
		// Looked at by Sweep before its team shows: a step never waits
		// for this goroutine after the card says its team.
		r.mu.Lock()
		_, tracked := r.asked[c.ID]
		if vd.Open && !tracked {
			r.open[c.ID], r.asked[c.ID] = true, arrived
		}
		r.mu.Unlock()
		cards.SetRouting(c.ID, rt)
		r.record(ctx, c.ID, rt.Team)
		if vd.Open && !tracked {
			r.announce(ctx, c, vd, rt.Team)
		}
		return
	}
	r.mu.Lock()
	_, tracked := r.asked[c.ID]
	if vd.Open && !tracked {
		r.open[c.ID], r.asked[c.ID] = true, c.ReceivedAt
	}
	r.mu.Unlock()
	if vd.Open && !tracked {
		r.announce(ctx, c, vd, rt.Team)
		return
	}
	if vd.Settled && tracked {
		r.settled(ctx, c, vd, rt.Team)
	}
}

// record keeps card id's team in the journal, for History (its filter by
// team) and the replicas that see the card after (the first kept stays
// its team).
func (r *Router) record(ctx context.Context, id inbox.CardID, team string) {
	if r.cfg.Journal == nil {
		return
	}
	if _, err := r.cfg.Journal.KeepRoutingStep(ctx, store.RoutingStep{Card: string(id), Kind: store.RoutedTo, Team: team, At: r.cfg.Now()}); err != nil {
		r.cfg.Logger.Warn("routing: a question's team could not be kept in the journal", "card", string(id), "team", team, "err", err)
	}
}

// settled stops looking at card c and counts its time to answer when a
// person or a rule answered it: once, of every replica sharing the
// journal (the one that claims the count), so /metrics summed across
// replicas counts each answer once.
func (r *Router) settled(ctx context.Context, c inbox.Card, vd inbox.Verdict, team string) {
	r.mu.Lock()
	asked := r.asked[c.ID]
	delete(r.open, c.ID)
	delete(r.asked, c.ID)
	r.mu.Unlock()
	defer r.forgetSent(c.ID)
	if vd.Answered == nil {
		return
	}
	if won, _ := r.claim(ctx, c.ID, claimAnswered, team); won {
		r.cfg.Metrics.answered(team, r.cfg.Now().Sub(asked))
	}
}

// forgetSent forgets the claims made or seen of card id, once it takes
// no more steps (settled, or gone from the inbox): the process keeps
// only those of the questions still open.
func (r *Router) forgetSent(id inbox.CardID) {
	prefix := string(id) + "\n"
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.sent {
		if strings.HasPrefix(k, prefix) {
			delete(r.sent, k)
		}
	}
}

// announce posts new question c to its team's chat channel, once of
// every replica sharing the journal. A question nobody here can answer
// (vd.Closed: answered in the agent's own UI, malformed, over budget)
// is posted nowhere: its link would lead to a card that takes no answer.
func (r *Router) announce(ctx context.Context, c inbox.Card, vd inbox.Verdict, team string) {
	if vd.Closed != nil {
		return
	}
	tm, ok := r.cfg.Routes.Table().Team(team)
	if !ok || tm.Webhook == "" || r.cfg.Hooks == nil {
		return
	}
	if r.cfg.Ruled != nil && r.cfg.Ruled(ctx, c) {
		return
	}
	if won, _ := r.claim(ctx, c.ID, stepNew, team); !won {
		return
	}
	r.post(c, tm, newText(c, team, r.link(c)))
}

// claim claims step kind to team of card id: won is true for the one
// caller of every replica that claimed it first; taken is true once it
// is claimed, by anyone. A reminder, an escalation or an assignment's
// notice is claimed by keeping it in the routing history, anything else
// as a push claim. A
// journal that fails is logged, and the step not taken (it is tried
// again at the next Tick).
func (r *Router) claim(ctx context.Context, id inbox.CardID, kind, team string) (won, taken bool) {
	key := kind + ":" + team
	r.mu.Lock()
	seen := r.sent[string(id)+"\n"+key]
	r.mu.Unlock()
	if seen {
		return false, true
	}
	won = true
	if r.cfg.Journal != nil {
		var err error
		if kind == inbox.StepReminded || kind == inbox.StepEscalated || kind == store.Assigned {
			won, err = r.cfg.Journal.KeepRoutingStep(ctx, store.RoutingStep{Card: string(id), Kind: kind, Team: team, At: r.cfg.Now()})
		} else {
			won, err = r.cfg.Journal.ClaimPush(ctx, string(id), claimPrefix+key, r.cfg.Now())
		}
		if err != nil {
			r.cfg.Logger.Warn("routing: a step could not be claimed in the journal", "card", string(id), "step", kind, "team", team, "err", err)
			return false, false
		}
	}
	r.mu.Lock()
	r.sent[string(id)+"\n"+key] = true
	r.mu.Unlock()
	return won, true
}

// post posts text to team tm's chat channel; its delivery is emitted on
// the wire.
func (r *Router) post(c inbox.Card, tm routes.Team, text string) {
	if tm.Webhook == "" || r.cfg.Hooks == nil {
		return
	}
	r.cfg.Hooks.Post(tm.Name, tm.Webhook, text, func(ok bool) {
		if ok && r.cfg.Wire != nil {
			r.cfg.Wire.Routed(c, SurfaceWebhook)
		}
	})
}

func (r *Router) link(c inbox.Card) string {
	if r.cfg.Link == nil {
		return ""
	}
	return r.cfg.Link(c)
}

// pruneClaims forgets the journal's push claims older than
// store.PushClaimsKept, at most once an hour: the router's (a chat
// message sent, an answer counted) are pruned with Web Push off too.
func (r *Router) pruneClaims(ctx context.Context) {
	if r.cfg.Journal == nil {
		return
	}
	if err := r.pruner.Prune(ctx, r.cfg.Journal, r.cfg.Now()); err != nil {
		r.cfg.Logger.Warn("routing: pruning the journal's push claims", "err", err)
	}
}
