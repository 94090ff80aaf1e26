package respond

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/inbox"
)

// delivery is one command's way to its outcome: subscribe to its acks,
// send, wait the ack window, check replay and resend the identical bytes
// on silence, reconnect and resend when the connection drops.
type delivery struct {
	c        *Client
	cmd      *command
	sent     int  // transmissions written
	conns    int  // connections the command was worked on
	released bool // a queued command was released (Config.Release) for sending
	// after, when not nil, ends the settled command's ack subscription:
	// run once its outcome is reported.
	after func()
	// dropped: its submitter dropped the held command (SubmitHeld): it
	// was never written, and nothing is reported.
	dropped bool
}

// waited is how a wait ended.
type waited int

const (
	waitAcked   waited = iota // an ack or relay error settled the command
	waitSilent                // the window passed without one
	waitLost                  // the connection ended
	waitStopped               // ctx ended
)

// run works d.cmd until it is settled and returns its outcome. A
// command written at least once is owed until the agent decides: when
// its connection is lost (or none is up for it) its outcome is sending
// with inbox.ReasonRelayLost, after an ack window of silence on every
// send sending with inbox.ReasonTimeout, and the client keeps it (owed.go)
// to work it again on the next connection, whose relay may hold none of
// the old one's commands: released again (Config.Release: its request
// still open, the answer young enough), then written again. An owed
// command holds no worker while it waits.
//
// The caller reports the outcome, then calls d.after when it is set (the
// settled command's ack subscription, ended after the report).
func (d *delivery) run(ctx context.Context) outcome {
	c, cmd := d.c, d.cmd
	for {
		if !cmd.hold.isOpen() && (cmd.queued || !c.Connected()) {
			// Held, and no relay to subscribe on: nothing to do early
			// (a queued command is released, checks and all, only
			// once its submission is on its card).
			if !cmd.hold.wait(ctx) {
				d.dropped = true
				return outcome{}
			}
		}
		cn, err := d.connection(ctx)
		if cn == nil {
			if (d.sent > 0 || cmd.sentBefore) && ctx.Err() == nil && !errors.Is(err, ErrUnauthorized) {
				return owedLost
			}
			return d.gone(ctx, err)
		}
		if d.held() && !d.released {
			if !d.awaitAgent(ctx, cn) {
				continue // the connection or ctx ended first: still held
			}
			if c.cfg.Release != nil && !c.cfg.Release.ReleaseQueued(cmd.sub.Card, cmd.id) {
				c.log.Info("held command not sent: it was settled, the request closed or it got too old", "command", cmd.id)
				return outcome{State: inbox.SubmissionNotSent, Detail: detailHeld}
			}
			d.released = true
		}
		d.conns++
		if o, done := d.on(ctx, cn); done {
			return o
		}
		c.log.Info("relay connection lost with a command in flight; resending after reconnect",
			"command", cmd.id, "sent", d.sent)
		// The connection is ending (a failed write or subscribe ends it):
		// wait for that, so the next round never takes it for live.
		select {
		case <-cn.done:
		case <-ctx.Done():
		}
		if d.sent > 0 && ctx.Err() == nil {
			// Owed: the card says so, and the next connection releases
			// it again (checks and all) before writing it again.
			return owedLost
		}
	}
}

// owedLost is the outcome of a command that may have reached a relay and
// has no connection now: owed, worked again on the next one.
var owedLost = outcome{State: inbox.SubmissionSending, Reason: inbox.ReasonRelayLost, Detail: detailLost}

// noAgent is the outcome of a command the relay refused no-route: queued
// until its agent is on the relay again (Config.Release still decides,
// then, whether it is to be sent: its request open, the answer young
// enough).
var noAgent = outcome{State: inbox.SubmissionQueued, Reason: inbox.ReasonNoRoute, Detail: detailNoAgent}

// held reports whether the command must be released (Config.Release)
// before its next write: queued, or it may have reached a relay before.
func (d *delivery) held() bool {
	return d.cmd.queued || d.cmd.sentBefore || d.sent > 0
}

// connection returns a live connection: for a command never written, as
// unsent says (it waits, queued); for one that may have reached a relay,
// the one up now, or nil (it goes back to the client's owed commands,
// holding no worker, and the card says so).
func (d *delivery) connection(ctx context.Context) (*conn, error) {
	if d.sent == 0 && !d.cmd.sentBefore {
		return d.unsent(ctx)
	}
	return d.c.awaitConn(ctx, time.Now())
}

