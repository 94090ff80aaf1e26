package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serveConfig is everything `aepforms serve` is told by flags and env,
// one group per concern, each with its own flags and checks.
type serveConfig struct {
	listenConfig
	accessConfig
	oidcConfig
	upstreamConfig
	journalConfig
	limitsConfig
	pushConfig
	rulesConfig
	routesConfig
	claimConfig
	demoConfig
	logConfig

	// announceWait bounds how long the start-up log waits for the parts
	// to start before it prints the URL to open (serve.go, announce).
	announceWait time.Duration
}

// flagGroup is one concern's flags: it declares them, their defaults
// from env, and checks what they were given.
type flagGroup interface {
	register(fs *flag.FlagSet, e envDefaults)
	// check validates the parsed flags; fs tells which were given, e
	// supplies the secrets, which are taken after parsing so -h never
	// prints them.
	check(fs *flag.FlagSet, e envDefaults) error
}

// groups lists c's flag groups in the order their checks run.
func (c *serveConfig) groups() []flagGroup {
	return []flagGroup{&c.listenConfig, &c.accessConfig, &c.oidcConfig, &c.upstreamConfig, &c.journalConfig,
		&c.limitsConfig, &c.pushConfig, &c.rulesConfig, &c.routesConfig, &c.claimConfig, &c.demoConfig, &c.logConfig}
}

// serveFlags is serve's flag set and the config its flags fill: the
// docs' flags reference is generated from fs.
type serveFlags struct {
	fs  *flag.FlagSet
	c   *serveConfig
	env envDefaults
}

// parseServe reads serve's flags; env supplies the defaults (flags win).
func parseServe(args []string, env Env, stderr io.Writer) (serveConfig, error) {
	sf := newServeFlags(env)
	fs := sf.fs
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: aepforms serve [flags]\n\n"+
			"Runs the operator UI. Without --relay it also starts the embedded AEP relay\n"+
			"(AEP_* settings apply to it); with --demo it starts the demo agent too.\n"+
			"Each flag falls back to the environment variable it names.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return *sf.c, err
	}
	return sf.check()
}

// newServeFlags declares serve's flags, their defaults taken from env.
func newServeFlags(env Env) *serveFlags {
	sf := &serveFlags{
		fs:  flag.NewFlagSet("serve", flag.ContinueOnError),
		c:   &serveConfig{announceWait: 5 * time.Second},
		env: envDefaults{env: env, bad: new([]error)},
	}
	for _, g := range sf.c.groups() {
		g.register(sf.fs, sf.env)
	}
	return sf
}

// check runs every group's checks, then the one that spans two: a UI
// reachable from other machines needs an operator secret.
func (sf *serveFlags) check() (serveConfig, error) {
	c := sf.c
	if sf.fs.NArg() > 0 {
		return *c, fmt.Errorf("%w: unexpected argument %q", ErrUsage, sf.fs.Arg(0))
	}
	if err := sf.env.unread(); err != nil {
		return *c, err
	}
	for _, g := range c.groups() {
		if err := g.check(sf.fs, sf.env); err != nil {
			return *c, err
		}
	}
	if !isLoopbackAddr(c.addr) && c.operatorToken == "" && c.operatorsFile == "" && c.oidcIssuer == "" {
		return *c, errors.New("refusing to listen on " + c.addr + " without an operator secret: set --operator-token or AEPFORMS_OPERATOR_TOKEN, --operators-file, or --oidc-issuer (anyone who reaches this UI can answer agents)")
	}
	return *c, nil
}

// envDefaults reads flags' defaults from the environment. A value that
// does not read (AEPFORMS_CLAIM_IDLE=ten) is kept in bad, and refused at
// start as a bad flag is, naming its variable: never silently the default.
type envDefaults struct {
	env Env
	bad *[]error
}

// refuse keeps the error of env variable k's value v, which is not want.
func (e envDefaults) refuse(k, v, want string) {
	if e.bad != nil {
		*e.bad = append(*e.bad, fmt.Errorf("%w: %s=%q: %s (flags fall back to it; unset it or give a value that reads)", ErrUsage, k, v, want))
	}
}

// unread is the first env value that did not read, nil when all did.
func (e envDefaults) unread() error {
	if e.bad == nil || len(*e.bad) == 0 {
		return nil
	}
	return (*e.bad)[0]
}

