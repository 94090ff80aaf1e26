package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/respond"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/webpush"
	"github.com/aepforms/aepforms/web"
)

// serveConfig is everything `aepforms serve` is told by flags and env.
type serveConfig struct {
	addr          string
	relayURL      string // external relay; "" starts the embedded one
	relayHost     string
	relayPort     int
	relayToken    string
	tokenFile     string
	demo          bool
	operatorToken string
	operatorsFile string
	operators     []web.Operator // read from operatorsFile
	allowHosts    []string
	embedOrigins  []string
	basePath      string
	tlsCert       string
	tlsKey        string
	trustProxy    bool
	trustedProxy  []netip.Prefix // --trusted-proxy; empty: web.DefaultTrustedProxies
	agentName     string
	logFormat     string
	logLevel      string
	feedSilence   time.Duration
	heartbeat     time.Duration
	batchEvery    time.Duration
	ackWindow     time.Duration
	rosterIntvl   time.Duration
	// respondBackoff caps the respond path's reconnect wait
	// (--respond-backoff-max): an answer queued while the relay is away
	// waits on it.
	respondBackoff time.Duration
	demoEvery      time.Duration
	bodyTimeout    time.Duration
	respTimeout    time.Duration
	sessionIdle    time.Duration // --session-idle
	sessionMax     time.Duration // --session-max
	maxConns       int
	headerTimeout  time.Duration // --header-timeout
	idleTimeout    time.Duration // --idle-timeout
	demoPending    int
	// The inbox's bounds and each card's budgets (issue 14).
	maxPending  int
	maxBytes    sizeFlag
	maxControls int
	promptBytes sizeFlag
	pageCards   int           // waiting requests a page renders in full; the rest are rows
	pageRows    int           // rows on a page; the rest are on the next pages
	db          string        // the answer journal's file
	retention   time.Duration // how long the journal keeps an answer; 0 = for ever
	// resendMaxAge is the oldest a journaled answer may be to be sent
	// again after a restart; 0 sends none again.
	resendMaxAge time.Duration
	// replica names this process's resend leases on a shared journal
	// (--replica; default random); lease is how long one lasts unrenewed
	// (--lease): a replica that dies holding one has its answers sent
	// again by another once it lapses.
	replica        string
	lease          time.Duration
	dbWriteTimeout time.Duration // --db-write-timeout
	// settledKept is how many of this UI's settled answers the inbox
	// shows again after a restart, from the journal; older ones are in
	// the history.
	settledKept int

	// tokenPath is the file the relay token was read from or minted
	// into ("" when it was given by flag or env): the empty page names it.
	tokenPath string
	// announceWait bounds how long the start-up log waits for the parts
	// to start before it prints the URL to open (serve.go, announce).
	announceWait time.Duration
	// Web Push (issue 17): the VAPID subject that turns it on, the
	// testing-only loopback allowance, and whether notifications leave
	// the question's text out.
	vapidSubject      string
	pushAllowLoopback bool
	pushHideText      bool
	pushEvery         time.Duration // the least time between two pushes to one device
	pushSubTimeout    time.Duration // how long a page waits for the browser's push service to subscribe
	pushMaxDevices    int           // --push-max-devices
	ruleMaxRate       int           // --rule-max-rate
	ruleRateWindow    time.Duration // --rule-rate-window
	ruleMax           int           // --rule-max
	ruleRetry         time.Duration // --rule-retry-interval
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

// serveFlags is serve's flag set and what its flags give that is read
// after parsing: the docs' flags reference is generated from fs.
type serveFlags struct {
	fs        *flag.FlagSet
	c         *serveConfig
	proxies   listFlag
	retention *string
	dbEnv     string // AEPFORMS_DB, taken after parsing when it is a PostgreSQL URL
	env       Env
}

// parseServe reads serve's flags; env supplies the defaults (flags win).
func parseServe(args []string, env Env, stderr io.Writer) (serveConfig, error) {
	sf := newServeFlags(env)
	fs, c := sf.fs, sf.c
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: aepforms serve [flags]\n\n"+
			"Runs the operator UI. Without --relay it also starts the embedded AEP relay\n"+
			"(AEP_* settings apply to it); with --demo it starts the demo agent too.\n"+
			"Each flag falls back to the environment variable it names.\n\n")
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	if err != nil {
		return *c, err
	}
	return sf.check()
}

