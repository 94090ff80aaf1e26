package respond

import (
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	// RelayURL is the relay's base URL (http, https, ws or wss); the client
	// connects to {RelayURL}/socket. Required.
	RelayURL string
	// Token is the relay's bearer token, sent as an Authorization header.
	// Empty sends none (a relay without a token is watch-only and refuses
	// every command "unauthorized").
	Token string
	// Agent is the sender identity: the hello's identity.agent and the
	// command's agent attribute. Default "aepforms". A submission's By
	// (the operator's name) is appended as "{Agent}/{By}" in the command's
	// agent; the hello keeps Agent alone.
	Agent string
	// Instance is the hello's identity.instance. Default "{hostname}/{pid}".
	Instance string
	// Source is the commands' source URI. It must stay stable across
	// restarts: targets dedupe on (source, id). Default
	// "aep://{hostname}/ui/aepforms".
	Source string

	// MaxFrame is the largest frame read from the relay, in bytes. Default
	// 16 MiB (the reference relay's body limit).
	MaxFrame int64
	// Queue is how many submissions may wait to be sent. Default 1024.
	Queue int
	// MaxInFlight is how many commands are worked on at once. Each holds one
	// subscription on the socket, so it must stay under the relay's
	// per-connection subscription cap (the embedded relay's is 64).
	// Default 32.
	MaxInFlight int

	// AckWindow, when set, overrides every target's declared ack window
	// (tests use short ones). Zero uses the roster entry's
	// control.ack_window_ms, else DefaultAckWindow.
	AckWindow time.Duration
	// Retries is how many times a command is resent (identical bytes, same
	// id) after an ack window of silence. Zero means the default, 2;
	// negative means none.
	Retries int
	// ReplayWait is how long a replay check waits, after the relay confirms
	// the subscription, for a buffered ack to arrive. Default 500 ms.
	ReplayWait time.Duration
	// ConnectWait is how long a command waits for a relay connection before
	// it is reported "unreachable" (never sent) or "timeout" (sent before
	// the connection was lost). Default 10 s.
	ConnectWait time.Duration

	// AgentWait is how long a queued command (no relay connection when
	// it was due), once the relay is back, waits for its session's agent
	// to be on the relay again (the roster lists it) before it is sent
	// anyway: after a relay restart the agents reattach on their own
	// schedule, and a command that arrives first is refused no-route.
	// The roster is re-read every RosterPoll meanwhile. Defaults 10 s and
	// 200 ms. A relay without the roster frame is not waited on.
	AgentWait, RosterPoll time.Duration

	// DialTimeout bounds the WebSocket handshake and the wait for the
	// relay's hello. Default 10 s.
	DialTimeout time.Duration
	// WriteTimeout bounds every frame written. Default 10 s.
	WriteTimeout time.Duration
	// PingInterval is how often the client sends a ping frame. Default 30 s.
	PingInterval time.Duration
	// SilenceTimeout drops a connection on which nothing arrived for this
	// long (the relay answers pings, so a live relay never goes silent).
	// Default 90 s.
	SilenceTimeout time.Duration
	// BackoffMin and BackoffMax bound the reconnect delay, which doubles per
	// failed attempt and is jittered into [d/2, d]. Defaults 250 ms and
	// DefaultBackoffMax (2 s): answers queued while the relay is away wait
	// on this reconnect, so it stays short (Wake cuts it shorter still).
	BackoffMin, BackoffMax time.Duration

	// RosterInterval is how often the relay's roster is re-read while
	// connected, so a card's reach follows an agent that went away without
	// a word. It is also re-read on every connection, on Refresh (a new
	// session, agent.* events: Observe), after a no-route or
	// ambiguous error and after an ack window of silence. Default 30 s.
	RosterInterval time.Duration
	// RosterCoalesce is the least time between two roster requests: an
	// ask within it of the last request is sent when it has passed, once
	// for every ask made meanwhile, so a burst of new sessions (each
	// reply lists every session) costs one request per RosterCoalesce,
	// not one per session. The first ask after a quiet spell goes at
	// once. Default 50 ms.
	RosterCoalesce time.Duration
	// Tick makes the RosterInterval ticker: its channel and a stop
	// function. Nil uses time.NewTicker; tests tick by hand.
	Tick func(d time.Duration) (<-chan time.Time, func())

	// Reporter receives every command's outcome. Nil discards them.
	Reporter Reporter
	// Release is asked, before a queued command (reported
	// inbox.SubmissionQueued: no relay connection when it was due) is
	// first written, whether it is still to be sent; nil sends it.
	// *inbox.Inbox fits (it holds it back once the request closed or the
	// answer got too old).
	Release Releaser
	// Notify, when set, is called after the connection state or the roster
	// changed (so the UI can re-render reachability). It must not block.
	Notify func()
	// Connected, when set, is called each time a connection to the relay
	// completes its hello (the app wakes the event feed with it, so the
	// feed follows the relay's return within this path's backoff). It
	// must not block.
	Connected func()
	// HTTPClient is used for the WebSocket handshake. Nil uses the default.
	HTTPClient *http.Client
	// Logger receives connection and delivery logs. Nil discards. The token
	// is never logged.
	Logger *slog.Logger
	// Now is the clock for command times and ids. Nil is time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultAgent     = "aepforms"
	DefaultMaxFrame  = 16 << 20
	DefaultAckWindow = 10 * time.Second
	DefaultRetries   = 2
	// DefaultBackoffMax caps the reconnect delay. An operator's queued
	// answer waits on the next attempt, so a relay back after an outage
	// must be found within about this long even without a Wake.
	DefaultBackoffMax = 2 * time.Second
	// DefaultRosterInterval is how often the roster is re-read unasked.
	DefaultRosterInterval = 30 * time.Second
	// DefaultRosterCoalesce is the least time between roster requests.
	DefaultRosterCoalesce = 50 * time.Millisecond
)

func (c Config) withDefaults() Config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if c.Agent == "" {
		c.Agent = DefaultAgent
	}
	if c.Instance == "" {
		c.Instance = host + "/" + strconv.Itoa(os.Getpid())
	}
	if c.Source == "" {
		c.Source = "aep://" + host + "/ui/aepforms"
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.Queue <= 0 {
		c.Queue = 1024
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 32
	}
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	setDur(&c.ReplayWait, 500*time.Millisecond)
	setDur(&c.ConnectWait, 10*time.Second)
	setDur(&c.AgentWait, 10*time.Second)
	setDur(&c.RosterPoll, 200*time.Millisecond)
	setDur(&c.DialTimeout, 10*time.Second)
	setDur(&c.WriteTimeout, 10*time.Second)
	setDur(&c.PingInterval, 30*time.Second)
	setDur(&c.SilenceTimeout, 90*time.Second)
	setDur(&c.RosterInterval, DefaultRosterInterval)
	setDur(&c.RosterCoalesce, DefaultRosterCoalesce)
	if c.Tick == nil {
		c.Tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	setDur(&c.BackoffMin, 250*time.Millisecond)
	setDur(&c.BackoffMax, DefaultBackoffMax)
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = c.BackoffMin
	}
	if c.Reporter == nil {
		c.Reporter = discardReporter{}
	}
	if c.Notify == nil {
		c.Notify = func() {}
	}
	if c.Connected == nil {
		c.Connected = func() {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}
