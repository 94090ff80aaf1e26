// Package web is the operator UI's HTTP surface: pages rendered with templ,
// the answer post, the browser push stream, sign-in and the operations
// endpoints. It reaches the inbox and the respond path only through the
// interfaces declared here; internal/app hands it the concrete types.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// Inbox is what the UI needs of the domain.
type Inbox interface {
	// Heads are the cards without their request bodies, in inbox order
	// (open by urgency, then settled newest first): what a page is chosen
	// from; it then reads whole (Card) only the cards it renders.
	Heads(inbox.Query) []inbox.Card
	// WaitingHeads are the heads of the open cards only, in no order:
	// what the next card after a post is chosen from.
	WaitingHeads(inbox.Query) []inbox.Card
	Card(inbox.CardID) (inbox.Card, bool)
	Status() inbox.Status
	// Claims: who is on a question, who it is assigned to.
	Claims
	// BeginSubmissionWhile is inbox.Inbox.BeginSubmission, calling while
	// (when not nil) during the journal write.
	BeginSubmissionWhile(id inbox.CardID, s inbox.Submission, while func(inbox.Submission)) (inbox.Submission, error)
	// Posted reports whether the form token was posted on the card, here
	// or on another replica sharing the journal.
	Posted(id inbox.CardID, token string) bool
	SettleSubmission(id inbox.CardID, commandID string, state inbox.SubmissionState, reason, detail string)
	// Seq is the number of the latest change (0 before any).
	Seq() uint64
	// Follow follows every change from now on (a browser with no
	// position to resume from), dropped past max waiting changes.
	Follow(max int) *inbox.Follower
	// FollowSince atomically returns the changes after seq and a
	// follower of every later one; false means seq is too far behind
	// (or ahead): the browser must reload.
	FollowSince(seq uint64, max int) (*inbox.Follower, []inbox.Change, bool)
}

// Submitter queues a submission (begun by Inbox.BeginSubmission) and
// returns at once; what became of the command comes back to the inbox as
// its SubmissionState (acks on the respond socket or the feed).
type Submitter interface {
	Submit(ctx context.Context, s inbox.Submission) error
}

// Roster tells whether a session's agent is connected for answers.
type Roster interface {
	// Reach reports whether the session's agent can take an answer now.
	Reach(session string) inbox.Reach
}

// Upstream is the state of the relay connections, as /readyz and
// /metrics report them.
type Upstream interface {
	FeedConnected() bool
	// FeedReconnects counts the feed's streams opened after the first.
	FeedReconnects() int64
	// RespondConnected is true when answers can be sent (or when there is
	// no respond path to wait for: watch-only).
	RespondConnected() bool
	// Outcomes counts what became of the commands sent, by state.
	Outcomes() map[inbox.SubmissionState]int64
}

// Database is the answer journal's store as /readyz checks it: a
// PostgreSQL server the replicas share can be down while this process
// is up.
type Database interface {
	Ping(ctx context.Context) error
}

// Deps are the parts the server talks to. Submitter, Roster, Upstream
// and History may be nil: without a Submitter the UI is watch-only.
type Deps struct {
	Inbox Inbox
	// Streams owns the push streams taken over from net/http; wait on it
	// after the server's Shutdown. nil: the server's own, waited for by
	// nobody.
	Streams *Streams
	// Rules is the standing answers; nil: none (the page offers none).
	Rules Rules
	// RuleLooks keeps when each operator last looked at what rules
	// answered (the journal); nil: the header counts none.
	RuleLooks RuleLooks
	Submitter Submitter
	Roster    Roster
	Upstream  Upstream
	// History reads the answer journal for GET /history and its exports;
	// nil: the page says history is off.
	History History
	// Sessions keeps the operators' sessions (the answer journal); nil
	// keeps them in memory, revocable until the process ends.
	Sessions Sessions
	// Database, when set, is checked by /readyz; nil: nothing to check.
	Database Database
	// Metrics, when set, is where the HTTP side counts (tests read it); nil
	// makes a new one.
	Metrics *Metrics
	// Notifier is Web Push; nil: off, and PushOff says why in the
	// operator's words. PushDevices keeps the devices and the pages'
	// visibility (the journal).
	Notifier    Notifier
	PushDevices PushDevices
	PushOff     string
	// Routes is the routes file in force; nil: none (every question
	// notifies every operator). RoutingMetrics writes the reminders,
	// escalations and times to answer by team to /metrics; nil: none.
	Routes         Routes
	RoutingMetrics RoutingMetrics
}