// newServeFlags declares serve's flags, their defaults taken from env.
func newServeFlags(env Env) *serveFlags {
	c := &serveConfig{announceWait: 5 * time.Second}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	sf := &serveFlags{fs: fs, c: c, env: env}
	envOr := func(k, def string) string {
		if v := env(k); v != "" {
			return v
		}
		return def
	}
	envDur := func(k string, def time.Duration) time.Duration {
		if d, err := time.ParseDuration(env(k)); err == nil {
			return d
		}
		return def
	}
	envBool := func(k string) bool { b, _ := strconv.ParseBool(env(k)); return b }

	fs.StringVar(&c.addr, "addr", envOr("AEPFORMS_ADDR", "127.0.0.1:8080"), "UI listen address (env AEPFORMS_ADDR); port 0 picks a free port, which the log names")
	fs.StringVar(&c.relayURL, "relay", env("AEP_RELAY"), "external AEP relay base URL, e.g. http://127.0.0.1:8787 (env AEP_RELAY); empty starts the embedded relay")
	fs.StringVar(&c.relayHost, "relay-host", envOr("AEP_HOST", "127.0.0.1"), "embedded relay bind address (env AEP_HOST)")
	port, _ := strconv.Atoi(envOr("AEP_PORT", "8787"))
	fs.IntVar(&c.relayPort, "relay-port", port, "embedded relay port (env AEP_PORT); 0 picks a free port")
	fs.StringVar(&c.relayToken, "token", "", "relay bearer token (env AEP_TOKEN); with the embedded relay and none set, one is minted once, written to --token-file and reused (the log names the file, never the token); with an external relay and none, the UI is watch-only and says so on every card")
	fs.StringVar(&c.tokenFile, "token-file", envOr("AEPFORMS_TOKEN_FILE", defaultTokenFile(env)), "where a minted relay token is kept, mode 0600; a file readable by others is refused (env AEPFORMS_TOKEN_FILE)")
	fs.BoolVar(&c.demo, "demo", envBool("AEPFORMS_DEMO"), "also run the demo agent against the relay; its expiring form is asked again after each timeout (env AEPFORMS_DEMO)")
	fs.StringVar(&c.operatorToken, "operator-token", "", "operator secret that unlocks the UI: the sign-in page, or Authorization: Bearer for scripts (env AEPFORMS_OPERATOR_TOKEN); at least 16 characters; required off loopback. The name typed at sign-in is a label, not checked (--operators-file checks it)")
	fs.StringVar(&c.operatorsFile, "operators-file", env("AEPFORMS_OPERATORS_FILE"), "named operators, one per line: name and the hash of their own secret (aepforms operator add NAME), so the name recorded as who answered is authenticated; mode 0600; instead of --operator-token, not with it (env AEPFORMS_OPERATORS_FILE)")
	c.allowHosts = listFromEnv(env("AEPFORMS_ALLOW_HOSTS"))
	fs.Var((*listFlag)(&c.allowHosts), "allow-host", "extra Host name accepted without an operator secret, repeatable; without a secret only localhost, 127.0.0.1 and [::1] are answered, against DNS rebinding (env AEPFORMS_ALLOW_HOSTS, comma-separated)")
	c.embedOrigins = listFromEnv(env("AEPFORMS_EMBED_ORIGINS"))
	fs.Var((*listFlag)(&c.embedOrigins), "embed-origin", "origin allowed to frame the UI and post to it (Mission Control), repeatable: sets CSP frame-ancestors, trusts the origin for cross-origin posts and makes the session cookie SameSite=None; Secure; Partitioned, so it needs TLS (env AEPFORMS_EMBED_ORIGINS)")
	fs.StringVar(&c.basePath, "base-path", envOr("AEPFORMS_BASE_PATH", "/"), "URL prefix the UI is served under, e.g. /forms/ (env AEPFORMS_BASE_PATH)")
	fs.StringVar(&c.tlsCert, "tls-cert", env("AEPFORMS_TLS_CERT"), "TLS certificate file: serve HTTPS directly, with --tls-key (env AEPFORMS_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", env("AEPFORMS_TLS_KEY"), "TLS key file, with --tls-cert (env AEPFORMS_TLS_KEY)")
	fs.BoolVar(&c.trustProxy, "trust-proxy", envBool("AEPFORMS_TRUST_PROXY"), "served behind a TLS-terminating proxy: mark cookies Secure, and take the last X-Forwarded-For hop as the client's address for the guessing limits, from a --trusted-proxy peer only (env AEPFORMS_TRUST_PROXY)")
	sf.proxies = listFromEnv(env("AEPFORMS_TRUSTED_PROXIES"))
	fs.Var(&sf.proxies, "trusted-proxy", "with --trust-proxy: an address or prefix (like 10.0.0.0/8) the proxy connects from, repeatable; X-Forwarded-For from any other peer is ignored. Default: loopback and the private ranges (env AEPFORMS_TRUSTED_PROXIES, comma-separated)")
	fs.StringVar(&c.agentName, "agent", envOr("AEPFORMS_AGENT", "aepforms"), "identity this UI sends commands as: {agent}/{operator name} when the operator gave a name (env AEPFORMS_AGENT)")
	fs.StringVar(&c.logFormat, "log-format", envOr("AEPFORMS_LOG_FORMAT", "text"), "log format: text or json (env AEPFORMS_LOG_FORMAT)")
	fs.StringVar(&c.logLevel, "log-level", envOr("AEPFORMS_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env AEPFORMS_LOG_LEVEL)")
	fs.DurationVar(&c.feedSilence, "feed-silence", envDur("AEPFORMS_FEED_SILENCE", 60*time.Second), "reconnect the relay feed after this long without a byte: twice the spec's 30s ping bound (env AEPFORMS_FEED_SILENCE)")
	fs.DurationVar(&c.heartbeat, "heartbeat", envDur("AEPFORMS_HEARTBEAT", 15*time.Second), "browser push heartbeat interval (env AEPFORMS_HEARTBEAT)")
	fs.DurationVar(&c.batchEvery, "batch-push-interval", envDur("AEPFORMS_BATCH_PUSH_INTERVAL", time.Second), "send each inbox page the 'Answer several at once' counts at most this often; the changes of a burst go as one (env AEPFORMS_BATCH_PUSH_INTERVAL)")
	fs.DurationVar(&c.ackWindow, "ack-window", envDur("AEPFORMS_ACK_WINDOW", 0), "wait this long for an agent's ack; 0 uses the agent's declared window, else 10s (env AEPFORMS_ACK_WINDOW)")
	fs.DurationVar(&c.rosterIntvl, "roster-interval", envDur("AEPFORMS_ROSTER_INTERVAL", 30*time.Second), "re-read the relay's roster (which agents are connected and take answers) this often, besides the moments it changes; a card's \"connected\" is at most this stale (env AEPFORMS_ROSTER_INTERVAL)")
	fs.DurationVar(&c.respondBackoff, "respond-backoff-max", envDur("AEPFORMS_RESPOND_BACKOFF_MAX", respond.DefaultBackoffMax), "the longest wait between the respond path's attempts to reconnect to the relay; answers queued while it is away wait on it (env AEPFORMS_RESPOND_BACKOFF_MAX)")
	fs.IntVar(&c.demoPending, "demo-max-pending", envInt(env, "AEPFORMS_DEMO_MAX_PENDING", agent.DefaultConfig().MaxExtra), "with --demo: most of its periodic questions left pending; an older one is dismissed first (env AEPFORMS_DEMO_MAX_PENDING)")
	fs.DurationVar(&c.demoEvery, "demo-every", envDur("AEPFORMS_DEMO_EVERY", 30*time.Second), "with --demo: ask one more question this often, 0 = never (env AEPFORMS_DEMO_EVERY)")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", envDur("AEPFORMS_BODY_TIMEOUT", 30*time.Second), "cut a client that takes longer to send a request's body, on any route: 408 and the connection closed (env AEPFORMS_BODY_TIMEOUT)")
	fs.DurationVar(&c.sessionIdle, "session-idle", envDur("AEPFORMS_SESSION_IDLE", 12*time.Hour), "sign an operator's browser out after this long unused (env AEPFORMS_SESSION_IDLE)")
	fs.DurationVar(&c.sessionMax, "session-max", envDur("AEPFORMS_SESSION_MAX", 7*24*time.Hour), "sign an operator's browser out this long after signing in, however used (env AEPFORMS_SESSION_MAX)")
	fs.DurationVar(&c.respTimeout, "response-timeout", envDur("AEPFORMS_RESPONSE_TIMEOUT", 30*time.Second), "cut a client that takes longer to read a response; the push stream bounds each write instead (env AEPFORMS_RESPONSE_TIMEOUT)")
	maxConns, err := strconv.Atoi(envOr("AEPFORMS_MAX_CONNS", "512"))
	if err != nil {
		maxConns = 512
	}
	fs.IntVar(&c.maxConns, "max-conns", maxConns, "most connections the UI holds open at once; past it the one waiting longest for its request (idle or slow) is closed, or, when all serve one, new ones wait (env AEPFORMS_MAX_CONNS)")
	fs.DurationVar(&c.headerTimeout, "header-timeout", envDur("AEPFORMS_HEADER_TIMEOUT", defaultHeaderTimeout), "cut a client that takes longer to send a request's header (env AEPFORMS_HEADER_TIMEOUT)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", envDur("AEPFORMS_IDLE_TIMEOUT", defaultIdleTimeout), "close a kept-alive connection idle this long (env AEPFORMS_IDLE_TIMEOUT)")
	fs.IntVar(&c.maxPending, "max-pending", envInt(env, "AEPFORMS_MAX_PENDING", 5000), "open questions kept; past it the agent holding the most loses its oldest (env AEPFORMS_MAX_PENDING)")
	c.maxBytes = envSize(env, "AEPFORMS_MAX_INBOX_BYTES", 64<<20)
	fs.Var(&c.maxBytes, "max-inbox-bytes", "raw request bytes kept, open and settled cards, in B, KiB, MiB or GiB; past it the agent holding the most bytes loses its oldest (env AEPFORMS_MAX_INBOX_BYTES)")
	fs.IntVar(&c.settledKept, "settled-kept", envInt(env, "AEPFORMS_SETTLED_KEPT", 20), "after a restart, the inbox shows this many of the latest answers sent from this UI and recorded by their agent again, settled; older ones are in History; 0 shows none (env AEPFORMS_SETTLED_KEPT)")
	fs.IntVar(&c.maxControls, "max-controls", envInt(env, "AEPFORMS_MAX_CONTROLS", 2000), "most form controls one card may need to be offered as a form; a bigger one is shown read-only (env AEPFORMS_MAX_CONTROLS)")
	c.promptBytes = envSize(env, "AEPFORMS_PROMPT_BYTES", 16<<10)
	fs.Var(&c.promptBytes, "prompt-bytes", "how much of a prompt a card shows, e.g. 16KiB; Show all fetches the rest (env AEPFORMS_PROMPT_BYTES)")
	fs.IntVar(&c.pageCards, "page-cards", envInt(env, "AEPFORMS_PAGE_CARDS", 50), "waiting questions the page shows in full, the most urgent; the rest are one-line rows that open in place (env AEPFORMS_PAGE_CARDS)")
	fs.IntVar(&c.pageRows, "page-rows", envInt(env, "AEPFORMS_PAGE_ROWS", 500), "one-line rows on a page; the rest are on the next pages (env AEPFORMS_PAGE_ROWS)")
	// A PostgreSQL URL in AEPFORMS_DB may carry a password: it is taken
	// after parsing, like the other secrets, so -h never prints it.
	sf.dbEnv = env("AEPFORMS_DB")
	dbDefault := envOr("AEPFORMS_DB", defaultDBFile(env))
	if isPostgresURL(sf.dbEnv) {
		dbDefault = defaultDBFile(env)
	}
	fs.StringVar(&c.db, "db", dbDefault, "the answer journal: a SQLite file only you can read, one serve at a time per file; or postgres://user@host/db (or host=… dbname=…), a PostgreSQL database several replicas share (env AEPFORMS_DB)")
	sf.retention = fs.String("history-retention", envOr("AEPFORMS_HISTORY_RETENTION", "90d"), "how long the journal keeps an answer, in days like 90d or a duration like 720h; 0 keeps every answer (env AEPFORMS_HISTORY_RETENTION)")
	fs.DurationVar(&c.resendMaxAge, "resend-max-age", envDur("AEPFORMS_RESEND_MAX_AGE", 10*time.Minute), "after a restart, send again a journaled answer the agent had not settled, if its question is still open and it is younger than this; 0 sends none again. Also the oldest an answer queued while the relay is away may be when it comes back (0: no limit) (env AEPFORMS_RESEND_MAX_AGE)")
	fs.StringVar(&c.vapidSubject, "vapid-subject", env("AEPFORMS_VAPID_SUBJECT"), "turns on Web Push notifications to the operators' devices: a mailto: or https: address push services can contact about this server, e.g. mailto:ops@example.com (env AEPFORMS_VAPID_SUBJECT)")
	fs.DurationVar(&c.pushEvery, "push-every", envDur("AEPFORMS_PUSH_EVERY", 10*time.Second), "at most one push to a device this often; questions arriving meanwhile go out as one \"N new questions\" (env AEPFORMS_PUSH_EVERY)")
	fs.DurationVar(&c.pushSubTimeout, "push-subscribe-timeout", envDur("AEPFORMS_PUSH_SUBSCRIBE_TIMEOUT", 15*time.Second), "how long the page waits for the browser's push service to subscribe a device before it says the service did not answer (env AEPFORMS_PUSH_SUBSCRIBE_TIMEOUT)")
	fs.IntVar(&c.pushMaxDevices, "push-max-devices", envInt(env, "AEPFORMS_PUSH_MAX_DEVICES", 20), "most devices one operator keeps subscribed to notifications; a new one replaces their oldest (env AEPFORMS_PUSH_MAX_DEVICES)")
	fs.BoolVar(&c.pushHideText, "push-hide-text", envBool("AEPFORMS_PUSH_HIDE_TEXT"), "notifications say only that a question waits, never its text (lock screens) (env AEPFORMS_PUSH_HIDE_TEXT)")
	// Testing only, never a flag: lets pushes go to an http: endpoint on
	// loopback (a fake push service in a test).
	c.pushAllowLoopback = env("AEPFORMS_PUSH_ALLOW_LOOPBACK") == "1"
	fs.StringVar(&c.replica, "replica", envOr("AEPFORMS_REPLICA", ""), "this replica's name on a shared PostgreSQL journal, under which it holds its answers' resend leases; a replica restarted under the same name resends its own at once, another waits for --lease. Default: random (a SQLite journal: the journal's own) (env AEPFORMS_REPLICA)")
	fs.DurationVar(&c.lease, "lease", envDur("AEPFORMS_LEASE", 30*time.Second), "how long a replica holds the resend lease of an answer waiting for the agent without renewing it (it renews every third of it); once lapsed, another replica sends the answer again (env AEPFORMS_LEASE)")
	fs.DurationVar(&c.dbWriteTimeout, "db-write-timeout", envDur("AEPFORMS_DB_WRITE_TIMEOUT", 10*time.Second), "a PostgreSQL journal's bound on each write (an answer's record, its states, making a rule): a database that stops answering fails that write, and the page says so, instead of holding the page (an answer whose record failed is not sent) (env AEPFORMS_DB_WRITE_TIMEOUT)")
	fs.IntVar(&c.ruleMaxRate, "rule-max-rate", envInt(env, "AEPFORMS_RULE_MAX_RATE", rules.DefaultMaxRate), "a rule (standing answer) that would answer more than this many requests within --rule-rate-window pauses itself instead, and the Rules page says why: a runaway agent asking the same thing in a loop (env AEPFORMS_RULE_MAX_RATE)")
	fs.IntVar(&c.ruleMax, "rule-max", envInt(env, "AEPFORMS_RULE_MAX", rules.DefaultMaxRules), "the most rules (standing answers) kept at once, paused ones included, expired ones not: making one more is refused until one is deleted or expires (env AEPFORMS_RULE_MAX)")
	fs.DurationVar(&c.ruleRateWindow, "rule-rate-window", envDur("AEPFORMS_RULE_RATE_WINDOW", rules.DefaultRateWindow), "the window --rule-max-rate counts a rule's answers in (env AEPFORMS_RULE_RATE_WINDOW)")
	fs.DurationVar(&c.ruleRetry, "rule-retry-interval", envDur("AEPFORMS_RULE_RETRY_INTERVAL", rules.DefaultRetryInterval), "when the journal fails a rule's look at a request (a database blip), the request is looked at again after between half of this and this (spread, so one outage's requests are not all read at once), the wait doubling while it keeps failing (up to 32 times this); meanwhile it waits on the page as any other (env AEPFORMS_RULE_RETRY_INTERVAL)")
	return sf
}

// check validates the parsed flags and takes the secrets from env.
func (sf *serveFlags) check() (serveConfig, error) {
	fs, c, env := sf.fs, sf.c, sf.env
	var err error
	if c.dbWriteTimeout <= 0 {
		return *c, fmt.Errorf("%w: --db-write-timeout %v: must be positive", ErrUsage, c.dbWriteTimeout)
	}
	if c.ruleRetry <= 0 {
		return *c, fmt.Errorf("%w: --rule-retry-interval %v: must be positive", ErrUsage, c.ruleRetry)
	}
	if c.ruleMaxRate <= 0 {
		return *c, fmt.Errorf("%w: --rule-max-rate %d: at least 1", ErrUsage, c.ruleMaxRate)
	}
	if c.ruleMax <= 0 {
		return *c, fmt.Errorf("%w: --rule-max %d: at least 1", ErrUsage, c.ruleMax)
	}
	if c.ruleRateWindow <= 0 {
		return *c, fmt.Errorf("%w: --rule-rate-window %v: must be positive", ErrUsage, c.ruleRateWindow)
	}
	if c.trustedProxy, err = web.ParseTrustedProxies(sf.proxies); err != nil {
		return *c, fmt.Errorf("%w: --trusted-proxy %v", ErrUsage, err)
	}
	if c.lease <= 0 {
		return *c, fmt.Errorf("%w: --lease %v: must be positive", ErrUsage, c.lease)
	}
	// Secrets come from env after parsing, so -h never prints them.
	if isPostgresURL(sf.dbEnv) && !flagSet(fs, "db") {
		c.db = sf.dbEnv
	}
	if c.relayToken == "" {
		c.relayToken = env("AEP_TOKEN")
	}
	if c.operatorToken == "" {
		c.operatorToken = env("AEPFORMS_OPERATOR_TOKEN")
	}
	if n := utf8.RuneCountInString(c.operatorToken); n > 0 && n < minOperatorSecret {
		return *c, shortSecretError(n)
	}
	if fs.NArg() > 0 {
		return *c, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if _, port, err := net.SplitHostPort(c.addr); err != nil || port == "" {
		return *c, fmt.Errorf("%w: --addr %q: want host:port, like 127.0.0.1:8080", ErrUsage, c.addr)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--demo-every", c.demoEvery}, {"--ack-window", c.ackWindow}, {"--feed-silence", c.feedSilence}, {"--heartbeat", c.heartbeat}, {"--batch-push-interval", c.batchEvery}, {"--body-timeout", c.bodyTimeout}, {"--response-timeout", c.respTimeout}, {"--resend-max-age", c.resendMaxAge}} {
		if d.v < 0 {
			return *c, fmt.Errorf("%w: %s %v: a duration cannot be negative", ErrUsage, d.name, d.v)
		}
	}
	if c.sessionIdle <= 0 || c.sessionMax <= 0 {
		return *c, fmt.Errorf("%w: --session-idle and --session-max must be positive", ErrUsage)
	}
	if c.respondBackoff <= 0 {
		return *c, fmt.Errorf("%w: --respond-backoff-max %v: must be positive", ErrUsage, c.respondBackoff)
	}
	if c.rosterIntvl <= 0 {
		return *c, fmt.Errorf("%w: --roster-interval %v: must be positive", ErrUsage, c.rosterIntvl)
	}
	if c.headerTimeout <= 0 || c.idleTimeout <= 0 {
		return *c, fmt.Errorf("%w: --header-timeout and --idle-timeout must be positive", ErrUsage)
	}
	if c.maxConns < 1 {
		return *c, fmt.Errorf("%w: --max-conns %d: at least 1", ErrUsage, c.maxConns)
	}
	if c.settledKept < 0 {
		return *c, fmt.Errorf("%w: --settled-kept must be 0 or more", ErrUsage)
	}
	if c.demoPending <= 0 {
		return *c, fmt.Errorf("%w: --demo-max-pending %d: at least 1", ErrUsage, c.demoPending)
	}
	if c.maxPending <= 0 || c.maxControls <= 0 {
		return *c, fmt.Errorf("%w: --max-pending and --max-controls must be positive", ErrUsage)
	}
	if c.pageCards <= 0 || c.pageRows <= 0 {
		return *c, fmt.Errorf("%w: --page-cards and --page-rows must be positive", ErrUsage)
	}
	if c.promptBytes > 1<<30 {
		return *c, fmt.Errorf("%w: --prompt-bytes %d: at most 1GiB", ErrUsage, c.promptBytes)
	}
	if c.retention, err = parseRetention(*sf.retention); err != nil {
		return *c, fmt.Errorf("%w: --history-retention %q: %v", ErrUsage, *sf.retention, err)
	}
	if c.pushMaxDevices <= 0 {
		return *c, fmt.Errorf("%w: --push-max-devices %d: at least 1", ErrUsage, c.pushMaxDevices)
	}
	if c.pushSubTimeout <= 0 {
		return *c, fmt.Errorf("%w: --push-subscribe-timeout %v: must be positive", ErrUsage, c.pushSubTimeout)
	}
	if c.pushEvery <= 0 {
		return *c, fmt.Errorf("%w: --push-every %v: must be positive", ErrUsage, c.pushEvery)
	}
	if c.vapidSubject != "" {
		if err := webpush.CheckSubject(c.vapidSubject); err != nil {
			return *c, fmt.Errorf("%w: --vapid-subject %q: a mailto: address or an https: URL, like mailto:ops@example.com", ErrUsage, c.vapidSubject)
		}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return *c, fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrUsage)
	}
	if c.relayURL != "" {
		u, err := url.Parse(c.relayURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return *c, fmt.Errorf("%w: --relay must be an http(s) URL like http://127.0.0.1:8787, got %q", ErrUsage, c.relayURL)
		}
	}
	for _, o := range c.embedOrigins {
		if err := checkOrigin(o); err != nil {
			return *c, fmt.Errorf("%w: --embed-origin %q: %v", ErrUsage, o, err)
		}
	}
	if c.operatorsFile != "" {
		if c.operatorToken != "" {
			return *c, fmt.Errorf("%w: --operators-file and --operator-token (or AEPFORMS_OPERATOR_TOKEN) do not go together: with named operators each signs in with their own secret", ErrUsage)
		}
		var err error
		if c.operators, err = loadOperators(c.operatorsFile); err != nil {
			return *c, err
		}
	}
	if !isLoopbackAddr(c.addr) && c.operatorToken == "" && c.operatorsFile == "" {
		return *c, errors.New("refusing to listen on " + c.addr + " without an operator secret: set --operator-token or AEPFORMS_OPERATOR_TOKEN, or --operators-file (anyone who reaches this UI can answer agents)")
	}
	return *c, nil
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

func listFromEnv(v string) []string {
	var l listFlag
	_ = l.Set(v)
	return l
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
