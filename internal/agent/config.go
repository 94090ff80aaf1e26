package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Sentinel errors of the package.
var (
	ErrConfig          = errors.New("agent: invalid config")
	ErrUnknownScenario = errors.New("agent: unknown scenario")
	ErrHelloRefused    = errors.New("agent: relay refused hello")
	ErrClosed          = errors.New("agent: stopped")
)

// Config configures an Agent. A zero field takes the value DefaultConfig
// gives it, so a literal naming only RelayURL works, except where zero is
// meaningful: Token "" (none), Every 0 (never), RejectRate 0, NeverAck and
// ReaskExpired false. serve --demo starts from DefaultConfig and sets
// ReaskExpired.
type Config struct {
	// RelayURL is the relay's base URL (http, https, ws or wss); the agent
	// connects to {RelayURL}/socket. Default http://127.0.0.1:8787.
	RelayURL string
	// Token authenticates to the relay (Authorization: Bearer). Empty sends
	// none: a relay without AEP_TOKEN accepts the agent but refuses every
	// command toward it (watch-only).
	Token string
	// Agent is the identity in hello and in every event's agent attribute.
	// Default "aepforms-demo".
	Agent string
	// Instance disambiguates processes in hello. Default "{Host}/{pid}".
	Instance string
	// Host is the host part of every event's source,
	// aep://{Host}/agent/{Agent}/session/{session}. Default the machine's
	// host name (characters outside [A-Za-z0-9.-] become '-'), or "localhost".
	Host string
	// Scenarios names the scenarios to run once each, in order; "all" (or
	// nil) means AllScenarios().
	Scenarios []string
	// Every asks one more question this often after the set, rotating
	// through RepeatableScenarios(); 0 never does. Default 30 s.
	Every time.Duration
	// Pending asks this many more deploy forms at once after the set, in
	// up to ten sessions of their own: an inbox of thousands of waiting
	// questions to look at (the page at scale). 0 asks none. The event
	// queue (MaxQueue) grows to hold them.
	Pending int
	// PermissionPrompts are the prompts the permission scenario asks,
	// one per permission request in turn (wrapping around); nil asks
	// its own, "Allow Bash to run `rm -rf ./build && make release` in
	// the project directory?". Each is asked about the tool Bash, named
	// by a tool.requested event the request's cause points to.
	PermissionPrompts []string
	// MaxExtra caps how many questions asked by Every are pending at once,
	// so a demo left running stays tidy: a tick finding that many first
	// dismisses the oldest (attention.resolved, resolution dismissed, as
	// an agent that stopped waiting may), then asks. Default 6.
	MaxExtra int
	// AckWindow is the ack window declared in hello
	// (capabilities.control.ack_window_ms). The agent acks synchronously, well
	// inside it. Default 10 s.
	AckWindow time.Duration
	// ExpiresIn is how far ahead the expiring form's expires_at lies; it
	// times out (attention.timeout) then if unanswered. Default 90 s.
	ExpiresIn time.Duration
	// ReaskExpired asks the expiring form again, in a new run of the same
	// session, each time it times out (serve --demo sets it so a newcomer
	// always finds one to answer). Default false.
	ReaskExpired bool
	// OOBResolveAfter is how long the informational (respond_via oob) form
	// stays pending before the agent answers it itself. Default 45 s.
	OOBResolveAfter time.Duration
	// Backoff is the first reconnect delay; it doubles per failed attempt up
	// to BackoffMax, with jitter, and resets after a hello. Default 250 ms.
	Backoff time.Duration
	// BackoffMax caps the reconnect delay. Default 10 s.
	BackoffMax time.Duration
	// Ping is how often the agent sends a ping frame. Default 30 s.
	Ping time.Duration
	// PongTimeout drops the connection when no frame arrived for this long.
	// Default 90 s.
	PongTimeout time.Duration
	// WriteTimeout bounds each frame write. Default 10 s.
	WriteTimeout time.Duration
	// DialTimeout bounds the WebSocket handshake plus the relay's hello.
	// Default 10 s.
	DialTimeout time.Duration
	// DrainTimeout is how long Run, once its ctx ends, keeps the connection to
	// deliver the closing events (pending requests dismissed, runs cancelled,
	// sessions ended). Default 2 s; negative skips the drain.
	DrainTimeout time.Duration
	// MaxFrame is the largest frame the agent reads. Default 16 MiB.
	MaxFrame int64
	// MaxQueue bounds the events waiting for a connection; when full the
	// oldest is dropped (and logged). Default 10000.
	MaxQueue int
	// MaxCommands bounds the dedupe state (one entry per distinct command);
	// the oldest entry is forgotten beyond it. Default 10000.
	MaxCommands int
	// MaxSessions bounds the sessions the agent remembers; beyond it the
	// oldest ended ones are forgotten (a command for one is then dropped,
	// as for any session the agent does not know). Default 1000.
	MaxSessions int
	// Capture is the capture level the events declare and the content they
	// hold; scenarios pinned lower (the metadata AskUserQuestion) declare
	// their own level when it is lower. metadata, redacted or full; default
	// full.
	Capture aep.Capture
	// RejectRate is the fraction (0..1) of otherwise valid answers the agent
	// refuses, alternating reasons refused and busy, so the nack paths of a
	// sender can be exercised. Default 0.
	RejectRate float64
	// NeverAck records commands but never acknowledges or executes them, so
	// a sender's ack-window timeout can be exercised. Default false.
	NeverAck bool
	// Commands, when set, is handed the handling of each command as it
	// arrives and decides when it runs: at once, later or never (the
	// e2e tests hold commands past an ack window, or lose them as a relay
	// dying with them would). nil runs each at once.
	Commands func(handle func())
	// Logger receives the agent's log; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Rand returns a number in [0,1) for RejectRate and backoff jitter; nil
	// uses math/rand/v2.
	Rand func() float64
}

