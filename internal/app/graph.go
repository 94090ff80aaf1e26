package app

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/feed"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/respond"
	"github.com/aepforms/aepforms/internal/routes"
	"github.com/aepforms/aepforms/internal/routing"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/webpush"
	"github.com/aepforms/aepforms/web"
)

// The concrete parts fit the interfaces their consumers declare.
var (
	_ feed.Sink        = (*inbox.Inbox)(nil)
	_ respond.Reporter = (*inbox.Inbox)(nil)
	_ respond.Reporter = (*liveReporter)(nil)
	_ respond.Releaser = (*inbox.Inbox)(nil)
	_ web.Inbox        = (*inbox.Inbox)(nil)
	_ web.Submitter    = (*respond.Client)(nil)
	_ web.Resender     = (*respond.Client)(nil)
	_ web.Roster       = (*respond.Client)(nil)
	_ web.Upstream     = upstream{}
	_ web.Notifier     = (*webpush.Pusher)(nil)
	_ webpush.Cards    = (*inbox.Inbox)(nil)
	_ routing.Cards    = (*inbox.Inbox)(nil)
	_ routing.Pusher   = (*webpush.Pusher)(nil)
	_ routing.Journal  = journalStore(nil)
	_ web.Routes       = (*routes.File)(nil)
)

// pushTick is how often pushes held back for a device's turn are sent,
// at most (half of --push-every when that is shorter).
const pushTick = time.Second

// sweepInterval is how often the inbox re-checks expires_at deadlines.
const sweepInterval = time.Second

// journalCheckTimeout bounds the check of a journal whose storage
// refused a change (a database that does not answer), as /readyz's
// default bounds its own.
const journalCheckTimeout = 2 * time.Second

// serveGraph is `aepforms serve`'s parts, built and connected: the inbox
// (the domain), the feed that fills it, the respond path that sends its
// answers (nil when watch-only), the UI's handler, and the demo agent
// when asked for. adapters.go walks one answer through them.
type serveGraph struct {
	in      *inbox.Inbox
	feed    *feed.Client
	respond *respond.Client
	demo    *agent.Agent
	handler http.Handler
	// streams owns the push streams taken over from the UI's server:
	// waited for after its Shutdown.
	streams *web.Streams

	journal   journalStore
	retention time.Duration
	logger    *slog.Logger

	// catch is the feed's sink: the inbox, watched for when the feed has
	// caught up (resume.go); resendMaxAge is --resend-max-age.
	catch        *catchUp
	resendMaxAge time.Duration
	reporter     *liveReporter   // the respond path's outcomes to the inbox
	pusher       *webpush.Pusher // nil: Web Push is off
	pushTick     time.Duration
	lease        time.Duration // --lease
	rules        *rules.Runner // standing answers; runs none when watch-only
	// routes is the routes file (nil: none), router what sends each
	// question to its team.
	routes       *routes.File
	routesReload time.Duration
	router       *routing.Router
	// routed emits attention.routed; relayURL, token and agentName are
	// what it posts with, linkBase the UI's address for chat messages'
	// links (serving sets it once the UI listens).
	relayURL, token, agentName string
	linkBase                   string
	wire                       *routing.Wire
	hooks                      *routing.Webhooks
	// operators reads the operators file again as it changes (nil:
	// none).
	operators *operatorsWatch
	claimSync time.Duration // --claim-sync
	// people are those the identity provider signed in, read again from
	// the journal every peopleEvery (nil without a provider).
	people      *web.PeopleList
	peopleEvery time.Duration
}

