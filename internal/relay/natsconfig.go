package relay

import "time"

// NATSConfig puts a relay's events on a NATS JetStream stream. Every relay
// on the same servers with the same Stream and Subject is one relay: each
// keeps a copy of the stream in its own store (read back in the stream's
// order, so every copy is the same), an event or command sent to any of
// them reaches the subscribers of all, and a command finds its session's
// owner on whichever relay holds its socket.
type NATSConfig struct {
	// URLs are the NATS servers to connect to (nats://host:port, with
	// user:password@ or token@ when the servers need it). Empty: the
	// relay keeps its events in memory.
	URLs []string
	// Stream is the JetStream stream's name (default "AEP").
	Stream string
	// Subject is the first token of the relay's subjects (default "aep"):
	// events on {Subject}.ev.{agent}.{session}, agent-scoped events on
	// {Subject}.ag.{agent}, commands routed on {Subject}.ctl.{session}
	// (names base64url-encoded).
	Subject string
	// Replicas is the stream's replica count (default 3): with 3, the
	// stream survives the loss of any one NATS server of a cluster of
	// three. A single server needs 1.
	Replicas int
	// Duplicates is JetStream's de-duplication window on (source, id)
	// (default 2 min), beside the store's own dedupe on what it holds.
	Duplicates time.Duration
	// Timeout bounds each wait on NATS: storing one request's events,
	// asking the other relays for a command's owner (default 10 s). A
	// request whose events are not stored in it is answered 503 (HTTP) or
	// error unavailable (WebSocket), so its sender sends it again.
	Timeout time.Duration
	// RosterWait is how long a roster request waits for the other relays
	// to answer with their claims (default 100 ms): a roster lists the
	// sessions claimed on every relay of the stream.
	RosterWait time.Duration
	// ClaimTTL is how long the record of a session claimed on a relay
	// lives unless that relay writes it again, as it does every third of
	// it (default 30 s): a relay that died holding claims leaves none
	// past it. Records tell a relay which others to ask whether they
	// claim a session (two claimants: ambiguous); one whose relay is
	// gone counts for nothing even before it lapses.
	ClaimTTL time.Duration
}

// WithDefaults fills the zero fields with their defaults.
func (c NATSConfig) WithDefaults() NATSConfig {
	if c.Stream == "" {
		c.Stream = "AEP"
	}
	if c.Subject == "" {
		c.Subject = "aep"
	}
	if c.Replicas <= 0 {
		c.Replicas = 3
	}
	if c.Duplicates <= 0 {
		c.Duplicates = 2 * time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.ClaimTTL <= 0 {
		c.ClaimTTL = 30 * time.Second
	}
	if c.RosterWait <= 0 {
		c.RosterWait = 100 * time.Millisecond
	}
	return c
}
