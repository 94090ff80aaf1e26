package app

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/web"
)

// runServe is `aepforms serve`: the operator UI, with the embedded relay
// unless --relay names one, and with --demo the demo agent.
func runServe(ctx context.Context, args []string, env Env, _ io.Reader, _, stderr io.Writer) error {
	cfg, err := parseServe(args, env, stderr)
	if err != nil {
		return serveUsage(stderr, err)
	}
	logger, err := newLogger(stderr, cfg.logFormat, cfg.logLevel)
	if err != nil {
		return serveUsage(stderr, err)
	}
	var tlsConfig *tls.Config
	if cfg.tlsCert != "" {
		// Load the key pair before anything starts, so a bad one is an
		// error at start-up, not after the log said "open https://...".
		pair, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	// Open the answer journal first: a journal in use by another serve,
	// exposed or damaged stops everything before it starts.
	jr, err := openJournal(ctx, cfg.db, leaseConfig{replica: cfg.replica, lease: cfg.lease, writeTimeout: cfg.dbWriteTimeout}, logger)
	if err != nil {
		return err
	}
	defer jr.Close()
	// Take the UI's address next: if it is busy, nothing else starts.
	ln, err := listenUI(cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	onFull, onShed := capWarning(logger, "UI", "--max-conns", cfg.maxConns)
	uiLn := newLimitListener(ln, cfg.maxConns, onFull, onShed)
	ln = uiLn
	// A stop (a signal: the caller's ctx) is taken in order, each part
	// with its own context: the demo agent first, while the relay still
	// carries its goodbyes; then the UI's parts; the embedded relay last,
	// so nothing still running sees its connection lost.
	stopping := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(stopping))
	defer cancel()
	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(stopping))
	defer stopRelay()

	relayURL, token := cfg.relayURL, cfg.relayToken
	relayWait := func() error { return nil }
	embedded := relayURL == ""
	if relayURL == "" {
		if token == "" {
			var path string
			if token, path, err = loadOrMintToken(cfg.tokenFile); err != nil {
				return err
			}
			cfg.tokenPath = path
			logger.Info("relay token (for local agent adapters) is in " + path)
		}
		rs, err := embeddedRelaySettings(env)
		if err != nil {
			return err
		}
		rs.host, rs.port, rs.token = cfg.relayHost, cfg.relayPort, token
		rs.maxConns = connBudgets(logger, cfg.maxConns, rs.maxConns)
		addr, wait, err := startRelay(relayCtx, rs.serverConfig(logger.With("part", "relay"), embeddedRelayDrain), logger.With("part", "relay"))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("%s is taken (another relay?). Either use it: aepforms serve --relay http://%s (with its AEP_TOKEN), or move the embedded relay: aepforms serve --relay-port 0", rs.addr(), rs.addr())
			}
			return err
		}
		relayURL, relayWait = "http://"+addr, wait
	} else {
		connBudgets(logger, cfg.maxConns, 0)
		if token == "" {
			logger.Warn("no AEP_TOKEN for the external relay: watch-only, answers cannot be sent")
		}
	}

	g := newServeGraph(cfg, relayURL, token, jr, logger)
	scheme := "http"
	if cfg.tlsCert != "" {
		scheme = "https"
	}
	uiURL := scheme + "://" + browsableAddr(ln.Addr()) + web.CleanBasePath(cfg.basePath)
	logger.Info("aepforms UI listening on " + uiURL)
	// Subscribed before the parts start, so no change is missed: the URL
	// to open is the start-up log's last line (announce).
	started := g.in.Subscribe(256)
	if cfg.operatorToken != "" {
		logger.Info("operator sign-in required (operator secret set)")
	}
	if len(cfg.operators) > 0 {
		logger.Info("operator sign-in required: each with their own name and secret", "operators", len(cfg.operators))
	}
	if len(cfg.embedOrigins) > 0 {
		logger.Info("embedding allowed", "origins", strings.Join(cfg.embedOrigins, " "))
		if tlsConfig == nil && !cfg.trustProxy {
			logger.Warn("--embed-origin needs HTTPS: the session cookie is SameSite=None; Secure, which browsers refuse over plain http (use --tls-cert/--tls-key, or --trust-proxy behind a TLS proxy)")
		}
	}

	var wg sync.WaitGroup
	goRun := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				logger.Error(name+" stopped", "err", err)
			}
		}()
	}
	g.start(ctx, goRun)
	stopDemo := func() {}
	if g.demo != nil {
		demoCtx, demoCancel := context.WithCancel(ctx)
		demoDone := make(chan struct{})
		go func() {
			defer close(demoDone)
			if err := g.demo.Run(demoCtx); err != nil && demoCtx.Err() == nil {
				logger.Error("demo agent stopped", "err", err)
			}
		}()
		stopDemo = func() {
			demoCancel()
			<-demoDone
		}
	}
	goRun("announce", func() error {
		defer started.Close()
		announce(ctx, g, started, cfg.announceWait)
		logger.Info("open " + uiURL + " in your browser")
		return nil
	})
	srv := &http.Server{
		Handler:           g.handler,
		ReadHeaderTimeout: cfg.headerTimeout,
		IdleTimeout:       cfg.idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	uiLn.govern(srv)
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			srv.TLSConfig = tlsConfig
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	// The embedded relay's wait returns early only if it failed: then the
	// UI has nothing to show, and stops rather than serve stale cards.
	relayDone := make(chan error, 1)
	if embedded {
		go func() { relayDone <- relayWait() }()
	} else {
		relayDone <- nil // an external relay: nothing to wait for at the end
	}
	var serveErr, relayErr error
	relayEnded := false
	watchRelay := relayDone
	if !embedded {
		watchRelay = nil
	}
	select {
	case <-stopping.Done():
	case <-ctx.Done():
	case serveErr = <-served:
	case relayErr = <-watchRelay:
		relayEnded = true
		logger.Error("embedded relay stopped; stopping", "err", relayErr)
	}
	stopDemo()
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	if err := g.streams.Wait(sctx); err != nil {
		logger.Warn("push streams still open at the stop", "err", err)
	}
	wg.Wait()
	// The inbox's last journal writes (made off its lock, in order) are
	// kept before the journal closes.
	if err := g.in.Flush(sctx); err != nil {
		logger.Error("answer journal: the last answer states were not kept", "err", err)
	}
	stopRelay()
	if !relayEnded {
		relayErr = <-relayDone
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	logger.Info("aepforms stopped")
	return relayErr
}

// serveUsage prints a command-line problem as `aepforms serve: ...` and
// returns it (exit 2); other errors pass through.
func serveUsage(stderr io.Writer, err error) error {
	if errors.Is(err, ErrUsage) {
		fmt.Fprintf(stderr, "aepforms serve: %s\n", strings.TrimPrefix(err.Error(), ErrUsage.Error()+": "))
	}
	return err
}

// listenUI listens on the UI's address (IPv4 only for an IPv4 literal,
// so 0.0.0.0 means what it says), naming the way on when it is taken.
func listenUI(addr string) (net.Listener, error) {
	network := "tcp"
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
			network = "tcp4"
		}
	}
	ln, err := net.Listen(network, addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s is taken: choose another address for the UI with --addr (for example --addr 127.0.0.1:0 for any free port)", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// browsableAddr is an address to open in a browser: a listener on every
// interface (0.0.0.0, [::]) is reached at 127.0.0.1 from this machine.
func browsableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// embeddedRelaySettings reads the AEP_* relay settings for the embedded relay.
func embeddedRelaySettings(env Env) (relaySettings, error) {
	var rs relaySettings
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rs.register(fs)
	_ = fs.Parse(nil)
	err := rs.applyEnv(fs, env)
	return rs, err
}

// newLogger builds the slog logger for --log-format and --log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: use debug, info, warn or error", ErrUsage, level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: use text or json", ErrUsage, format)
}

// announce waits, at most wait, until the parts have logged their start:
// the feed and the respond path connected and, with the demo agent, its
// questions delivered to the relay and in the inbox. The URL to open is
// then the last line of the start-up log, not lost among the parts'.
func announce(ctx context.Context, g *serveGraph, changes *inbox.Subscription, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var demoChanged <-chan struct{}
	for {
		if g.demo != nil {
			demoChanged = g.demo.Changed()
		}
		if startedUp(g) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes.C():
			if !ok {
				return
			}
		case <-demoChanged:
		}
	}
}

// startedUp reports whether the parts of g are up (announce).
func startedUp(g *serveGraph) bool {
	if !g.in.Status().FeedConnected || (g.respond != nil && !g.respond.Connected()) {
		return false
	}
	if g.demo == nil {
		return true
	}
	ss := g.demo.Sessions()
	for _, s := range ss {
		for _, q := range s.Requests {
			if !q.Delivered {
				return false
			}
		}
	}
	return len(ss) > 0 && len(g.in.Cards(inbox.Query{})) > 0
}