// newServeGraph builds the parts against the relay at relayURL, keeping
// the operator's answers in jr. Without a control token the UI is
// watch-only: no respond path.
func newServeGraph(cfg serveConfig, relayURL, token string, jr journalStore, logger *slog.Logger) *serveGraph {
	g := &serveGraph{journal: jr, retention: cfg.retention, logger: logger, resendMaxAge: cfg.resendMaxAge, lease: cfg.lease,
		relayURL: relayURL, token: token, agentName: cfg.agentName, claimSync: cfg.claimSync}
	// The UI's commands carry the journal's source, made once with the
	// journal (targets dedupe on (source, id), so it must not change when
	// the host name does).
	source := jr.Identity().Source
	g.in = inbox.New(g.inboxOptions(cfg, source, token))
	jr.KeepLiveCards(func(id string) bool { _, ok := g.in.Card(inbox.CardID(id)); return ok })
	g.catch = newCatchUp(g.in, nil)
	g.reporter = &liveReporter{in: g.in}
	feedCfg := feed.Config{RelayURL: relayURL, Token: token, SilenceTimeout: cfg.feedSilence, Logger: logger.With("part", "feed")}
	g.streams = &web.Streams{}
	deps := web.Deps{Inbox: g.in, History: jr, Sessions: jr, Database: jr, Streams: g.streams, RuleLooks: jr}
	if token != "" {
		g.respond = g.newRespond(cfg, relayURL, token, source)
		// Session lifecycle and agent.* events: read the roster again, so
		// a card's reach follows its agent starting, stopping or dying.
		feedCfg.OnEvent = g.respond.Observe
		feedCfg.OnRedelivery = g.respond.Redelivered
		// The feed reaching the relay again means it is back: the
		// respond path dials now instead of sitting out its backoff,
		// so answers queued during the outage go at once.
		g.catch.onConnect = g.respond.Wake
		deps.Submitter, deps.Roster = untilStop{g.respond}, g.respond
	}
	// Standing answers: made and run only with a respond path.
	var ruleSub rules.Submitter
	if g.respond != nil {
		ruleSub = g.respond
	}
	if cfg.oidcIssuer != "" {
		g.people, g.peopleEvery = web.NewPeopleList(jr, cfg.oidcForget, nil), cfg.sessionCheck
	}
	g.rules = rules.New(g.rulesConfig(cfg, logger), jr, g.in, ruleSub)
	deps.Rules = g.rules
	g.feed = feed.New(feedCfg)
	deps.Upstream = upstream{in: g.in, feed: g.feed, respond: g.respond}
	deps.PushDevices = jr
	// Who this UI answers as (watch-only without a control token) is
	// decided here once: it is the input of every card's verdict
	// (inbox.Viewer), handed unchanged to the web and Web Push, whose
	// page, push and notifications all read the verdict.
	viewer := inbox.Viewer{WatchOnly: token == ""}
	if cfg.routes != nil {
		g.newRouter(cfg, &deps)
	}
	g.newPusher(cfg, viewer, &deps)
	if g.router == nil && g.pusher != nil {
		// No routes file: every operator is notified of every question,
		// and an assignee of their assignment.
		g.router = routing.New(routing.Config{Journal: g.journal, Tick: cfg.routesTick, Logger: logger.With("part", "routing")})
	}
	if cfg.operatorList != nil {
		g.operators = newOperatorsWatch(cfg.operatorsFile, cfg.operatorsReload, cfg.operatorList, jr, logger.With("part", "operators"))
	}
	wc := webConfig(cfg, relayURL, viewer, logger)
	wc.Stopping, wc.People = g.reporter.stopping, g.people
	g.handler = web.NewServer(wc, deps)
	if cfg.demo {
		g.demo = newDemo(cfg, relayURL, token, logger)
	}
	return g
}