// awaitAgent waits, for a queued command now that the relay is back, until
// the relay's roster lists a claimant for the command's session (or says
// something other than "not connected"), re-reading it every RosterPoll,
// for at most AgentWait, or until the connection or ctx ends. The card
// stays queued meanwhile; after the wait the command is sent whatever the
// roster says, and the relay's answer (no-route) is the outcome. It is
// false when the connection or ctx ended first.
func (d *delivery) awaitAgent(ctx context.Context, cn *conn) bool {
	c := d.c
	if !cn.roster {
		return true // nothing to wait on
	}
	limit := time.NewTimer(c.cfg.AgentWait)
	defer limit.Stop()
	tick := time.NewTicker(c.cfg.RosterPoll)
	defer tick.Stop()
	for {
		switch c.Reach(d.cmd.session) {
		case inbox.ReachUnknown, inbox.ReachNotConnected:
		default:
			return true
		}
		select {
		case <-tick.C:
			c.Refresh()
		case <-limit.C:
			c.log.Info("queued command: its agent is not on the relay yet; sending anyway", "command", d.cmd.id,
				"session", d.cmd.session, "waited", c.cfg.AgentWait)
			return true
		case <-cn.done:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// unsent waits for a connection for a command not yet written. Without
// one now, the command is queued (reported so, once) and waits for the
// relay with no limit of its own: nothing has reached the relay, so
// nothing can time out, and its ack window starts only when it is
// written. It gives up only when ctx ends or the relay refused this UI's
// token (that will not change by waiting).
func (d *delivery) unsent(ctx context.Context) (*conn, error) {
	c := d.c
	for {
		cn, err := c.awaitConn(ctx, time.Now())
		if cn != nil || ctx.Err() != nil || errors.Is(err, ErrUnauthorized) {
			return cn, err
		}
		if !d.cmd.hold.wait(ctx) {
			d.dropped = true
			return nil, nil
		}
		if !d.cmd.queued || d.released {
			// Not written yet and no relay: queued (again, when the
			// connection it was released on dropped before the write; it
			// is released again, checks and all, when the relay is back).
			d.cmd.queued, d.released = true, false
			c.cfg.Reporter.SettleSubmission(d.cmd.sub.Card, d.cmd.id, inbox.SubmissionQueued, "", "")
		}
		cn, err = c.awaitConn(ctx, time.Now().Add(c.cfg.ConnectWait))
		if cn != nil || ctx.Err() != nil || errors.Is(err, ErrUnauthorized) {
			return cn, err
		}
	}
}

// on works the command on one connection. done is false when the
// connection was lost before the command settled.
func (d *delivery) on(ctx context.Context, cn *conn) (o outcome, done bool) {
	c, cmd := d.c, d.cmd
	acks, unwatch := cn.watch(cmd.id)
	defer unwatch()
	window := c.AckWindow(cmd.session)

	sub, code, err := cn.subscribe(ctx, cmd, window)
	if err != nil {
		return d.ended(ctx)
	}
	if code != "" {
		return d.refusedSubscription(code), true
	}
	defer func() {
		if ctx.Err() != nil {
			return
		}
		if done {
			// Settled: the outcome is reported first, the subscription
			// ended after (deliver's caller), so the card shows the ack
			// without waiting for this write.
			last := sub
			d.after = func() { cn.unsubscribe(last) }
			return
		}
		cn.unsubscribe(sub)
	}()
	// The subscription replays the session's buffer: after a reconnect the
	// ack may already be here, before or beside `subscribed`.
	if r, ok := d.ready(acks); ok {
		return d.settled(r), true
	}
	// Every connection gets the whole budget of transmissions: a relay
	// that came back may hold none of the old one's commands, and the
	// agent dedupes a command id it has seen (same bytes, same ack).
	writes := 0
	for {
		if d.sent == 0 && !cmd.sentBefore {
			if send, opened := cmd.hold.passed(ctx, cn.done); !opened {
				return d.ended(ctx)
			} else if !send {
				d.dropped = true
				return outcome{}, true
			}
			crashpoint.Hit(crashpoint.Unsent) // before the first write only
			crashpoint.Hold(crashpoint.UnsentHeld)
		}
		if err := cn.writeRaw(cmd.raw); err != nil {
			return d.ended(ctx)
		}
		d.sent++
		writes++
		crashpoint.Hit(crashpoint.Sent)
		crashpoint.Hit(crashpoint.SentNo303) // web holds the 303 meanwhile
		r, w := d.wait(ctx, cn, acks, window)
		switch w {
		case waitAcked:
			return d.settled(r), true
		case waitLost, waitStopped:
			return d.ended(ctx)
		}
		c.log.Info("no ack within the window; checking replay", "command", cmd.id,
			"window", window, "sent", d.sent)
		c.Refresh() // silence may mean the agent is gone: re-read the roster
		// Replay check: an ack the live subscription missed (a relay may
		// drop info events toward a slow consumer) is in the session's
		// buffer; a fresh subscription replays it. The old one goes first
		// (the relay reads frames in order, and the replay covers the gap),
		// so a command never holds two of the relay's per-connection
		// subscriptions.
		cn.unsubscribe(sub)
		sub, code, err = cn.subscribe(ctx, cmd, window)
		if err != nil {
			return d.ended(ctx)
		}
		if code != "" {
			return d.refusedSubscription(code), true
		}
		r, w = d.wait(ctx, cn, acks, c.cfg.ReplayWait)
		switch w {
		case waitAcked:
			return d.settled(r), true
		case waitLost, waitStopped:
			return d.ended(ctx)
		}
		if writes > c.cfg.Retries {
			return d.timeout(window), true
		}
	}
}

// ready returns an ack already delivered, without waiting.
func (d *delivery) ready(acks <-chan ackResult) (ackResult, bool) {
	for {
		select {
		case r := <-acks:
			if d.fits(r) {
				return r, true
			}
		default:
			return ackResult{}, false
		}
	}
}

// wait waits up to dur for a fitting ack or relay error.
func (d *delivery) wait(ctx context.Context, cn *conn, acks <-chan ackResult, dur time.Duration) (ackResult, waited) {
	t := time.NewTimer(dur)
	defer t.Stop()
	for {
		select {
		case r := <-acks:
			if d.fits(r) {
				return r, waitAcked
			}
		case <-t.C:
			return ackResult{}, waitSilent
		case <-cn.done:
			return ackResult{}, waitLost
		case <-ctx.Done():
			return ackResult{}, waitStopped
		}
	}
}

// fits reports whether r answers this command: a relay error (already
// cause-matched), or an ack from the addressed session. An ack from
// another session was routed wrong and answers nothing (AEP-0004 §4.5).
func (d *delivery) fits(r ackResult) bool {
	if r.event == nil {
		return true
	}
	if r.event.Session() != d.cmd.session {
		d.c.log.Warn("ack from a session the command did not address; ignored",
			"command", d.cmd.id, "session", r.event.Session())
		return false
	}
	return true
}

// settled turns an ack or relay error into the outcome.
func (d *delivery) settled(r ackResult) outcome {
	crashpoint.Hit(crashpoint.Acked)
	if r.event == nil && r.code == CodeNoRoute {
		// The relay routed it nowhere: the agent is away and may come
		// back. The answer waits for it, queued (owed.go).
		return noAgent
	}
	if r.event == nil {
		return outcome{State: inbox.SubmissionFailed, Reason: r.code, Detail: r.detl}
	}
	if r.event.Type() == typeAccepted {
		return outcome{State: inbox.SubmissionAccepted}
	}
	var rej aep.Rejected
	if err := r.event.DecodeData(&rej); err != nil {
		d.c.log.Warn("control.rejected with unreadable data", "command", d.cmd.id, "err", err)
	}
	return outcome{State: inbox.SubmissionRejected, Reason: rej.Reason, Detail: rej.Detail}
}

// ended is the result of a wait cut short: ctx ended (done, with the
// matching outcome) or the connection was lost (not done: reconnect).
func (d *delivery) ended(ctx context.Context) (outcome, bool) {
	if ctx.Err() != nil {
		return d.gone(ctx, nil), true
	}
	return outcome{}, false
}

// gone is the outcome when no connection is left to work on: never sent
// is "unreachable" (or the relay's refusal of the token), sent is
// "timeout" because the agent may have it.
func (d *delivery) gone(ctx context.Context, err error) outcome {
	sent := d.sent > 0 || d.cmd.sentBefore
	switch {
	case sent && ctx.Err() != nil:
		return failed(inbox.ReasonTimeout, detailStopped)
	case sent && errors.Is(err, ErrUnauthorized):
		return failed(CodeUnauthorized, "the relay refused this UI's token; the agent may still act on the answer")
	case sent:
		return failed(inbox.ReasonTimeout, detailStopped)
	case errors.Is(err, ErrUnauthorized):
		return failed(CodeUnauthorized, "the relay refused this UI's token; "+detailUnreachable)
	}
	return failed(inbox.ReasonUnreachable, detailUnreachable)
}

// timeout is the outcome after the window stayed silent on every send
// on one connection: not an end while the request is open. The command
// stays owed (sending, inbox.ReasonTimeout): the client sends it again
// on the next relay connection (owed.go), and the agent's late ack or
// record still settles it.
func (d *delivery) timeout(window time.Duration) outcome {
	return outcome{State: inbox.SubmissionSending, Reason: inbox.ReasonTimeout,
		Detail: fmt.Sprintf("no acknowledgement within %s after %d sends; the agent may still act on it, and it is sent again when the relay reconnects",
			window, d.sent)}
}

// refusedSubscription: the relay would not let this client watch for the
// command's acks (its code verbatim, e.g. unauthorized or limit-exceeded).
func (d *delivery) refusedSubscription(code string) outcome {
	detail := "the relay refused to deliver the agent's acknowledgement; "
	if d.sent == 0 {
		detail += detailUnreachable
	} else {
		detail += "the agent may still act on the answer"
	}
	return failed(code, detail)
}
