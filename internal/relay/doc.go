// Package relay is aepforms' embedded AEP 0.1 relay: the HTTP emit binding
// and discovery document, SSE consume, and the WebSocket duplex with
// subscriptions, roster and control routing (AEP-0003, AEP-0004), over
// bounded per-session replay buffers. Every other part of aepforms talks to
// it as it would to any remote relay.
//
// Buffers. Each session (keyed by its session name, so a command addressed
// to a session lands in that session's history) holds up to Config.Buffer
// events in (epoch, seq) order; seq-less events (commands, attention.routed)
// keep their arrival place. Admission dedupes on (source, id); live fan-out
// forwards every delivery as received, redeliveries included, and an event
// at or below a session's highest position is accepted, not refused. At
// Config.MaxSessions the least recently written session is evicted (its
// last position is remembered, so if it comes back a resume from before
// the eviction still gets replay-exhausted).
// Agent-scoped events share one more buffer of the same depth, replayed by
// from=all only (they have no resumable position). A resume from a position
// older than what is held gets replay-exhausted naming the earliest
// position held, then everything held.
//
// Auth, as the reference relay does it. With Config.Token set, every request
// but a bare GET /healthz needs it (Authorization: Bearer or
// ?access_token=); a missing or wrong one gets 401, on /socket before the
// upgrade. Without a token everything is open to observe and emit and the
// relay is watch-only: every command is refused unauthorized toward its
// sender, since control needs an authenticated binding (AEP-0004 §4.1).
//
// HTTP ingest is all-or-nothing per request: a batch with a bad line is
// refused whole, naming the line (1-based "line", 0-based "index"). A
// control command posted over HTTP is refused 403: control flows only on
// the WebSocket binding.
//
// WebSocket frames. The first frame each way is hello; anything else first
// gets error hello-required and a close, no common version gets
// version-unsupported (with versions), a missing or unknown role gets
// invalid-hello. After it: events (a type with a dot) from any role, and
// the frames subscribe, unsubscribe, roster and ping; unknown frame types
// are ignored. Subscriptions and roster are watch-class: an emitter-role
// connection is refused unauthorized in-band. A frame that is not a JSON
// object gets error invalid-frame, an invalid event error invalid-event
// (cause = its id), and a binary frame, which AEP 0.1 reserves without
// naming a code, error binary-unsupported; the connection stays open for
// all three. Events are delivered once per matching subscription.
//
// Control. A connection owns the sessions on which it emitted sequenced
// events (never through seq-less events or HTTP posts). A command goes,
// byte-identically and on every transmission, to the one live owner of its
// session when that owner declared the type in control.accepts, and is
// then kept in the session's history and fanned out. Otherwise the sender
// gets an error frame {type, cause: command id, code, detail} with code
// no-route, ambiguous, unsupported or unauthorized, and the command is
// neither stored nor fanned out.
//
// Backpressure. Each SSE stream and each WebSocket connection has a bounded
// queue (Config.Queue items; an item is one ingest, a POST or a frame
// however many events it carries, for one subscription).
// Past three quarters full, items of only debug and info events are dropped
// toward it; when full, an item with a notice-or-above event disconnects it
// (SSE: the stream ends; WebSocket: closing with the delivered positions,
// then close 1013) so it resumes exactly. Nothing a subscriber does blocks
// ingest or another subscriber, and every network write has
// Config.WriteTimeout as its deadline.
//
// JetStream. Opened with Config.NATS (Open), the relay keeps what it
// admits in a NATS JetStream stream instead (eventLog: memLog or jsLog),
// and several relay processes on one stream are one relay. Each reads the
// whole stream, in its order, into the same buffers as above, so every
// node answers a resume alike; a POST is acknowledged once its events are
// in the stream and applied here, and a replay first catches up with the
// stream. A command for a session no connection here claims is a NATS
// request to the node that holds its claimant (none: no-route at once); a
// roster lists the claims of every node; a command kept with no ack, and
// not replaced by a later one of the same type and subject, is sent again
// to a connection that becomes its session's only claimant (its agent
// back on another node after its node died). Each node records its claims in a second stream
// (claimLog) before the claiming event is kept, so two claimants on two
// nodes are ambiguous as on one relay; a dead node's records count for
// nothing and lapse.
//
// Shutdown drains: SSE streams get ": shutting-down", sockets a closing
// frame with their delivered positions and close 1001.
package relay