// inboxOptions are the inbox's bounds and its journal. The inbox knows
// this UI's source, and the host-derived source of releases before the
// journal, so its own earlier commands, seen again after a restart, are
// not taken for another sender's.
func (g *serveGraph) inboxOptions(cfg serveConfig, source, token string) inbox.Options {
	opts := inbox.Options{Journal: g.journal, OwnSources: []string{source, legacyUISource()},
		MaxPending: cfg.maxPending, MaxBytes: int64(cfg.maxBytes), MaxControls: cfg.maxControls, Logger: g.logger.With("part", "inbox"),
		RestoreSettled: restoreSettled(cfg.settledKept),
		// An answer queued while the relay is away is sent when it is
		// back only as long as a restart would resend it.
		QueueMaxAge: cfg.resendMaxAge, ClaimIdle: cfg.claimIdle}
	if token != "" {
		// The command's exact bytes are built before the submission is
		// journaled, so the journal keeps what is sent (and resent after
		// a restart, byte for byte).
		opts.Command = func(s inbox.Submission) ([]byte, error) { return g.respond.Build(s) }
		// Another sender's command locks a card's form for the target's
		// ack window, as the respond path knows it (--ack-window, else
		// the roster's; it takes only the roster's own lock).
		opts.AckWindow = func(session string) time.Duration { return g.respond.AckWindow(session) }
	}
	return opts
}

// newRespond is the respond path: the operators' answers to the relay.
func (g *serveGraph) newRespond(cfg serveConfig, relayURL, token, source string) *respond.Client {
	return respond.New(respond.Config{
		RelayURL: relayURL, Token: token, Agent: cfg.agentName, Source: source, AckWindow: cfg.ackWindow, RosterInterval: cfg.rosterIntvl, BackoffMax: cfg.respondBackoff,
		Reporter: g.reporter, Logger: g.logger.With("part", "respond"),
		// A queued answer is sent when the relay is back only if its
		// request is still open and it is not too old.
		Release: g.in,
		// A roster change (an agent connected or left) re-renders the
		// open cards whose agent's reach changed.
		Notify: func() { g.in.RefreshReach(g.respond.Reach) },
		// The respond path reaching the relay again means it is
		// back: the feed reconnects now instead of sitting out a
		// backoff grown over the outage (up to 30 s), so it follows
		// within this path's backoff cap (--respond-backoff-max).
		Connected: func() { g.feed.Wake() },
	})
}

// newPusher turns Web Push on when --vapid-subject allows it, and says
// in deps why not otherwise.
func (g *serveGraph) newPusher(cfg serveConfig, viewer inbox.Viewer, deps *web.Deps) {
	pc := webpush.Config{Subject: cfg.vapidSubject, AllowLoopback: cfg.pushAllowLoopback, HideText: cfg.pushHideText, Coalesce: cfg.pushEvery, Viewer: viewer,
		Ruled: g.rules.Answers, BasePath: web.CleanBasePath(cfg.basePath), Logger: g.logger.With("part", "webpush")}
	if g.router != nil {
		// Only the question's team (or assignee) is notified, and each
		// delivery is said on the wire.
		pc.Audience = g.router.Audience
		pc.Delivered = func(c inbox.Card) { g.routed(c, routing.SurfaceWebPush) }
	}
	pusher, err := webpush.New(pc, g.journal)
	if err != nil {
		deps.PushOff = view.PushWord("off-subject")
		g.logger.Info("web push off: start with --vapid-subject (a mailto: or https: address) to notify operators' devices of new questions", "part", "webpush", "why", err.Error())
		return
	}
	g.pusher, deps.Notifier = pusher, pusher
	g.pushTick = min(pushTick, max(cfg.pushEvery/2, 10*time.Millisecond))
}

// newRouter sends each question to its team (--routes): its label, its
// chat channel, its reminders and escalations.
func (g *serveGraph) newRouter(cfg serveConfig, deps *web.Deps) {
	g.routes, g.routesReload, deps.Routes = cfg.routes, cfg.routesReload, cfg.routes
	g.router = routing.New(routing.Config{Routes: cfg.routes, Journal: g.journal, Members: teamMembers(g.everyone(cfg)),
		Tick: cfg.routesTick, Logger: g.logger.With("part", "routing"), Ruled: g.rules.Answers,
		Link: func(c inbox.Card) string { return cardLink(g.linkBase)(c) }})
	deps.RoutingMetrics = g.router.Metrics()
}

// operatorsNow is the named operators as they are now: the operators
// file as last read (none without one).
func operatorsNow(cfg serveConfig) func() []web.Operator {
	if cfg.operatorList == nil {
		return func() []web.Operator { return cfg.operators }
	}
	return cfg.operatorList.Get
}

