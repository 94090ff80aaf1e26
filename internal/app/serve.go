package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// runServe is `aepforms serve`: the operator UI, with the embedded relay
// unless --relay names one, and with --demo the demo agent. Its steps
// start the parts in order; stop ends them in the order they must end.
func runServe(ctx context.Context, args []string, env Env, _ io.Reader, _, stderr io.Writer) error {
	cfg, err := parseServe(args, env, stderr)
	if err != nil {
		return serveUsage(stderr, err)
	}
	logger, err := newLogger(stderr, cfg.logFormat, cfg.logLevel)
	if err != nil {
		return serveUsage(stderr, err)
	}
	s := newServing(ctx, cfg, env, logger)
	defer s.release()
	for _, step := range s.steps() {
		if err := step.start(); err != nil {
			return err
		}
		logger.Debug("started", "step", step.name)
	}
	s.waitForEnd()
	return s.stop()
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
	// The relay inside serve keeps its events in memory: AEP_NATS_URL is
	// for `aepforms relay`, which several nodes run on one stream.
	rs.nats = ""
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