// Config holds the server's settings. Zero values are the defaults.
type Config struct {
	// PushEpoch starts every /push event id ({epoch}-{seq}): a browser
	// resuming with an id from another replica or an earlier process
	// (another epoch) is told to reload, as the seqs of two inboxes do
	// not compare. Default: random per server.
	PushEpoch string
	// BasePath is the URL prefix the UI is mounted under, "/" by default;
	// it always starts and ends with "/".
	BasePath string
	// OperatorToken, when set, must be presented (sign-in cookie or bearer)
	// on every route but static assets, /healthz and /readyz.
	OperatorToken string
	// Operators, when set, are the named operators: each signs in (or
	// sends Bearer with X-Operator-Name) with their own name and secret,
	// so the name recorded as who answered is authenticated, and
	// OperatorToken is not accepted.
	Operators []Operator
	// OperatorList, when set with Operators, is where the named operators
	// are read from as they change (the operators file read again);
	// Operators is then its first list. nil: Operators, for good.
	OperatorList *OperatorList
	// AllowHosts are host names accepted besides localhost, 127.0.0.1 and
	// [::1] when no OperatorToken (or Operators) is set (DNS-rebinding defence).
	AllowHosts []string
	// EmbedOrigins are the origins allowed to frame the UI and post to it
	// (Mission Control). Empty: framing refused.
	EmbedOrigins []string
	// SecureCookies marks the session cookie Secure (TLS or --trust-proxy).
	SecureCookies bool
	// TrustProxy is true behind a reverse proxy: the client address the
	// guessing limits count is the last X-Forwarded-For hop, which the
	// proxy added, not the connection's peer (the proxy).
	TrustProxy bool
	// TrustedProxies are the peers whose X-Forwarded-For TrustProxy
	// believes; a request from any other peer is counted by the peer's
	// own address. Empty: DefaultTrustedProxies (loopback and private).
	TrustedProxies []netip.Prefix
	// Viewer is who this UI answers as: the input of every card's
	// verdict, read unchanged by the page, the fragments, the push
	// stream and every post. A watch-only Viewer (no control token for
	// the relay) is refused every answer (inbox.ErrWatchOnly), so every
	// card says so and offers no submit. A server with no Submitter
	// answers as a watch-only Viewer.
	Viewer inbox.Viewer
	// Heartbeat is the push stream's comment interval, 15 s by default.
	Heartbeat time.Duration
	// BatchPushEvery is how often at most each inbox page is sent the
	// batch region's counts (one summary a filter, derived once and
	// pushed to every page of it), 1 s by default: the changes of a
	// burst wait for it and go as one.
	BatchPushEvery time.Duration
	// PushBuffer is each browser's queue of pending changes, 256 by default.
	PushBuffer int
	// WriteTimeout bounds each network write of the push stream, 10 s by
	// default. Over HTTP/1.1 (a connection taken over) a write is cut
	// after between half of it and the whole: one deadline serves the
	// writes of half the timeout (sse.Writer).
	WriteTimeout time.Duration
	// MaxBody bounds a form post, 1 MiB by default.
	MaxBody int64
	// BodyTimeout bounds reading a post's body (sign-in, sign-out,
	// answer), 30 s by default: a client that trickles it is cut.
	BodyTimeout time.Duration
	// ResponseTimeout bounds writing any response but the push stream
	// (which bounds each write by WriteTimeout instead), 30 s by default.
	ResponseTimeout time.Duration
	// MaxPushDevices is the most Web Push devices one operator keeps
	// subscribed, 20 by default; a new one replaces their oldest.
	MaxPushDevices int
	// ReadyTimeout bounds /readyz's check of the Database, 2 s by default.
	ReadyTimeout time.Duration
	// PromptBytes is how much of a prompt a card shows; "Show all" fetches
	// the rest (GET /cards/{id}/prompt). 16 KiB by default.
	PromptBytes int
	// Connect says how an agent connects to the relay (its URL, the token
	// file, the demo agent's command), for the empty inbox; zero shows
	// only the empty note.
	Connect view.Connect
	// PageCards is how many waiting requests the page renders in full
	// (the most urgent), 50 by default; PageRows bounds the one-line rows
	// after them, 500 by default, the rest on the next pages.
	PageCards, PageRows int
	// SessionIdle ends a session unused this long, 12 h by default (its
	// last use is written at most once a minute).
	SessionIdle time.Duration
	// SessionMax ends a session this long after its sign-in, however used,
	// 7 days (168 h) by default.
	SessionMax time.Duration
	// OIDC signs operators in with the identity provider; nil: not.
	OIDC *OIDC
	// People are the people the identity provider signed in, kept in the
	// journal (NewPeopleList); nil with OIDC: kept in memory only.
	People *PeopleList
	// SessionRecheck is how often the session of each open push stream is
	// looked up again, 15 s by default: an expired session, a changed
	// secret or a sign-out on another replica ends its streams within it
	// (a sign-out here ends them at once).
	SessionRecheck time.Duration
	// MaxStreamsPerSession bounds the push streams one session (or one
	// Bearer script's operator name) holds open, 8 by default; the next
	// is refused with 429.
	MaxStreamsPerSession int
	// HandoffMaxAge bounds a panel's sign-in through a window of its own
	// (handoff.go), from the frame's start to its picking the sign-in up,
	// 10 min by default.
	HandoffMaxAge time.Duration
	// SignInWindowWait is how long the sign-in window a panel opened
	// waits for the panel to give it its hand-off before it says no panel
	// did, 15 s by default; SignInWindowPoll how often the panel checks
	// whether that window closed, 400 ms by default.
	SignInWindowWait, SignInWindowPoll time.Duration
	// URLEvery is the least time between two rewrites of the page's
	// address by its script as the selection moves (browsers limit how
	// often a page may rewrite it), 250 ms by default.
	URLEvery time.Duration
	// RelativeEvery is how often an open page's script rewrites its
	// relative times ("2 min ago"), 30 s by default.
	RelativeEvery time.Duration
	// PushSubscribeTimeout is how long an open page waits for the
	// browser's push service to subscribe the device before it says the
	// service did not answer, 15 s by default.
	PushSubscribeTimeout time.Duration
	// UndoWindow is how long an operator's sent answer waits before its
	// command leaves, while the page offers Undo (answer.Config); 0, the
	// default, sends at once.
	UndoWindow time.Duration
	// Stopping, when set, reports whether serve is stopping: a held
	// answer whose window passes then is left journaled for the next
	// start (answer.Config.Stopping).
	Stopping func() bool
	// Now is the clock, time.Now by default.
	Now func() time.Time
	// Logger receives request errors; nil discards.
	Logger *slog.Logger
}

