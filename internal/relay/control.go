package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/aepforms/aepforms/internal/aep"
)

// Command-path refusal codes (AEP-0004 §4.2), sent to the sender as an
// error frame whose cause is the command's id. A refused command is never
// stored or fanned out.
const (
	codeUnauthorized = "unauthorized"
	codeUnsupported  = "unsupported"
	codeAmbiguous    = "ambiguous"
	codeNoRoute      = "no-route"
)

// route delivers a command to the one live connection claiming its
// session, byte-identically and on every transmission (the target dedupes
// retries), then keeps it in the session's history (unless
// Config.KeepNoCommands) and fans it out. On a JetStream stream
// (Config.NATS) the claimants on the other relay nodes count too (two in
// all: ambiguous), and a session no connection here claims is asked of
// the node holding its claimant; none holding it is no-route at once.
// With no token configured the relay is watch-only and refuses every
// command.
func (r *Relay) route(from *wsConn, ev *aep.Event) {
	refuse := func(code, detail string) {
		from.send(errorFrame{Cause: ev.ID(), Code: code, Detail: detail})
		r.log.Info("relay: command refused", "code", code, "detail", detail, "type", ev.Type(), "session", ev.Session())
	}
	if r.cfg.Token == "" {
		refuse(codeUnauthorized, "this relay runs without a token (watch-only): control needs an authenticated binding (AEP-0004 §4.1)")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.NATS.Timeout)
	defer cancel()
	elsewhere, err := r.claimantsElsewhere(ctx, ev.Session())
	if err != nil {
		refuse(codeUnavailable, err.Error()+"; nothing was delivered: send it again")
		return
	}
	// r.mu is held: the claims here are those elsewhere was counted for.
	if code, detail := r.verdictLocked(ev, elsewhere); code == codeNoRoute {
		r.mu.Unlock()
		if code, detail := r.events.route(ctx, ev); code != "" {
			refuse(code, detail)
			return
		}
	} else {
		r.mu.Unlock()
		if code != "" {
			refuse(code, detail)
			return
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), r.cfg.NATS.Timeout)
	defer cancel()
	if r.cfg.KeepNoCommands {
		err = r.events.pass(ctx, ev)
	} else {
		_, err = r.events.append(ctx, []*aep.Event{ev})
	}
	if err != nil {
		r.log.Warn("relay: a routed command was delivered but not kept", "err", err)
	}
}

// claimantsElsewhere returns how many connections on other relay nodes
// claim session, counted for the claimants here as they are when it
// returns, with r.mu held (unless err): a claim made here while the
// other nodes were counted (an agent re-claiming its sessions after its
// node died) changes what they must be asked, so they are counted again.
// Counted for no claimant here, a record elsewhere names its node's
// claimant unasked; with one here too, the node is asked whether it
// still has it.
func (r *Relay) claimantsElsewhere(ctx context.Context, session string) (int, error) {
	r.mu.Lock()
	for {
		here := len(r.claims[session])
		r.mu.Unlock()
		elsewhere, err := r.events.elsewhere(ctx, session, here)
		if err != nil {
			return 0, err
		}
		r.mu.Lock()
		if len(r.claims[session]) == here {
			return elsewhere, nil
		}
		if err := ctx.Err(); err != nil {
			r.mu.Unlock()
			return 0, fmt.Errorf("%w: this session's claims kept changing: %w", ErrUnavailable, err)
		}
	}
}

// verdictLocked is deliverLocked for a relay on which elsewhere more
// connections claim the command's session on other relay nodes: two
// claimants in all, wherever they are, is ambiguous, as on one relay.
func (r *Relay) verdictLocked(ev *aep.Event, elsewhere int) (code, detail string) {
	here := len(r.claims[ev.Session()])
	if elsewhere > 0 && here+elsewhere > 1 {
		return codeAmbiguous, strconv.Itoa(here+elsewhere) + " live connections claim this session (" + strconv.Itoa(elsewhere) + " through other relay nodes)"
	}
	return r.deliverLocked(ev)
}

// deliverLocked queues a command to the one live connection here
// claiming its session; code is "" when it was queued, else the
// refusal's code and detail (no-route: no connection here claims it).
func (r *Relay) deliverLocked(ev *aep.Event) (code, detail string) {
	claimants := r.claims[ev.Session()]
	switch {
	case len(claimants) == 0:
		return codeNoRoute, "no connected emitter owns this session"
	case len(claimants) > 1:
		return codeAmbiguous, strconv.Itoa(len(claimants)) + " live connections claim this session"
	}
	target := claimants[0]
	if !slices.Contains(target.accepts, ev.Type()) {
		return codeUnsupported, "the session's owner does not declare this command type in control.accepts"
	}
	target.out.pushControl(item{kind: itemFrame, frame: ev.Raw()})
	return "", ""
}

