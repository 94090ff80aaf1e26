package feed

import (
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/backoff"
	"github.com/aepforms/aepforms/internal/sse"
)

// DefaultFilter is the attr-match filter the inbox needs: the attention
// lifecycle, every control event (the acks to our commands, and other
// senders' control.attention.respond, which shows a request answered
// elsewhere), session lifecycle (session.ended settles open cards), run
// lifecycle (run grouping on cards) and agent liveness (agent.*: the
// roster is re-read, so a card's reach stays true), and tool.requested
// (the tool a permission request's cause names, which a rule matches).
// Other tool, progress and other traffic is left at the relay.
const DefaultFilter = `{"type":["attention.*","control.*","session.*","run.*","agent.*","tool.requested"]}`

// Defaults of Config.
const (
	// DefaultSilenceTimeout is twice the 30 s AEP-0003 §3.3 allows between pings.
	DefaultSilenceTimeout = 60 * time.Second
	DefaultBackoffMin     = 500 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
	// DefaultDedupeWindow matches the reference relay's per-session buffer
	// (AEP_BUFFER 10000): the ids of that many events per session are kept.
	DefaultDedupeWindow = 10000
	// DefaultMaxSessions matches the reference relay's session cap (AEP_MAX_SESSIONS 500).
	DefaultMaxSessions = 500
)

// Config configures a Client. Zero values take the defaults named.
type Config struct {
	// RelayURL is the relay's base URL (http or https); the stream is
	// {RelayURL}/stream. Required.
	RelayURL string
	// Token, when set, is sent as Authorization: Bearer. It is never logged
	// and never put in a URL.
	Token string
	// Filter is the attr-match filter sent as the filter query parameter;
	// nil means DefaultFilter. No capture ceiling is ever requested: a
	// ceiling of redacted would turn full events into metadata.
	Filter json.RawMessage
	// MaxEventBytes is the largest event data accepted (default
	// sse.DefaultMaxEventBytes, 16 MiB, the relay's body limit). A larger
	// event is logged and skipped; the stream goes on.
	MaxEventBytes int
	// SilenceTimeout: a connection that yields no byte, not even ": ping",
	// for this long (waiting for response headers included) is treated as
	// dead and reconnected. Default DefaultSilenceTimeout, 60 s.
	SilenceTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait before a reconnect: it starts
	// at BackoffMin (default 500 ms), doubles per failed attempt up to
	// BackoffMax (default 30 s), and is jittered to between half and all of
	// that. A connection that stayed open for BackoffMax resets it.
	BackoffMin, BackoffMax time.Duration
	// DedupeWindow is how many event ids per session are remembered for the
	// (source, id) dedupe (default DefaultDedupeWindow). Keep it at least
	// the relay's per-session buffer so a replay never re-applies an event.
	DedupeWindow int
	// MaxSessions is how many sessions are tracked (default
	// DefaultMaxSessions); beyond it the least recently written is forgotten.
	// Keep it at least the relay's session cap.
	MaxSessions int
	// HTTPClient makes the requests; nil means a client of its own (no
	// overall timeout: streams are long-lived) whose idle connections are
	// closed when Run returns.
	HTTPClient *http.Client
	// Logger receives connection and skip reports; nil discards.
	Logger *slog.Logger
	// Now is the clock for connection lifetimes (the backoff reset); nil = time.Now.
	Now func() time.Time
	// Rand returns a number in [0, 1) for backoff jitter; nil = math/rand/v2.Float64.
	Rand func() float64
	// OnEvent, when set, is called with every event after it reached the
	// sink (app: the respond path re-reads the relay's roster on session
	// lifecycle and agent.* liveness events, so a card's reach follows an
	// agent that starts, stops or dies). It is called from Run's goroutine
	// and must not block or keep the event.
	OnEvent func(*aep.Event)
	// OnRedelivery, when set, is called with every event the feed had
	// already taken and now drops as a duplicate: a relay's replay, or an
	// agent re-sending its session's last events on a new connection to
	// reclaim it (app: the respond path re-reads the roster for a session
	// it holds as not connected, so a card's reach follows an agent back
	// to a restarted relay). Same goroutine and rules as OnEvent.
	OnRedelivery func(*aep.Event)
}

// withDefaults returns c with zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.Filter == nil {
		c.Filter = json.RawMessage(DefaultFilter)
	}
	if c.MaxEventBytes <= 0 {
		c.MaxEventBytes = sse.DefaultMaxEventBytes
	}
	if c.SilenceTimeout <= 0 {
		c.SilenceTimeout = DefaultSilenceTimeout
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = c.BackoffMin
	}
	if c.DedupeWindow <= 0 {
		c.DedupeWindow = DefaultDedupeWindow
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
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

// backoff returns the wait before reconnect attempt n (0-based): BackoffMin
// doubled n times, capped at BackoffMax, jittered to [d/2, d).
func (c Config) backoff(n int) time.Duration {
	return backoff.Policy{Min: c.BackoffMin, Max: c.BackoffMax, Rand: c.Rand}.Delay(n)
}
