package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/relay"
)

// relayDrain is how long a relay drains on shutdown before it is forced
// (and the process exits 1).
const relayDrain = 5 * time.Second

// embeddedRelayDrain is the drain window of the relay inside `serve`. Its
// own clients (the UI's feed and respond path, the demo agent) stop at the
// same moment it starts draining, and a WebSocket close handshake may wait
// up to 5 s to write its close frame and 5 s more to read the peer's
// (github.com/coder/websocket): a 5 s window could end inside one and fail
// a clean stop. Drains normally end at once; this only bounds a slow one.
const embeddedRelayDrain = 12 * time.Second

// relaySettings are the relay's knobs under the reference stack's names.
type relaySettings struct {
	host        string
	port        int
	token       string
	buffer      int
	bufferBytes int64
	maxSessions int
	maxBody     int64
	maxBatch    int
	maxFrom     int // 0: the session cap
	ssePing     time.Duration
	wsPing      time.Duration
	closeWait   time.Duration
	noCommands  bool
	// The relay's own connection budget and deadlines: a crowd
	// on its port cannot take what the UI needs.
	maxConns      int
	idleTimeout   time.Duration
	headerTimeout time.Duration
	bodyTimeout   time.Duration
	// On NATS JetStream instead of memory (relay.NATSConfig): the
	// servers, comma-separated; empty keeps the events in memory.
	nats         string
	natsStream   string
	natsSubject  string
	natsReplicas int
	natsClaimTTL time.Duration
}

// Defaults of the relay's connection budget and deadlines.
const (
	defaultRelayMaxConns = 1024
	defaultIdleTimeout   = 2 * time.Minute
	defaultHeaderTimeout = 10 * time.Second
)

// relayEnv maps each flag to its environment variable.
var relayEnv = map[string]string{
	"host": "AEP_HOST", "port": "AEP_PORT", "token": "AEP_TOKEN", "buffer": "AEP_BUFFER",
	"buffer-bytes": "AEP_BUFFER_BYTES",
	"max-sessions": "AEP_MAX_SESSIONS", "max-body": "AEP_MAX_BODY", "max-batch": "AEP_MAX_BATCH", "max-from": "AEP_MAX_FROM",
	"max-conns": "AEP_MAX_CONNS", "idle-timeout": "AEP_IDLE_TIMEOUT", "header-timeout": "AEP_HEADER_TIMEOUT", "body-timeout": "AEP_BODY_TIMEOUT",
	"close-wait": "AEP_CLOSE_WAIT", "nats": "AEP_NATS_URL", "nats-stream": "AEP_NATS_STREAM", "nats-subject": "AEP_NATS_SUBJECT", "nats-replicas": "AEP_NATS_REPLICAS",
	"nats-claim-ttl": "AEP_NATS_CLAIM_TTL",
}