// claimLocked makes c a claimant of session. A connection keeps at most
// MaxSessions claims; past that its oldest claim lapses. It reports
// whether the session had no claimant here before.
func (r *Relay) claimLocked(c *wsConn, session string) (owned bool) {
	if slices.Contains(r.claims[session], c) {
		return false
	}
	if len(r.claims[session]) == 0 {
		r.events.owned(session)
		owned = true
	}
	r.claims[session] = append(r.claims[session], c)
	r.rosterJSON = nil
	c.claimed = append(c.claimed, session)
	if len(c.claimed) > r.cfg.MaxSessions {
		r.unclaimLocked(c, c.claimed[0])
		c.claimed = slices.Delete(c.claimed, 0, 1)
	}
	return owned
}

// redeliver sends a connection that just became the first claimant here
// of sessions (its agent back, maybe through another relay node after the
// one it was on died) every command of each it declares in
// control.accepts and no ack answers yet, byte-identical: the target
// dedupes an id it has executed, and acks it again. Only to the one
// claimant of a session on every node: a second one makes the session
// ambiguous, and is sent nothing. Only on a log whose commands outlive a
// node (eventLog.redelivers).
func (r *Relay) redeliver(ctx context.Context, c *wsConn, sessions []string) {
	if !r.events.redelivers() {
		return
	}
	for _, s := range sessions {
		// Claims unknown: nothing is redelivered on a guess; the
		// command stays owed, for its sender to send again.
		if n, err := r.events.elsewhere(ctx, s, 1); err != nil || n > 0 {
			if err != nil {
				r.log.Warn("relay: owed commands not sent again", "session", s, "err", err)
			}
			continue
		}
		r.mu.Lock()
		if cs := r.claims[s]; len(cs) == 1 && cs[0] == c {
			r.redeliverLocked(c, s)
		}
		r.mu.Unlock()
	}
}

func (r *Relay) redeliverLocked(c *wsConn, session string) {
	for _, cmd := range r.store.unacked(session) {
		if slices.Contains(c.accepts, cmd.Type()) {
			c.out.pushControl(item{kind: itemFrame, frame: cmd.Raw()})
		}
	}
}

func (r *Relay) unclaimLocked(c *wsConn, session string) {
	r.rosterJSON = nil
	rest := slices.DeleteFunc(r.claims[session], func(x *wsConn) bool { return x == c })
	if len(rest) == 0 {
		delete(r.claims, session)
		r.events.disowned(session)
		return
	}
	r.claims[session] = rest
}

// dropConn forgets a closed connection: its claims, its subscriptions.
func (r *Relay) dropConn(c *wsConn) {
	c.mu.Lock()
	subs := make([]*subscriber, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, session := range c.claimed {
		r.unclaimLocked(c, session)
	}
	c.claimed = nil
	for _, s := range subs {
		delete(r.subs, s)
	}
	delete(r.conns, c)
}

// rosterEntries returns the JSON array of every live (connection, claimed
// session) pair with the claimant's hello declarations verbatim, sorted by
// session. It is built once per change of the claims and shared by every
// reply until the next change (the caller must not modify it).
func (r *Relay) rosterEntries() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rosterJSON != nil {
		return r.rosterJSON
	}
	out := []rosterEntry{}
	for session, cs := range r.claims {
		for _, c := range cs {
			out = append(out, rosterEntry{Session: session, Agent: c.agent, Instance: c.instance, Control: c.control, Emits: c.emits})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	b, err := json.Marshal(out)
	if err != nil {
		// Every member is a string or JSON the peer's hello held.
		r.log.Error("relay: roster not encodable", "err", err)
		return json.RawMessage("[]")
	}
	r.rosterJSON = b
	return b
}

// attachSocket queues a socket subscription's subscribed frame and replay
// and registers it for live delivery, all under the lock (no gap, no
// duplicate at the seam).
func (r *Relay) attachSocket(sub *subscriber, from resume, subscribed []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sub.out.pushControl(item{kind: itemFrame, frame: subscribed})
	if rp := r.planLocked(sub, from); len(rp.marks) > 0 || len(rp.events) > 0 {
		sub.out.pushControl(item{kind: itemReplay, sub: sub, replay: rp})
	}
	r.subs[sub] = struct{}{}
}

func itoa(n int) string { return strconv.Itoa(n) }
