package app

import (
	"flag"
	"fmt"
	"net/netip"
	"time"
	"unicode/utf8"

	"github.com/aepforms/aepforms/web"
)

// accessConfig is who may use the UI: the operator secret or the named
// operators, the hosts and origins it answers, the proxy it trusts, and
// how long a sign-in lasts.
type accessConfig struct {
	operatorToken string
	operatorsFile string
	operators     []web.Operator // read from operatorsFile
	// operatorList is the operators as they change (the file read
	// again every operatorsReload).
	operatorList    *web.OperatorList
	operatorsReload time.Duration // --operators-reload
	allowHosts      []string
	embedOrigins    []string
	trustProxy      bool
	proxies         listFlag       // --trusted-proxy as given
	trustedProxy    []netip.Prefix // --trusted-proxy; empty: web.DefaultTrustedProxies
	sessionIdle     time.Duration  // --session-idle
	sessionMax      time.Duration  // --session-max
	sessionCheck    time.Duration  // --session-recheck
	maxStreams      int            // --max-streams-per-session
}

func (c *accessConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.StringVar(&c.operatorToken, "operator-token", "", "operator secret that unlocks the UI: the sign-in page, or Authorization: Bearer for scripts (env AEPFORMS_OPERATOR_TOKEN); at least 16 characters; required off loopback. The name typed at sign-in is a label, not checked (--operators-file checks it)")
	fs.StringVar(&c.operatorsFile, "operators-file", e.env("AEPFORMS_OPERATORS_FILE"), "named operators, one per line: name and the hash of their own secret (aepforms operator add NAME), so the name recorded as who answered is authenticated; mode 0600; instead of --operator-token, not with it (env AEPFORMS_OPERATORS_FILE)")
	fs.DurationVar(&c.operatorsReload, "operators-reload", e.dur("AEPFORMS_OPERATORS_RELOAD", 2*time.Second), "how often the --operators-file is looked at for changes: a changed secret or role holds from the next sign-in or session check (env AEPFORMS_OPERATORS_RELOAD)")
	c.allowHosts = e.list("AEPFORMS_ALLOW_HOSTS")
	fs.Var((*listFlag)(&c.allowHosts), "allow-host", "extra Host name accepted without an operator secret, repeatable; without a secret only localhost, 127.0.0.1 and [::1] are answered, against DNS rebinding (env AEPFORMS_ALLOW_HOSTS, comma-separated)")
	c.embedOrigins = e.list("AEPFORMS_EMBED_ORIGINS")
	fs.Var((*listFlag)(&c.embedOrigins), "embed-origin", "origin allowed to frame the UI and post to it (Mission Control), repeatable: sets CSP frame-ancestors, trusts the origin for cross-origin posts and makes the session cookie SameSite=None; Secure; Partitioned, so it needs TLS (env AEPFORMS_EMBED_ORIGINS)")
	fs.BoolVar(&c.trustProxy, "trust-proxy", e.boolean("AEPFORMS_TRUST_PROXY"), "served behind a TLS-terminating proxy: mark cookies Secure, and take the last X-Forwarded-For hop as the client's address for the guessing limits, from a --trusted-proxy peer only (env AEPFORMS_TRUST_PROXY)")
	c.proxies = e.list("AEPFORMS_TRUSTED_PROXIES")
	fs.Var(&c.proxies, "trusted-proxy", "with --trust-proxy: an address or prefix (like 10.0.0.0/8) the proxy connects from, repeatable; X-Forwarded-For from any other peer is ignored. Default: loopback and the private ranges (env AEPFORMS_TRUSTED_PROXIES, comma-separated)")
	fs.DurationVar(&c.sessionIdle, "session-idle", e.dur("AEPFORMS_SESSION_IDLE", 12*time.Hour), "sign an operator's browser out after this long unused (env AEPFORMS_SESSION_IDLE)")
	fs.DurationVar(&c.sessionMax, "session-max", e.dur("AEPFORMS_SESSION_MAX", 7*24*time.Hour), "sign an operator's browser out this long after signing in, however used (env AEPFORMS_SESSION_MAX)")
	fs.DurationVar(&c.sessionCheck, "session-recheck", e.dur("AEPFORMS_SESSION_RECHECK", 15*time.Second), "look up the session of each open page this often: one that expired, or was signed out on another replica, has its live updates ended (a sign-out on this one ends them at once) (env AEPFORMS_SESSION_RECHECK)")
	fs.IntVar(&c.maxStreams, "max-streams-per-session", e.integer("AEPFORMS_MAX_STREAMS_PER_SESSION", 8), "most live-update streams (open pages) one sign-in, or one script's operator name, holds at once; the next is refused with 429, so one session cannot take every connection (env AEPFORMS_MAX_STREAMS_PER_SESSION)")
}

func (c *accessConfig) check(_ *flag.FlagSet, e envDefaults) error {
	var err error
	if c.trustedProxy, err = web.ParseTrustedProxies(c.proxies); err != nil {
		return fmt.Errorf("%w: --trusted-proxy %v", ErrUsage, err)
	}
	if c.operatorToken == "" {
		c.operatorToken = e.env("AEPFORMS_OPERATOR_TOKEN")
	}
	if n := utf8.RuneCountInString(c.operatorToken); n > 0 && n < minOperatorSecret {
		return shortSecretError(n)
	}
	if c.sessionIdle <= 0 || c.sessionMax <= 0 {
		return fmt.Errorf("%w: --session-idle and --session-max must be positive", ErrUsage)
	}
	if err := positive("--session-recheck", c.sessionCheck); err != nil {
		return err
	}
	if err := atLeastOne("--max-streams-per-session", c.maxStreams); err != nil {
		return err
	}
	for _, o := range c.embedOrigins {
		if err := checkOrigin(o); err != nil {
			return fmt.Errorf("%w: --embed-origin %q: %v", ErrUsage, o, err)
		}
	}
	if c.operatorsFile != "" {
		if c.operatorToken != "" {
			return fmt.Errorf("%w: --operators-file and --operator-token (or AEPFORMS_OPERATOR_TOKEN) do not go together: with named operators each signs in with their own secret", ErrUsage)
		}
		if c.operators, err = loadOperators(c.operatorsFile); err != nil {
			return err
		}
		if err := positive("--operators-reload", c.operatorsReload); err != nil {
			return err
		}
		c.operatorList = web.NewOperatorList(c.operators)
	}
	return nil
}