// DefaultConfig returns the configuration `aepforms demo-agent` starts with:
// every scenario, the reference relay address, capture full.
func DefaultConfig() Config {
	return Config{
		RelayURL:        "http://127.0.0.1:8787",
		Agent:           "aepforms-demo",
		Scenarios:       []string{"all"},
		Every:           30 * time.Second,
		MaxExtra:        6,
		AckWindow:       10 * time.Second,
		ExpiresIn:       90 * time.Second,
		OOBResolveAfter: 45 * time.Second,
		Backoff:         250 * time.Millisecond,
		BackoffMax:      10 * time.Second,
		Ping:            30 * time.Second,
		PongTimeout:     90 * time.Second,
		WriteTimeout:    10 * time.Second,
		DialTimeout:     10 * time.Second,
		DrainTimeout:    2 * time.Second,
		MaxFrame:        16 << 20,
		MaxQueue:        10000,
		MaxCommands:     10000,
		MaxSessions:     1000,
		Capture:         aep.CaptureFull,
	}
}

// withDefaults fills zero fields from DefaultConfig; see Config for the
// fields whose zero is kept.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.RelayURL == "" {
		c.RelayURL = d.RelayURL
	}
	if c.Agent == "" {
		c.Agent = d.Agent
	}
	if c.Host == "" {
		c.Host = defaultHost()
	}
	if c.Instance == "" {
		c.Instance = fmt.Sprintf("%s/%d", c.Host, os.Getpid())
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = d.Scenarios
	}
	setDur := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	setDur(&c.AckWindow, d.AckWindow)
	setDur(&c.ExpiresIn, d.ExpiresIn)
	setDur(&c.OOBResolveAfter, d.OOBResolveAfter)
	setDur(&c.Backoff, d.Backoff)
	setDur(&c.BackoffMax, d.BackoffMax)
	setDur(&c.Ping, d.Ping)
	setDur(&c.PongTimeout, d.PongTimeout)
	setDur(&c.WriteTimeout, d.WriteTimeout)
	setDur(&c.DialTimeout, d.DialTimeout)
	if c.DrainTimeout == 0 {
		c.DrainTimeout = d.DrainTimeout
	}
	if c.Every < 0 {
		c.Every = 0
	}
	if c.MaxExtra <= 0 {
		c.MaxExtra = d.MaxExtra
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = d.MaxFrame
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = d.MaxQueue
	}
	if c.Pending < 0 {
		c.Pending = 0
	}
	c.MaxQueue = max(c.MaxQueue, c.Pending+d.MaxQueue)
	if c.MaxCommands <= 0 {
		c.MaxCommands = d.MaxCommands
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = d.MaxSessions
	}
	if c.Capture == aep.CaptureNone {
		// The zero value: an agent cannot ask anything at capture none (the
		// request's kind and prompt would go), so zero means the default.
		c.Capture = d.Capture
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return c
}

// validate reports a configuration the agent cannot run with.
func (c Config) validate() error {
	u, err := url.Parse(c.RelayURL)
	if err != nil {
		return fmt.Errorf("%w: relay URL: %v", ErrConfig, err)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return fmt.Errorf("%w: relay URL scheme %q (want http, https, ws or wss)", ErrConfig, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%w: relay URL %q has no host", ErrConfig, c.RelayURL)
	}
	if c.Capture < aep.CaptureMetadata || c.Capture > aep.CaptureFull {
		return fmt.Errorf("%w: capture %s (want metadata, redacted or full)", ErrConfig, c.Capture)
	}
	if c.RejectRate < 0 || c.RejectRate > 1 {
		return fmt.Errorf("%w: reject rate %v (want 0..1)", ErrConfig, c.RejectRate)
	}
	if _, err := resolveScenarios(c.Scenarios); err != nil {
		return err
	}
	return nil
}

// socketURL is {RelayURL}/socket, keeping a base path.
func (c Config) socketURL() string {
	u, _ := url.Parse(c.RelayURL) // validated
	u.Path = strings.TrimSuffix(u.Path, "/") + "/socket"
	u.RawPath = ""
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// defaultHost is the host name made safe for a URI authority.
func defaultHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return sanitizeHost(h)
}

func sanitizeHost(h string) string {
	b := []byte(strings.ToLower(h))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) == 0 {
		return "localhost"
	}
	return string(b)
}