// everyone is the operators as they are now: the operators file's and
// the people the identity provider signed in (a person named like an
// operator of the file is that operator).
func (g *serveGraph) everyone(cfg serveConfig) func() []web.Operator {
	named := operatorsNow(cfg)
	return func() []web.Operator {
		ops := named()
		for _, p := range g.people.Operators() {
			if !slices.ContainsFunc(ops, func(o web.Operator) bool { return strings.EqualFold(o.Name, p.Name) }) {
				ops = append(ops, p)
			}
		}
		return ops
	}
}

// refreshPeople reads the people the identity provider signed in from
// the journal, forgetting those unseen past --oidc-forget: at start,
// before the parts that ask who is in a team or who may make rules (a
// restart knows them), then every peopleEvery (a sign-in on another
// replica).
func (g *serveGraph) refreshPeople(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, journalCheckTimeout)
	defer cancel()
	if err := g.people.Refresh(rctx); err != nil && ctx.Err() == nil {
		g.logger.Warn("answer journal: the people signed in at the identity provider could not be read", "part", "web", "err", err)
	}
}

// routed emits attention.routed for c's delivery to surface (once the
// parts run).
func (g *serveGraph) routed(c inbox.Card, surface string) {
	if g.wire != nil {
		g.wire.Routed(c, surface)
	}
}

// startRouting starts the routing's parts: the wire, the webhooks, the
// router and the routes file's watch.
func (g *serveGraph) startRouting(ctx context.Context, goRun func(name string, f func() error)) {
	g.wire = routing.NewWire(ctx, routing.WireConfig{RelayURL: g.relayURL, Token: g.token, Source: g.journal.Identity().Source,
		Agent: g.agentName, Logger: g.logger.With("part", "routing")})
	g.hooks = routing.NewWebhooks(ctx, routing.WebhookConfig{Logger: g.logger.With("part", "routing")})
	var push routing.Pusher
	if g.pusher != nil {
		push = g.pusher
	}
	g.router.Attach(push, g.hooks, g.wire)
	// Subscribed before the feed starts: every question is routed.
	sub := g.in.Subscribe(256)
	goRun("routing", func() error {
		g.router.Run(ctx, g.in, sub)
		g.hooks.Wait()
		g.wire.Wait()
		return nil
	})
	if g.routes != nil {
		goRun("routes file", func() error { g.routes.Watch(ctx, g.routesReload); return nil })
	}
}

// webConfig is the UI's HTTP settings.
func webConfig(cfg serveConfig, relayURL string, viewer inbox.Viewer, logger *slog.Logger) web.Config {
	return web.Config{
		BasePath: cfg.basePath, OperatorToken: cfg.operatorToken, AllowHosts: cfg.allowHosts,
		EmbedOrigins: cfg.embedOrigins, SecureCookies: cfg.tlsCert != "" || cfg.trustProxy || cfg.httpsPublic(),
		Viewer: viewer, Heartbeat: cfg.heartbeat, BatchPushEvery: cfg.batchEvery, Logger: logger.With("part", "web"),
		BodyTimeout: cfg.bodyTimeout, ResponseTimeout: cfg.respTimeout, TrustProxy: cfg.trustProxy, Operators: cfg.operators, OperatorList: cfg.operatorList,
		PromptBytes: int(cfg.promptBytes), PageCards: cfg.pageCards, PageRows: cfg.pageRows, SessionIdle: cfg.sessionIdle, SessionMax: cfg.sessionMax,
		Connect: connectInfo(relayURL, cfg.tokenPath), MaxPushDevices: cfg.pushMaxDevices, TrustedProxies: cfg.trustedProxy,
		PushSubscribeTimeout: cfg.pushSubTimeout, SessionRecheck: cfg.sessionCheck, MaxStreamsPerSession: cfg.maxStreams,
		OIDC: cfg.oidcConfig.oidc(), UndoWindow: cfg.undoWindow, URLEvery: cfg.urlEvery,
		HandoffMaxAge: cfg.panelSignInMaxAge, SignInWindowWait: cfg.panelSignInWait, SignInWindowPoll: cfg.panelSignInPoll,
	}
}

