package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routes"
	"github.com/aepforms/aepforms/web"
)

// serving is one run of `aepforms serve`: what its start steps made,
// for the steps after them and for stop.
type serving struct {
	cfg    serveConfig
	env    Env
	logger *slog.Logger

	// A stop (a signal: the caller's ctx, stopping) is taken in order,
	// each part with its own context: ctx for the UI's parts, relayCtx
	// for the embedded relay, which stops last.
	stopping  context.Context
	ctx       context.Context
	cancel    context.CancelFunc
	relayCtx  context.Context
	stopRelay context.CancelFunc

	tlsConfig *tls.Config
	jr        journalStore
	ln        net.Listener
	uiLn      *limitListener
	relayURL  string
	token     string
	embedded  bool
	// relayDone reports the embedded relay's end (nil at once for an
	// external relay: nothing to wait for).
	relayDone chan error
	g         *serveGraph
	uiURL     string
	started   *inbox.Subscription // for announce, taken before the parts start
	wg        sync.WaitGroup      // the parts' goroutines
	stopDemo  func()
	srv       *http.Server
	served    chan error

	serveErr, relayErr error
	relayEnded         bool
}

// serveStep is one named start step.
type serveStep struct {
	name  string
	start func() error
}

func newServing(stopping context.Context, cfg serveConfig, env Env, logger *slog.Logger) *serving {
	s := &serving{cfg: cfg, env: env, logger: logger, stopping: stopping, stopDemo: func() {}, relayDone: make(chan error, 1), served: make(chan error, 1)}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(stopping))
	s.relayCtx, s.stopRelay = context.WithCancel(context.WithoutCancel(stopping))
	return s
}

// steps are serve's start steps, in order: a failing one stops the start.
func (s *serving) steps() []serveStep {
	return []serveStep{
		// Load the key pair before anything starts, so a bad one is an
		// error at start-up, not after the log said "open https://...".
		{"TLS key pair", s.loadTLS},
		// A routes file that does not read stops serve, naming the
		// problem, before anything starts.
		{"routes file", s.loadRoutes},
		// Open the answer journal first: a journal in use by another
		// serve, exposed or damaged stops everything before it starts.
		{"answer journal", s.openJournal},
		// Take the UI's address next: if it is busy, nothing else starts.
		{"UI listener", s.listen},
		{"relay", s.startRelay},
		{"parts", s.startParts},
		{"demo agent", s.startDemo},
		{"announce", s.startAnnounce},
		{"UI server", s.startServer},
	}
}

func (s *serving) loadTLS() error {
	if s.cfg.tlsCert == "" {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(s.cfg.tlsCert, s.cfg.tlsKey)
	if err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	s.tlsConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	return nil
}

func (s *serving) loadRoutes() error {
	if s.cfg.routesFile == "" {
		return nil
	}
	f, err := routes.Load(s.cfg.routesFile, s.logger.With("part", "routes"))
	if err != nil {
		return fmt.Errorf("--routes: %w", err)
	}
	s.cfg.routes = f
	return nil
}

func (s *serving) openJournal() error {
	jr, err := openJournal(s.stopping, s.cfg.db, leaseConfig{replica: s.cfg.replica, lease: s.cfg.lease, writeTimeout: s.cfg.dbWriteTimeout}, s.logger)
	if err != nil {
		return err
	}
	s.jr = jr
	return nil
}

func (s *serving) listen() error {
	ln, err := listenUI(s.cfg.addr)
	if err != nil {
		return err
	}
	onFull, onShed := capWarning(s.logger, "UI", "--max-conns", s.cfg.maxConns)
	s.uiLn = newLimitListener(ln, s.cfg.maxConns, onFull, onShed)
	s.ln = s.uiLn
	return nil
}

// startRelay starts the embedded relay, minting its token on first use,
// unless --relay names another.
func (s *serving) startRelay() error {
	s.relayURL, s.token = s.cfg.relayURL, s.cfg.relayToken
	s.embedded = s.relayURL == ""
	if !s.embedded {
		connBudgets(s.logger, s.cfg.maxConns, 0)
		if s.token == "" {
			s.logger.Warn("no AEP_TOKEN for the external relay: watch-only, answers cannot be sent")
		}
		s.relayDone <- nil
		return nil
	}
	if s.token == "" {
		token, path, err := loadOrMintToken(s.cfg.tokenFile)
		if err != nil {
			return err
		}
		s.token, s.cfg.tokenPath = token, path
		s.logger.Info("relay token (for local agent adapters) is in " + path)
	}
	rs, err := embeddedRelaySettings(s.env)
	if err != nil {
		return err
	}
	rs.host, rs.port, rs.token = s.cfg.relayHost, s.cfg.relayPort, s.token
	rs.maxConns = connBudgets(s.logger, s.cfg.maxConns, rs.maxConns)
	logger := s.logger.With("part", "relay")
	addr, wait, err := startRelay(s.relayCtx, rs.serverConfig(logger, embeddedRelayDrain), logger)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s is taken (another relay?). Either use it: aepforms serve --relay http://%s (with its AEP_TOKEN), or move the embedded relay: aepforms serve --relay-port 0", rs.addr(), rs.addr())
		}
		return err
	}
	s.relayURL = "http://" + addr
	// The embedded relay's wait returns early only if it failed: then
	// the UI has nothing to show, and stops rather than serve stale cards.
	go func() { s.relayDone <- wait() }()
	return nil
}

