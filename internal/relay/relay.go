package relay

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Relay is an AEP 0.1 relay: HTTP emit and discovery, SSE consume,
// WebSocket duplex with subscriptions, roster and control routing, over
// bounded per-session replay buffers. Create it with New.
type Relay struct {
	cfg     Config
	log     *slog.Logger
	started time.Time

	// events keeps what is admitted: memory, or a JetStream stream.
	events eventLog

	mu       sync.Mutex // guards everything below
	store    *store
	subs     map[*subscriber]struct{}
	sse      int                  // open SSE streams
	conns    map[*wsConn]struct{} // open WebSocket connections (after hello)
	claims   map[string][]*wsConn // session -> live claimants, claim order
	shutting bool
	wg       sync.WaitGroup

	// rosterJSON (under mu) is the roster's entries as sent, built on the
	// first ask after the claims changed (nil: stale), so a burst of asks
	// over a large fleet costs one build.
	rosterJSON []byte

	// drain is cancelled when Shutdown starts; closing is its Done channel.
	drain      context.Context
	startDrain context.CancelFunc
	closing    <-chan struct{}
}

// subscriber is one SSE stream or one WebSocket subscription.
type subscriber struct {
	filter  *aep.Filter // nil matches everything
	ceiling aep.Capture // CaptureFull: as received
	out     *outbox
	id      string                  // the WS subscription id as the peer's JSON, "" for SSE
	conn    *wsConn                 // nil for SSE
	pos     map[string]aep.Position // WS: highest delivered per session (writer-owned)
}

func (s *subscriber) match(ev *aep.Event) bool { return s.filter == nil || s.filter.Match(ev) }

// New returns a relay configured by cfg (zero fields take DefaultConfig's)
// that keeps its events in memory. A cfg naming NATS servers needs Open.
func New(cfg Config) *Relay {
	if len(cfg.NATS.URLs) > 0 {
		panic("relay: New keeps events in memory; a relay on NATS is made by Open")
	}
	r := newRelay(cfg)
	r.events = memLog{r}
	return r
}

// Open returns a relay configured by cfg: in memory as New does, or, when
// cfg.NATS lists servers, keeping its events in a JetStream stream shared
// by every relay on it. It returns once the relay holds what the stream
// held when it connected, or ctx's error.
func Open(ctx context.Context, cfg Config) (*Relay, error) {
	if len(cfg.NATS.URLs) == 0 {
		return New(cfg), nil
	}
	r := newRelay(cfg)
	js, err := openJetStream(ctx, r)
	if err != nil {
		return nil, err
	}
	r.events = js
	return r, nil
}

func newRelay(cfg Config) *Relay {
	cfg = cfg.withDefaults()
	drain, startDrain := context.WithCancel(context.Background())
	return &Relay{
		drain:      drain,
		startDrain: startDrain,
		closing:    drain.Done(),
		cfg:        cfg,
		log:        cfg.Logger,
		started:    cfg.Now(),
		store:      newStore(cfg.Buffer, cfg.MaxSessions, cfg.BufferBytes),
		subs:       make(map[*subscriber]struct{}),
		conns:      make(map[*wsConn]struct{}),
		claims:     make(map[string][]*wsConn),
	}
}

// Handler serves the relay's routes: /events (GET discovery, POST
// ingest), /.well-known/aep, /stream (SSE), /socket (WebSocket) and
// /healthz.
func (r *Relay) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", r.handleHealthz)
	mux.Handle("GET /events", r.authed(http.HandlerFunc(r.handleDiscovery)))
	mux.Handle("GET /.well-known/aep", r.authed(http.HandlerFunc(r.handleDiscovery)))
	mux.Handle("POST /events", r.authed(http.HandlerFunc(r.handleIngest)))
	mux.Handle("GET /stream", r.authed(http.HandlerFunc(r.handleStream)))
	mux.Handle("GET /socket", r.authed(http.HandlerFunc(r.handleSocket)))
	return r.bodyDeadline(mux)
}

// Stats counts what the relay holds: sessions buffered, subscribers (SSE
// streams plus WebSocket subscriptions) and WebSocket connections.
type Stats struct {
	Sessions    int `json:"sessions"`
	Subscribers int `json:"subscribers"`
	Connections int `json:"connections"`
}