// register declares the relay flags with the reference defaults. The env
// is applied after parsing (applyEnv), so -h never prints a token.
func (s *relaySettings) register(fs *flag.FlagSet) {
	d := relay.DefaultConfig()
	fs.StringVar(&s.host, "host", "127.0.0.1", "bind address (env AEP_HOST)")
	fs.IntVar(&s.port, "port", 8787, "port, 0 picks a free one (env AEP_PORT)")
	fs.StringVar(&s.token, "token", "", "bearer token every request but bare /healthz must carry, in the header or ?access_token=; unset = open to observe and emit, and watch-only: every command refused unauthorized (env AEP_TOKEN)")
	fs.IntVar(&s.buffer, "buffer", d.Buffer, "replay buffer per session, in events, advertised as replay.buffer (env AEP_BUFFER)")
	fs.Int64Var(&s.bufferBytes, "buffer-bytes", d.BufferBytes, "what the replay buffers of every session hold together, in bytes of events (each counting 256 more); past it the fullest loses its oldest events, and a resume from before them is told replay-exhausted (env AEP_BUFFER_BYTES)")
	fs.IntVar(&s.maxSessions, "max-sessions", d.MaxSessions, "sessions held; the least recently written is evicted (env AEP_MAX_SESSIONS)")
	fs.Int64Var(&s.maxBody, "max-body", d.MaxBody, "largest POST body or WebSocket frame, in bytes; past it 413 payload-too-large (env AEP_MAX_BODY)")
	fs.IntVar(&s.maxBatch, "max-batch", d.MaxBatch, "most events in one NDJSON batch; past it 413 too-many-events (env AEP_MAX_BATCH)")
	fs.IntVar(&s.maxFrom, "max-from", 0, "most resume positions in one from; 0 = the session cap (env AEP_MAX_FROM)")
	fs.DurationVar(&s.ssePing, "sse-ping", d.SSEPing, "interval of the \": ping\" comment on /stream")
	fs.BoolVar(&s.noCommands, "keep-no-commands", false, "route commands but keep none in the sessions' history (as a relay may: AEP-0004 §4 says SHOULD keep), for testing a UI's restart; replays show only their acks")
	fs.IntVar(&s.maxConns, "max-conns", defaultRelayMaxConns, "most connections held open at once; past it the one waiting longest for its request (idle or slow) is closed, or, when all serve one, new ones wait. Inside serve it is lowered, with a warning, to what the open-files limit leaves after the UI's --max-conns and a reserve of 128 (env AEP_MAX_CONNS)")
	fs.DurationVar(&s.idleTimeout, "idle-timeout", defaultIdleTimeout, "close a kept-alive connection idle this long (env AEP_IDLE_TIMEOUT)")
	fs.DurationVar(&s.headerTimeout, "header-timeout", defaultHeaderTimeout, "cut a client that takes longer to send a request's header (env AEP_HEADER_TIMEOUT)")
	fs.DurationVar(&s.bodyTimeout, "body-timeout", d.ReadTimeout, "cut a client that takes longer to send a request's body, on any route: 408 request-timeout and the connection closed (env AEP_BODY_TIMEOUT)")
	fs.DurationVar(&s.closeWait, "close-wait", d.CloseWait, "how long a socket the relay closes (its drain at a stop, a slow or silent peer) waits for the peer's answer to its close frame before dropping the connection (env AEP_CLOSE_WAIT)")
	nd := relay.NATSConfig{}.WithDefaults()
	fs.StringVar(&s.nats, "nats", "", "keep events and commands in NATS JetStream on these servers (nats://host:4222, comma-separated) instead of memory; every relay on the same stream is one relay (env AEP_NATS_URL)")
	fs.StringVar(&s.natsStream, "nats-stream", nd.Stream, "with --nats: the JetStream stream's name (env AEP_NATS_STREAM)")
	fs.StringVar(&s.natsSubject, "nats-subject", nd.Subject, "with --nats: the first token of the relay's subjects, one per relay sharing the servers (env AEP_NATS_SUBJECT)")
	fs.IntVar(&s.natsReplicas, "nats-replicas", nd.Replicas, "with --nats: the stream's replicas; 3 survives the loss of one server of three, a single server needs 1 (env AEP_NATS_REPLICAS)")
	fs.DurationVar(&s.natsClaimTTL, "nats-claim-ttl", nd.ClaimTTL, "with --nats: how long the record that a relay claims a session lives unless that relay writes it again (every third of it); a relay that died holding claims leaves none past it (env AEP_NATS_CLAIM_TTL)")
	fs.DurationVar(&s.wsPing, "ws-ping", d.WSPing, "interval of the ping frame on /socket (a silent peer is dropped after 3 intervals)")
}

