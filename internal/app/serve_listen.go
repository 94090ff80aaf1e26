package app

import (
	"flag"
	"fmt"
	"net"
	"time"
)

// listenConfig is where and how the UI listens: its address and path,
// TLS, and the bounds on each connection.
type listenConfig struct {
	addr          string
	basePath      string
	tlsCert       string
	tlsKey        string
	maxConns      int
	bodyTimeout   time.Duration
	respTimeout   time.Duration
	headerTimeout time.Duration // --header-timeout
	idleTimeout   time.Duration // --idle-timeout
}

func (c *listenConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.StringVar(&c.addr, "addr", e.str("AEPFORMS_ADDR", "127.0.0.1:8080"), "UI listen address (env AEPFORMS_ADDR); port 0 picks a free port, which the log names")
	fs.StringVar(&c.basePath, "base-path", e.str("AEPFORMS_BASE_PATH", "/"), "URL prefix the UI is served under, e.g. /forms/ (env AEPFORMS_BASE_PATH)")
	fs.StringVar(&c.tlsCert, "tls-cert", e.env("AEPFORMS_TLS_CERT"), "TLS certificate file: serve HTTPS directly, with --tls-key (env AEPFORMS_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", e.env("AEPFORMS_TLS_KEY"), "TLS key file, with --tls-cert (env AEPFORMS_TLS_KEY)")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", e.dur("AEPFORMS_BODY_TIMEOUT", 30*time.Second), "cut a client that takes longer to send a request's body, on any route: 408 and the connection closed (env AEPFORMS_BODY_TIMEOUT)")
	fs.DurationVar(&c.respTimeout, "response-timeout", e.dur("AEPFORMS_RESPONSE_TIMEOUT", 30*time.Second), "cut a client that takes longer to read a response; the push stream bounds each write instead (env AEPFORMS_RESPONSE_TIMEOUT)")
	fs.IntVar(&c.maxConns, "max-conns", e.integer("AEPFORMS_MAX_CONNS", 512), "most connections the UI holds open at once; past it the one waiting longest for its request (idle or slow) is closed, or, when all serve one, new ones wait (env AEPFORMS_MAX_CONNS)")
	fs.DurationVar(&c.headerTimeout, "header-timeout", e.dur("AEPFORMS_HEADER_TIMEOUT", defaultHeaderTimeout), "cut a client that takes longer to send a request's header (env AEPFORMS_HEADER_TIMEOUT)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", e.dur("AEPFORMS_IDLE_TIMEOUT", defaultIdleTimeout), "close a kept-alive connection idle this long (env AEPFORMS_IDLE_TIMEOUT)")
}

func (c *listenConfig) check(*flag.FlagSet, envDefaults) error {
	if _, port, err := net.SplitHostPort(c.addr); err != nil || port == "" {
		return fmt.Errorf("%w: --addr %q: want host:port, like 127.0.0.1:8080", ErrUsage, c.addr)
	}
	if err := notNegative("--body-timeout", c.bodyTimeout); err != nil {
		return err
	}
	if err := notNegative("--response-timeout", c.respTimeout); err != nil {
		return err
	}
	if c.headerTimeout <= 0 || c.idleTimeout <= 0 {
		return fmt.Errorf("%w: --header-timeout and --idle-timeout must be positive", ErrUsage)
	}
	if err := atLeastOne("--max-conns", c.maxConns); err != nil {
		return err
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrUsage)
	}
	return nil
}