// newDemo is the demo agent of --demo: its expiring form asked again
// after each timeout.
func newDemo(cfg serveConfig, relayURL, token string, logger *slog.Logger) *agent.Agent {
	ac := agent.DefaultConfig()
	ac.RelayURL, ac.Token, ac.Every, ac.ReaskExpired = relayURL, token, cfg.demoEvery, true
	ac.MaxExtra = cfg.demoPending
	ac.Logger = logger.With("part", "demo-agent")
	return agent.New(ac)
}

// start runs every long-lived part with goRun, which owns the goroutines
// and waits for them.
func (g *serveGraph) start(ctx context.Context, goRun func(name string, f func() error)) {
	g.reporter.ctx = ctx
	if g.people != nil {
		g.refreshPeople(ctx)
		goRun("people", func() error { every(ctx, g.peopleEvery, func() { g.refreshPeople(ctx) }); return nil })
	}
	if g.respond != nil {
		g.startResume(ctx, goRun)
	}
	if g.rules.Enabled() {
		// Subscribed before the feed starts: every request is seen.
		sub := g.in.Subscribe(256)
		goRun("rules", func() error { g.rules.Run(ctx, sub); return nil })
	}
	if g.router != nil {
		g.startRouting(ctx, goRun)
	}
	if g.operators != nil {
		goRun("operators file", func() error { every(ctx, g.operators.every, func() { g.operators.reload(ctx) }); return nil })
	}
	if g.pusher != nil {
		// Subscribed before the feed starts: every question is seen.
		sub := g.in.Subscribe(256)
		goRun("web push", func() error { g.pusher.RunFrom(ctx, g.in, sub, g.pushTick); return nil })
	}
	goRun("feed", func() error { return g.feed.Run(ctx, g.catch) })
	if g.respond != nil {
		goRun("respond", func() error { return g.respond.Run(ctx) })
	}
	goRun("sweep", func() error { g.sweep(ctx); return nil })
	// Who is on which question, as the journal keeps it: at start (a
	// restart) and as other replicas sharing it change it.
	goRun("claims", func() error { g.in.SeeClaims(); every(ctx, g.claimSync, g.in.SeeClaims); return nil })
	goRun("journal check", func() error { g.checkJournal(ctx); return nil })
	goRun("journal retention", func() error { return g.keepRetention(ctx) })
	// The demo agent (g.demo) is started by runServe, which stops it
	// first, before these parts and the relay.
}

// startResume puts the journal's answers still waiting for the agent
// back on their cards as the feed brings them (before it starts), and
// sends them again once the feed has caught up (resume.go). A watch-only
// UI leaves them in the journal.
func (g *serveGraph) startResume(ctx context.Context, goRun func(name string, f func() error)) {
	if n, err := g.in.Restore(); err != nil {
		g.logger.Error("answer journal: the answers waiting for the agent could not be read", "err", err)
	} else if n > 0 {
		g.logger.Info("answer journal: answers waiting for the agent before the restart", "count", n)
	}
	// Resume first, then keep the leases: one goroutine, so the
	// two never decide about one answer at once.
	goRun("leases", func() error { renewUntilCaughtUp(ctx, g.in, g.catch, g.lease); return nil })
	goRun("resume", func() error {
		logger := g.logger.With("part", "journal")
		if err := resume(ctx, g.in, g.catch, g.respond, g.resendMaxAge, logger); err != nil {
			return err
		}
		return reclaim(ctx, g.in, g.catch, g.respond, g.resendMaxAge, g.lease, logger)
	})
}

// sweep settles the cards whose deadline passed, every sweepInterval.
func (g *serveGraph) sweep(ctx context.Context) {
	every(ctx, sweepInterval, g.in.Sweep)
}