// CleanBasePath normalises a mount prefix to start and end with "/"
// ("" and "/" are the root).
func CleanBasePath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// secured reports whether the UI needs a secret (shared or an operator's).
func (c *Config) secured() bool {
	return c.OperatorToken != "" || len(c.Operators) > 0 || c.OIDC != nil
}

func (c *Config) defaults() {
	c.BasePath = CleanBasePath(c.BasePath)
	if c.PushEpoch == "" {
		c.PushEpoch = newPushEpoch()
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.BatchPushEvery <= 0 {
		c.BatchPushEvery = time.Second
	}
	if c.PushBuffer <= 0 {
		c.PushBuffer = 256
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = 30 * time.Second
	}
	if c.ResponseTimeout <= 0 {
		c.ResponseTimeout = 30 * time.Second
	}
	if c.MaxPushDevices <= 0 {
		c.MaxPushDevices = 20
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 2 * time.Second
	}
	if c.SessionIdle <= 0 {
		c.SessionIdle = 12 * time.Hour
	}
	if c.SessionMax <= 0 {
		c.SessionMax = 7 * 24 * time.Hour
	}
	if c.SessionRecheck <= 0 {
		c.SessionRecheck = 15 * time.Second
	}
	if c.MaxStreamsPerSession <= 0 {
		c.MaxStreamsPerSession = 8
	}
	if c.RelativeEvery <= 0 {
		c.RelativeEvery = 30 * time.Second
	}
	if c.HandoffMaxAge <= 0 {
		c.HandoffMaxAge = 10 * time.Minute
	}
	if c.SignInWindowWait <= 0 {
		c.SignInWindowWait = 15 * time.Second
	}
	if c.SignInWindowPoll <= 0 {
		c.SignInWindowPoll = 400 * time.Millisecond
	}
	if c.URLEvery <= 0 {
		c.URLEvery = 250 * time.Millisecond
	}
	if c.PushSubscribeTimeout <= 0 {
		c.PushSubscribeTimeout = 15 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// server carries the configuration and the parts the routes hand to the
// handlers.
type server struct {
	cfg     Config
	deps    Deps
	auth    *auth
	guard   *guard
	pages   *pages
	metrics *Metrics
	push    pushSettings
	live    *liveStreams
	// answers begins, holds and sends every answer the UI takes.
	answers *answer.Service
}

// NewServer returns the UI's handler, mounted at cfg.BasePath.
func NewServer(cfg Config, deps Deps) http.Handler {
	cfg.defaults()
	if deps.Submitter == nil {
		// Nothing could send an answer: no card may offer one.
		cfg.Viewer = inbox.Viewer{WatchOnly: true}
	}
	if deps.Metrics == nil {
		deps.Metrics = &Metrics{}
	}
	if deps.Sessions == nil {
		deps.Sessions = newMemorySessions()
	}
	if deps.Streams == nil {
		deps.Streams = &Streams{}
	}
	if cfg.OIDC != nil && cfg.People == nil {
		cfg.People = NewPeopleList(nil, 0, cfg.Now)
	}
	s := &server{cfg: cfg, deps: deps, auth: newAuth(cfg, deps.Sessions), guard: newGuard(cfg, deps.Metrics), pages: newPages(cfg, deps), metrics: deps.Metrics,
		push: pushSettings{Buffer: cfg.PushBuffer, WriteTimeout: cfg.WriteTimeout, Heartbeat: cfg.Heartbeat, BatchEvery: cfg.BatchPushEvery}}
	maxStreams := cfg.MaxStreamsPerSession
	if !s.auth.enabled() {
		maxStreams = 0 // no sessions to count by
	}
	if s.auth.oidc != nil {
		s.pages.provider = s.auth.oidc.host()
		if deps.Routes != nil {
			s.auth.oidc.teamNames = func() []string { return deps.Routes.Table().TeamNames() }
		}
	}
	s.pages.assignees = s.auth.assignees
	s.live = newLiveStreams(maxStreams, cfg.SessionRecheck, s.auth.stillLive, cfg.Logger)
	if deps.Notifier != nil && s.auth.enabled() {
		// A device is notified only while the sign-in that subscribed it
		// counts, as a page's push stream is.
		deps.Notifier.WatchSessions(s.auth.devicesLive)
	}
	if !cfg.Viewer.Answers() {
		s.deps.Submitter = nil
	}
	s.answers = answer.New(answer.Config{Inbox: deps.Inbox, Submitter: s.deps.Submitter, Viewer: s.pages.viewer, Now: cfg.Now, Logger: cfg.Logger, UndoWindow: cfg.UndoWindow, Stopping: cfg.Stopping})
	h := s.routes()
	if cfg.BasePath != "/" {
		h = mountAt(cfg.BasePath, h)
	}
	return s.responseDeadline(s.readBody(h))
}

// mountAt serves h under base ("/forms/"): the prefix is stripped before
// routing, the bare prefix ("/forms") redirects to base, and anything
// outside it is not found. (A ServeMux pattern would misread a base path
// holding a space or braces.)
func mountAt(base string, h http.Handler) http.Handler {
	prefix := strings.TrimSuffix(base, "/")
	inner := http.StripPrefix(prefix, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == prefix:
			http.Redirect(w, r, base, http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, base):
			inner.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