// str is env variable k, or def when unset.
func (e envDefaults) str(k, def string) string {
	if v := e.env(k); v != "" {
		return v
	}
	return def
}

// dur is the duration in env variable k, or def when unset.
func (e envDefaults) dur(k string, def time.Duration) time.Duration {
	v := e.env(k)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.refuse(k, v, "not a duration (like 90s, 10m or 1h)")
		return def
	}
	return d
}

// boolean is env variable k read as a bool; false when unset.
func (e envDefaults) boolean(k string) bool {
	v := e.env(k)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.refuse(k, v, "not true or false (or 1 or 0)")
	}
	return b
}

// integer is the whole number in env variable k, or def when unset; the
// flag it is the default of checks its range, as for a value given to it.
func (e envDefaults) integer(k string, def int) int {
	v := e.env(k)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		e.refuse(k, v, "not a whole number")
		return def
	}
	return n
}

// size is the size in env variable k (parseSize), or def when unset.
func (e envDefaults) size(k string, def int64) sizeFlag {
	v := e.env(k)
	if v == "" {
		return sizeFlag(def)
	}
	n, err := parseSize(v)
	if err != nil {
		e.refuse(k, v, "not a size (like 16384, 16KiB or 64MiB)")
		return sizeFlag(def)
	}
	return sizeFlag(n)
}

// list is env variable k, comma-separated.
func (e envDefaults) list(k string) []string { return listFromEnv(e.env(k)) }

// notNegative refuses a negative duration given to the flag name.
func notNegative(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: %s %v: a duration cannot be negative", ErrUsage, name, d)
	}
	return nil
}

// positive refuses a duration of zero or less given to the flag name.
func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: %s %v: must be positive", ErrUsage, name, d)
	}
	return nil
}

// atLeastOne refuses a count below 1 given to the flag name.
func atLeastOne(name string, n int) error {
	if n < 1 {
		return fmt.Errorf("%w: %s %d: at least 1", ErrUsage, name, n)
	}
	return nil
}

// listFlag is a repeatable flag whose env form is comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func listFromEnv(v string) []string {
	var l listFlag
	_ = l.Set(v)
	return l
}

// minOperatorSecret is the shortest operator secret serve accepts, in
// characters: shorter ones are guessed (the guessing limits only slow
// guessing down).
const minOperatorSecret = 16

// shortSecretError refuses an operator secret of n characters and offers
// a freshly generated one (256 random bits, hex) to use instead.
func shortSecretError(n int) error {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	return fmt.Errorf("%w: the operator secret (--operator-token or AEPFORMS_OPERATOR_TOKEN) is %d characters; at least %d are needed. "+
		"Here is a freshly generated one to use:\n\n  %s\n", ErrUsage, n, minOperatorSecret, hex.EncodeToString(raw))
}

// defaultTokenFile is $XDG_CONFIG_HOME/aepforms/relay-token, or
// $HOME/.config/aepforms/relay-token.
func defaultTokenFile(env Env) string {
	dir := env("XDG_CONFIG_HOME")
	if dir == "" {
		home := env("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "aepforms", "relay-token")
}

// defaultDBFile is $XDG_STATE_HOME/aepforms/aepforms.db, or
// $HOME/.local/state/aepforms/aepforms.db.
func defaultDBFile(env Env) string {
	dir := env("XDG_STATE_HOME")
	if dir == "" {
		home := env("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "aepforms", "aepforms.db")
}

// parseRetention reads a retention: a whole number of days ("90d") or a
// Go duration ("720h"); never negative.
func parseRetention(v string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days > 100*365 {
			return 0, errors.New("want a number of days like 90d, or a duration like 720h")
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, errors.New("want a number of days like 90d, or a duration like 720h")
		}
	}
	if d < 0 {
		return 0, errors.New("a retention cannot be negative")
	}
	return d, nil
}

// isLoopbackAddr reports whether a listen address binds only loopback.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkOrigin accepts a web origin as browsers send it: scheme http or
// https, a host, an optional port, nothing else (no path, query, user or
// spaces), since it goes into frame-ancestors and the trusted origins.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	switch {
	case err != nil || strings.ContainsAny(o, " \t\r\n;,'\""):
		return errors.New("want an origin like https://mission-control.example.com")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the scheme must be http or https")
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return errors.New("an origin is scheme://host[:port] only (no path, query or user)")
	case u.Path == "/":
		return errors.New("drop the trailing slash: browsers send the origin without it")
	}
	return nil
}