// applyEnv fills every flag not given on the command line from its
// environment variable (flags win).
func (s *relaySettings) applyEnv(fs *flag.FlagSet, env Env) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, key := range relayEnv {
		v := env(key)
		if set[name] || v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("%s=%q: %v", key, redactIf(name == "token", v), err)
		}
	}
	if s.port < 0 || s.port > 65535 {
		return fmt.Errorf("port %d is out of range", s.port)
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"buffer", int64(s.buffer)}, {"buffer-bytes", s.bufferBytes}, {"max-sessions", int64(s.maxSessions)}, {"max-body", s.maxBody}, {"max-batch", int64(s.maxBatch)}, {"max-from", int64(s.maxFrom)}, {"max-conns", int64(s.maxConns)},
		{"idle-timeout", int64(s.idleTimeout)}, {"header-timeout", int64(s.headerTimeout)}, {"body-timeout", int64(s.bodyTimeout)}, {"close-wait", int64(s.closeWait)},
		{"nats-replicas", int64(s.natsReplicas)}, {"nats-claim-ttl", int64(s.natsClaimTTL)}} {
		if n.v < 0 || (n.v == 0 && n.name != "max-from") {
			return fmt.Errorf("--%s must be positive, got %d", n.name, n.v)
		}
	}
	return nil
}

func redactIf(secret bool, v string) string {
	if secret {
		return "[redacted]"
	}
	return v
}

// redactURLs drops the credentials (user:password@ or token@) from
// server URLs for the log.
func redactURLs(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		if p, err := url.Parse(u); err == nil && p.User != nil {
			p.User = url.User("[redacted]")
			u = p.String()
		}
		out[i] = u
	}
	return out
}

func (s relaySettings) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// config is the relay.Config these settings describe.
func (s relaySettings) config(logger *slog.Logger) relay.Config {
	cfg := relay.DefaultConfig()
	cfg.Token = s.token
	cfg.Buffer, cfg.MaxSessions, cfg.MaxBody, cfg.MaxBatch = s.buffer, s.maxSessions, s.maxBody, s.maxBatch
	cfg.MaxFrom = s.maxFrom
	cfg.BufferBytes = s.bufferBytes
	cfg.KeepNoCommands = s.noCommands
	cfg.ReadTimeout = s.bodyTimeout
	cfg.CloseWait = s.closeWait
	if cfg.MaxFrom == 0 {
		cfg.MaxFrom = s.maxSessions
	}
	if s.ssePing > 0 {
		cfg.SSEPing = s.ssePing
	}
	if s.wsPing > 0 {
		cfg.WSPing, cfg.WSPongTimeout = s.wsPing, 3*s.wsPing
	}
	for _, u := range strings.Split(s.nats, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.NATS.URLs = append(cfg.NATS.URLs, u)
		}
	}
	cfg.NATS.Stream, cfg.NATS.Subject, cfg.NATS.Replicas = s.natsStream, s.natsSubject, s.natsReplicas
	cfg.NATS.ClaimTTL = s.natsClaimTTL
	cfg.Logger = logger
	return cfg
}

// serverConfig is how startRelay serves the relay these settings describe.
func (s relaySettings) serverConfig(logger *slog.Logger, drain time.Duration) relayServerConfig {
	return relayServerConfig{Addr: s.addr(), Relay: s.config(logger), Drain: drain,
		MaxConns: s.maxConns, IdleTimeout: s.idleTimeout, HeaderTimeout: s.headerTimeout}
}

// relayServerConfig says where and how startRelay serves a relay.
type relayServerConfig struct {
	Addr  string        // listen address; port 0 picks a free port
	Relay relay.Config  // the relay itself
	Drain time.Duration // drain time on shutdown before forcing; 0 = 5 s
	// Started, when set, is given the relay once it serves (for healthz counts).
	Started func(*relay.Relay)
	// MaxConns caps the connections held open (limitListener); 0 = 1024.
	MaxConns int
	// IdleTimeout closes a kept-alive connection idle this long; 0 = 2 min.
	IdleTimeout time.Duration
	// HeaderTimeout cuts a client slower to send a header; 0 = 10 s.
	HeaderTimeout time.Duration
}