// checkJournal checks the journal as /readyz does (a small write, then
// what it refused) while a banner says its storage refused a change:
// once it takes writes again, the banner goes, even if no answer comes
// to write.
func (g *serveGraph) checkJournal(ctx context.Context) {
	every(ctx, sweepInterval, func() {
		if !g.in.JournalFault() {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, journalCheckTimeout)
		defer cancel()
		if g.journal.Ping(pctx) == nil {
			g.in.JournalWrites()
		}
	})
}

// every calls f each interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// keepRetention prunes answers past --history-retention, at start and
// then every pruneInterval.
func (g *serveGraph) keepRetention(ctx context.Context) error {
	return store.RunRetention(ctx, g.journal, store.Retention{
		Keep: g.retention, Every: pruneInterval,
		Pruned: func(n int64, err error) {
			if err != nil {
				g.logger.Error("answer journal: pruning old answers failed", "err", err)
			} else if n > 0 {
				g.logger.Info("answer journal: pruned answers past --history-retention", "removed", n)
			}
		},
	})
}

// connectInfo is how an agent connects, for the empty inbox: the relay,
// the token file, and the command that runs the demo agent against them.
func connectInfo(relayURL, tokenPath string) view.Connect {
	c := view.Connect{RelayURL: relayURL, TokenFile: tokenPath, Demo: "aepforms demo-agent --relay " + relayURL}
	if tokenPath != "" {
		c.Demo = "AEP_TOKEN=$(cat " + shellQuote(tokenPath) + ") " + c.Demo
	}
	return c
}

// shellQuote quotes s for a POSIX shell when it holds anything but the
// characters a path usually has.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// allowedOperators is rules.Config.Allowed for named operators: a name
// in the operators file as it is now, or of a person the identity
// provider signed in who is still listed (people, the journal's as it
// is now; nil: none). nil (everyone) without named operators.
func allowedOperators(list *web.OperatorList, people *web.PeopleList) func(string) bool {
	if list == nil {
		return nil
	}
	return func(name string) bool {
		return slices.ContainsFunc(list.Get(), func(o web.Operator) bool { return o.Name == name }) ||
			people.Holds(name, journalCheckTimeout)
	}
}

// legacyUISource is the source URI this UI's commands carried before the
// answer journal, aep://{host}/ui/aepforms: still recognised as our own.
func legacyUISource() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "aep://" + url.PathEscape(host) + "/ui/aepforms"
}

// restoreSettled is inbox.Options.RestoreSettled for --settled-kept: 0
// there means none (the inbox reads 0 as its default).
func restoreSettled(kept int) int {
	if kept == 0 {
		return -1
	}
	return kept
}

// rulesConfig is the standing answers' settings. A claim cut off before
// its answer is answered by this process once it counts as cut off: at
// once for an earlier process's on a journal only this one opens
// (SQLite), after --lease on one replicas share. A rule knows its
// agent's connection by the instance the relay's roster names for the
// request's session; a session the roster does not name yet (just
// opened) is asked again, waiting up to the rules' retry interval; a
// rule's own connection is live when the roster names it on any session.
func (g *serveGraph) rulesConfig(cfg serveConfig, logger *slog.Logger) rules.Config {
	rc := rules.Config{MaxRate: cfg.ruleMaxRate, RateWindow: cfg.ruleRateWindow, MaxRules: cfg.ruleMax, RetryInterval: cfg.ruleRetry, Allowed: allowedOperators(cfg.operatorList, g.people),
		ClaimLapse: cfg.lease, Exclusive: !isPostgresURL(cfg.db), PromptBytes: int(cfg.promptBytes),
		Logger: logger.With("part", "rules")}
	if g.respond != nil {
		rc.Claimant = func(ctx context.Context, session string) string {
			return g.respond.Claimant(ctx, session, cmp.Or(cfg.ruleRetry, rules.DefaultRetryInterval))
		}
		rc.Connected = g.respond.InstanceLive
	}
	return rc
}