// Stats returns the current counts.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Stats{Sessions: len(r.store.sessions), Subscribers: len(r.subs), Connections: len(r.conns)}
}

// Shutdown drains the relay: new streams and sockets are refused, every
// SSE stream gets `: shutting-down` and ends, every socket gets a closing
// frame with its delivered positions and close 1001. It returns when all
// have ended, or ctx's error after closing the sockets that had not.
func (r *Relay) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.shutting = true
	r.startDrain()
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	defer r.events.close()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	conns := make([]*wsConn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		c.out.fail()
		_ = c.raw.Close()
	}
	return ctx.Err()
}

// enter registers a long-lived handler with the drain; false when the relay
// is already draining.
func (r *Relay) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shutting {
		return false
	}
	r.wg.Add(1)
	return true
}

// authorized reports whether req carries the configured token (always true
// when none is configured).
func (r *Relay) authorized(req *http.Request) bool {
	if r.cfg.Token == "" {
		return true
	}
	want := []byte(r.cfg.Token)
	if h := req.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[7:])), want) == 1 {
			return true
		}
	}
	if q := req.URL.Query().Get("access_token"); q != "" {
		return subtle.ConstantTimeCompare([]byte(q), want) == 1
	}
	return false
}

// authed answers 401 to a request without the token.
func (r *Relay) authed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !r.authorized(req) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aep"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: "unauthorized", Detail: "this relay needs its token: Authorization: Bearer or ?access_token="})
			return
		}
		h.ServeHTTP(w, req)
	})
}

// catchUp brings this relay up to everything its log kept before a
// replay is planned (see eventLog.catchUp); when the log does not answer
// within the store timeout, the replay serves what is held.
func (r *Relay) catchUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.NATS.Timeout)
	defer cancel()
	if err := r.events.catchUp(ctx); err != nil {
		r.log.Warn("relay: replay from what this relay holds; the event store did not answer", "err", err)
	}
}

// attach registers sub for live delivery and returns its replay, both
// under the lock, so no event falls between replay and live and none is
// in both.
func (r *Relay) attach(sub *subscriber, from resume) *replay {
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := r.planLocked(sub, from)
	r.subs[sub] = struct{}{}
	return rp
}

// history returns the replay for a subscription that will not go live.
func (r *Relay) history(sub *subscriber, from resume) *replay {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.planLocked(sub, from)
}

func (r *Relay) planLocked(sub *subscriber, from resume) *replay {
	if from.none() {
		return &replay{}
	}
	rp := r.store.plan(from, sub.match)
	return &rp
}

func (r *Relay) detach(sub *subscriber) {
	r.mu.Lock()
	delete(r.subs, sub)
	r.mu.Unlock()
}

// ingest keeps events (admission dedupe on (source, id)) and fans them
// out as received, redeliveries included. from is the socket they arrived
// on (nil for HTTP): a sequenced event makes that socket a claimant of its
// session. It returns how many were already kept (duplicates), or
// ErrUnavailable when the log could not keep them in time.
func (r *Relay) ingest(ctx context.Context, evs []*aep.Event, from *wsConn) (duplicates int, err error) {
	if from != nil {
		var owned []string
		r.mu.Lock()
		for _, ev := range evs {
			if _, sequenced := ev.Seq(); sequenced && ev.SessionScoped() && r.claimLocked(from, ev.Session()) {
				owned = append(owned, ev.Session())
			}
		}
		r.mu.Unlock()
		if len(owned) > 0 {
			if err := r.events.settle(ctx); err != nil {
				r.log.Warn("relay: a claim not yet known to the other relays", "err", err)
			}
			r.redeliver(ctx, from, owned)
		}
	}
	dups, err := r.events.append(ctx, evs)
	return len(dups), err
}

// fanOutLocked queues the events, as one batch, to every subscriber that
// any of them matches, without blocking.
func (r *Relay) fanOutLocked(evs []*aep.Event) {
	if len(r.subs) == 0 {
		return
	}
	var b *batch
	for s := range r.subs {
		if !slices.ContainsFunc(evs, s.match) {
			continue
		}
		if b == nil {
			b = newBatch(evs)
		}
		s.out.pushEvents(item{kind: itemEvents, sub: s, batch: b})
	}
}