// startRelay listens on cfg.Addr and serves a relay until ctx ends. It
// returns the bound address at once; wait blocks until the relay has
// drained (nil), the drain was forced after cfg.Drain (an error with exit
// status 1), or the server failed.
func startRelay(ctx context.Context, cfg relayServerConfig, logger *slog.Logger) (addr string, wait func() error, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Drain <= 0 {
		cfg.Drain = relayDrain
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultRelayMaxConns
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = defaultHeaderTimeout
	}
	inner, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return "", nil, fmt.Errorf("relay: listen: %w", err)
	}
	rl, err := relay.Open(ctx, cfg.Relay)
	if err != nil {
		_ = inner.Close()
		return "", nil, err
	}
	if n := cfg.Relay.NATS; len(n.URLs) > 0 {
		logger.Info("relay events kept in NATS JetStream", "stream", n.Stream, "subject", n.Subject, "servers", strings.Join(redactURLs(n.URLs), ","))
	}
	onFull, onShed := capWarning(logger, "relay", "AEP_MAX_CONNS", cfg.MaxConns)
	ln := newLimitListener(inner, cfg.MaxConns, onFull, onShed)
	srv := &http.Server{
		Handler:           rl.Handler(),
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln.govern(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr = ln.Addr().String()
	logger.Info("relay listening on http://" + addr)
	if cfg.Relay.Token != "" {
		logger.Info("relay auth: token required")
	} else {
		logger.Warn("relay auth: open, watch-only: commands refused (set AEP_TOKEN to route control)")
	}
	if cfg.Started != nil {
		cfg.Started(rl)
	}
	wait = func() error {
		select {
		case err := <-served:
			return fmt.Errorf("relay: serve: %w", err)
		case <-ctx.Done():
		}
		dctx, cancel := context.WithTimeout(context.Background(), cfg.Drain)
		defer cancel()
		srvDone := make(chan error, 1)
		go func() { srvDone <- srv.Shutdown(dctx) }()
		rerr := rl.Shutdown(dctx)
		serr := <-srvDone
		if rerr != nil || serr != nil {
			_ = srv.Close()
			<-served
			return &exitError{code: 1, err: fmt.Errorf("relay: drain did not finish within %s: %w", cfg.Drain, errors.Join(rerr, serr))}
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("relay: serve: %w", err)
		}
		logger.Info("relay drained")
		return nil
	}
	return addr, wait, nil
}

// runRelay is `aepforms relay`: the embedded AEP 0.1 relay alone.
func runRelay(ctx context.Context, args []string, env Env, _ io.Reader, _, stderr io.Writer) error {
	s, err := parseRelay(args, env, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if soft, hard, ok := raiseOpenFiles(); ok {
		logger.Info("open files limit", "soft", soft, "hard", hard, "max_conns", s.maxConns)
	}
	_, wait, err := startRelay(ctx, s.serverConfig(logger, relayDrain), logger)
	if err != nil {
		return err
	}
	return wait()
}

// parseRelay reads `aepforms relay`'s flags; env supplies the defaults
// (flags win). Usage problems are written to stderr and wrap ErrUsage.
func parseRelay(args []string, env Env, stderr io.Writer) (relaySettings, error) {
	var s relaySettings
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aepforms relay [flags]")
		fmt.Fprintln(stderr, "\nRuns the embedded AEP 0.1 relay: POST /events, GET /stream (SSE), /socket (WebSocket), /healthz.")
		fmt.Fprintln(stderr, "Each flag falls back to its AEP_* environment variable, then to the reference default.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	s.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return s, err
		}
		return s, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "aepforms relay: unexpected argument %q\n", fs.Arg(0))
		return s, fmt.Errorf("%w: unexpected argument", ErrUsage)
	}
	if err := s.applyEnv(fs, env); err != nil {
		fmt.Fprintf(stderr, "aepforms relay: %v\n", err)
		return s, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return s, nil
}
