package relay

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aepforms/aepforms/internal/aep"
)

// eventLog is where admitted events are kept, and how they reach this
// relay's store and its subscribers. The in-memory log applies them at
// once; the JetStream log (Config.NATS) stores them in a stream first and
// applies them as every relay node on the stream reads them back, in the
// stream's order, so each node's store holds the same events.
type eventLog interface {
	// append keeps evs (admission dedupe on (source, id)) and returns
	// once each is in this relay's store and every one, duplicates
	// included, is queued to its subscribers. dups are those already
	// kept.
	append(ctx context.Context, evs []*aep.Event) (dups []*aep.Event, err error)
	// owned and disowned tell the log a session gained its first live
	// claimant on this node, or lost its last (under Relay.mu), so
	// commands sent through other nodes can find it.
	owned(session string)
	disowned(session string)
	// catchUp returns once this relay has applied everything the log
	// had kept when it was called, so a replay served next holds every
	// event acknowledged before, through whichever node; an error when
	// the log did not answer in time (the replay then serves what this
	// relay holds).
	catchUp(ctx context.Context) error
	// settle returns once the claims made so far (owned) are known to
	// the log, so a command sent through another node after the claiming
	// event was acknowledged finds its owner.
	settle(ctx context.Context) error
	// redelivers reports whether a connection that claims a session is
	// sent the session's commands it has not acknowledged (Relay.
	// redeliverLocked): the JetStream log's, whose commands outlive the
	// node that delivered them.
	redelivers() bool
	// roster returns the roster entries of every relay on the log, given
	// this relay's own (a JSON array, sorted by session; local unchanged
	// when there are no others).
	roster(ctx context.Context, local json.RawMessage) json.RawMessage
	// elsewhere returns how many live connections on other relay nodes
	// claim session, given here claimants on this one (a lower bound
	// when the answer cannot change the verdict: at most one in all),
	// or ErrUnavailable when the other nodes' claims cannot be read: a
	// command is then refused, never delivered on a guess.
	elsewhere(ctx context.Context, session string, here int) (int, error)
	// route hands a command whose session no connection here claims to
	// the node that holds its claimant; code is "" when it was
	// delivered, else the refusal's code and detail.
	route(ctx context.Context, ev *aep.Event) (code, detail string)
	// pass fans a command out on every node without keeping it
	// (Config.KeepNoCommands).
	pass(ctx context.Context, ev *aep.Event) error
	// close lets go of what the log holds open.
	close()
}

// ErrUnavailable marks events the relay could not keep: its JetStream
// stream did not answer in time. The sender should send them again.
var ErrUnavailable = errors.New("relay: the event store is unavailable")

// memLog is the default log: the relay's own memory.
type memLog struct{ r *Relay }

func (m memLog) append(_ context.Context, evs []*aep.Event) ([]*aep.Event, error) {
	r := m.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var dups []*aep.Event
	for _, ev := range evs {
		if !r.store.add(ev) {
			dups = append(dups, ev)
		}
	}
	r.fanOutLocked(evs)
	return dups, nil
}

func (memLog) catchUp(context.Context) error { return nil }
func (memLog) settle(context.Context) error  { return nil }
func (memLog) owned(string)                  {}
func (memLog) redelivers() bool              { return false }

func (memLog) elsewhere(context.Context, string, int) (int, error) { return 0, nil }

func (memLog) roster(_ context.Context, local json.RawMessage) json.RawMessage { return local }
func (memLog) disowned(string)                                                 {}

func (memLog) route(context.Context, *aep.Event) (string, string) {
	return codeNoRoute, "no connected emitter owns this session"
}

func (m memLog) pass(_ context.Context, ev *aep.Event) error {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	m.r.fanOutLocked([]*aep.Event{ev})
	return nil
}

func (memLog) close() {}