// startParts builds the parts against the relay and starts them.
func (s *serving) startParts() error {
	s.g = newServeGraph(s.cfg, s.relayURL, s.token, s.jr, s.logger)
	scheme := "http"
	if s.cfg.tlsCert != "" {
		scheme = "https"
	}
	s.uiURL = scheme + "://" + browsableAddr(s.ln.Addr()) + web.CleanBasePath(s.cfg.basePath)
	s.g.linkBase = s.uiURL
	if s.cfg.publicURL != "" {
		s.g.linkBase = strings.TrimSuffix(s.cfg.publicURL, "/") + web.CleanBasePath(s.cfg.basePath)
	}
	s.logger.Info("aepforms UI listening on " + s.uiURL)
	// Subscribed before the parts start, so no change is missed: the URL
	// to open is the start-up log's last line (announce).
	s.started = s.g.in.Subscribe(256)
	s.logAccess()
	s.g.start(s.ctx, s.goRun)
	return nil
}

// logAccess says how the UI is reached: sign-in, embedding.
func (s *serving) logAccess() {
	cfg := s.cfg
	if cfg.operatorToken != "" {
		s.logger.Info("operator sign-in required (operator secret set)")
	}
	if len(cfg.operators) > 0 {
		s.logger.Info("operator sign-in required: each with their own name and secret", "operators", len(cfg.operators))
	}
	if len(cfg.embedOrigins) > 0 {
		s.logger.Info("embedding allowed", "origins", strings.Join(cfg.embedOrigins, " "))
		if s.tlsConfig == nil && !cfg.trustProxy {
			s.logger.Warn("--embed-origin needs HTTPS: the session cookie is SameSite=None; Secure, which browsers refuse over plain http (use --tls-cert/--tls-key, or --trust-proxy behind a TLS proxy)")
		}
	}
}

// goRun runs a long-lived part; stop waits for every one.
func (s *serving) goRun(name string, f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil && s.ctx.Err() == nil {
			s.logger.Error(name+" stopped", "err", err)
		}
	}()
}

// startDemo starts the demo agent with its own stop, which stop calls
// first.
func (s *serving) startDemo() error {
	if s.g.demo == nil {
		return nil
	}
	demoCtx, demoCancel := context.WithCancel(s.ctx)
	demoDone := make(chan struct{})
	go func() {
		defer close(demoDone)
		if err := s.g.demo.Run(demoCtx); err != nil && demoCtx.Err() == nil {
			s.logger.Error("demo agent stopped", "err", err)
		}
	}()
	s.stopDemo = func() {
		demoCancel()
		<-demoDone
	}
	return nil
}

func (s *serving) startAnnounce() error {
	s.goRun("announce", func() error {
		defer s.started.Close()
		announce(s.ctx, s.g, s.started, s.cfg.announceWait)
		s.logger.Info("open " + s.uiURL + " in your browser")
		return nil
	})
	return nil
}

func (s *serving) startServer() error {
	s.srv = &http.Server{
		Handler:           s.g.handler,
		ReadHeaderTimeout: s.cfg.headerTimeout,
		IdleTimeout:       s.cfg.idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.uiLn.govern(s.srv)
	go func() {
		if s.tlsConfig != nil {
			s.srv.TLSConfig = s.tlsConfig
			s.served <- s.srv.ServeTLS(s.ln, "", "")
		} else {
			s.served <- s.srv.Serve(s.ln)
		}
	}()
	return nil
}

// waitForEnd returns at a stop (the caller's signal), when the UI's
// server ends, or when the embedded relay fails.
func (s *serving) waitForEnd() {
	watchRelay := s.relayDone
	if !s.embedded {
		watchRelay = nil
	}
	select {
	case <-s.stopping.Done():
	case <-s.ctx.Done():
	case s.serveErr = <-s.served:
	case s.relayErr = <-watchRelay:
		s.relayEnded = true
		s.logger.Error("embedded relay stopped; stopping", "err", s.relayErr)
	}
}

// stop ends the parts in order: the demo agent first, while the relay
// still carries its goodbyes; then the UI's server, its push streams and
// the parts, whose last journal writes are kept; the embedded relay
// last, so nothing still running sees its connection lost.
func (s *serving) stop() error {
	s.stopDemo()
	s.cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = s.srv.Shutdown(sctx)
	if err := s.g.streams.Wait(sctx); err != nil {
		s.logger.Warn("push streams still open at the stop", "err", err)
	}
	s.wg.Wait()
	// The inbox's last journal writes (made off its lock, in order) are
	// kept before the journal closes.
	if err := s.g.in.Flush(sctx); err != nil {
		s.logger.Error("answer journal: the last answer states were not kept", "err", err)
	}
	s.stopRelay()
	if !s.relayEnded {
		s.relayErr = <-s.relayDone
	}
	if s.serveErr != nil && !errors.Is(s.serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", s.serveErr)
	}
	s.logger.Info("aepforms stopped")
	return s.relayErr
}

// release closes what the steps opened, however the run ended.
func (s *serving) release() {
	s.stopRelay()
	s.cancel()
	if s.ln != nil {
		s.ln.Close()
	}
	if s.jr != nil {
		s.jr.Close()
	}
}
