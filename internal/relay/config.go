package relay

import (
	"log/slog"
	"time"
)

// Config configures a Relay. A zero field takes its default from
// DefaultConfig, except Token, where "" means no token (open, watch-only).
type Config struct {
	// Token is the bearer token every request but bare GET /healthz must
	// carry (Authorization: Bearer or ?access_token=). Empty: everything is
	// open to observe and emit, and every command is refused unauthorized
	// (control needs authentication unconditionally, AEP-0004 §4.1).
	Token string

	// Buffer is the replay depth per session, in events (default 10000).
	// Agent-scoped events (which name no session) share one more buffer of
	// the same depth, replayed only by from=all.
	Buffer int
	// BufferBytes bounds what the replay buffers of every session (and
	// the agent-scoped one) hold together, in bytes of events (each
	// counting 256 bytes more for its bookkeeping); past it the buffer
	// holding the most loses its oldest events, and a resume from before
	// them is told replay-exhausted (default 64 MiB).
	BufferBytes int64
	// MaxSessions caps the sessions held; the least recently written one is
	// evicted to admit a new one (default 500).
	MaxSessions int
	// MaxBody caps a POST body and a WebSocket frame, in bytes (default 16 MiB).
	MaxBody int64
	// MaxBatch caps the events in one NDJSON batch (default 10000).
	MaxBatch int
	// MaxFrom caps the resume positions in one from (default MaxSessions).
	MaxFrom int
	// KeepNoCommands routes every command but keeps none in its session's
	// history (AEP-0004 §4 says a relay SHOULD keep them, so some do
	// not): a replay then shows a command's acks, never the command. Live
	// streams still receive it. Default false: commands are kept.
	KeepNoCommands bool
	// MaxSubscriptions caps the concurrent subscriptions on one WebSocket
	// connection (default 64).
	MaxSubscriptions int
	// Queue bounds the outbound queue of each SSE stream and of each
	// WebSocket connection (shared by its subscriptions), in items: one
	// ingest (a POST or a frame, however many events it carries) per
	// matching subscription, or one reply frame (default 1024). Past three
	// quarters full, ingests of only debug and info events are dropped
	// toward that subscriber; a full queue facing a notice-or-above event
	// disconnects it so it resumes exactly (AEP-0003 §8.4).
	Queue int
	// QueueBytes bounds the same queues by the bytes of the live events
	// they hold (default 64 MiB): a queue of big events is full as a
	// queue of many is, with the same rules. A single ingest larger than
	// it is still queued when the queue is empty.
	QueueBytes int64

	// SSEPing is the interval of the `: ping` comment on /stream (default 15 s).
	SSEPing time.Duration
	// WSPing is the interval of the relay's ping frame (default 30 s).
	WSPing time.Duration
	// WSPongTimeout closes a socket that sent nothing for this long (default 90 s).
	WSPongTimeout time.Duration
	// HelloTimeout closes a socket whose first frame has not arrived in
	// this long (default 10 s).
	HelloTimeout time.Duration
	// WriteTimeout is the deadline of every network write (default 10 s).
	WriteTimeout time.Duration
	// CloseWait is how long a socket the relay closes (its drain, a slow
	// consumer, a ping timeout) waits for the peer's answer to its close
	// frame before the connection is dropped (default 250 ms): a peer
	// that stopped reading never answers, and would hold a drain, and
	// the process stopping, for the WebSocket library's own 5 s.
	CloseWait time.Duration
	// ReadTimeout is the deadline for reading one POST body (default 30 s).
	ReadTimeout time.Duration

	// OriginPatterns lists extra browser origins (host patterns, path.Match
	// syntax) allowed to open /socket when no Token is set; with a Token any
	// origin may connect, since the token is not ambient like a cookie.
	OriginPatterns []string

	// NATS, when it lists servers, keeps the events and commands in a
	// JetStream stream instead of this process's memory, and makes every
	// relay on the same stream one relay (see NATSConfig).
	NATS NATSConfig

	// Logger receives operational logs; nil discards them. Tokens are
	// never logged.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultConfig returns the reference relay's defaults: buffer 10000
// events per session and 64 MiB in all, sessions 500, body 16 MiB, batch 10000, from = sessions, SSE ping 15 s,
// WS ping 30 s with a 90 s timeout.
func DefaultConfig() Config {
	return Config{
		Buffer:           10000,
		MaxSessions:      500,
		BufferBytes:      64 << 20,
		MaxBody:          16 << 20,
		MaxBatch:         10000,
		MaxFrom:          500,
		MaxSubscriptions: 64,
		Queue:            1024,
		QueueBytes:       64 << 20,
		SSEPing:          15 * time.Second,
		WSPing:           30 * time.Second,
		WSPongTimeout:    90 * time.Second,
		HelloTimeout:     10 * time.Second,
		WriteTimeout:     10 * time.Second,
		ReadTimeout:      30 * time.Second,
		CloseWait:        250 * time.Millisecond,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setInt := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	setInt(&c.Buffer, d.Buffer)
	setInt(&c.MaxSessions, d.MaxSessions)
	if c.BufferBytes <= 0 {
		c.BufferBytes = d.BufferBytes
	}
	if c.MaxBody <= 0 {
		c.MaxBody = d.MaxBody
	}
	setInt(&c.MaxBatch, d.MaxBatch)
	setInt(&c.MaxFrom, c.MaxSessions)
	setInt(&c.MaxSubscriptions, d.MaxSubscriptions)
	setInt(&c.Queue, d.Queue)
	if c.QueueBytes <= 0 {
		c.QueueBytes = d.QueueBytes
	}
	setDur(&c.SSEPing, d.SSEPing)
	setDur(&c.WSPing, d.WSPing)
	setDur(&c.WSPongTimeout, d.WSPongTimeout)
	setDur(&c.HelloTimeout, d.HelloTimeout)
	setDur(&c.WriteTimeout, d.WriteTimeout)
	setDur(&c.CloseWait, d.CloseWait)
	setDur(&c.ReadTimeout, d.ReadTimeout)
	c.NATS = c.NATS.WithDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
