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
	c     *Client
	cmd   *command
	sent  int // transmissions written
	conns int // connections the command was worked on
}

// waited is how a wait ended.
type waited int

const (
	waitAcked   waited = iota // an ack or relay error settled the command
	waitSilent                // the window passed without one
	waitLost                  // the connection ended
	waitStopped               // ctx ended
)

// deliver works cmd until it is settled and returns its outcome.
func (c *Client) deliver(ctx context.Context, cmd *command) outcome {
	d := &delivery{c: c, cmd: cmd}
	for {
		cn, err := c.awaitConn(ctx, time.Now().Add(c.cfg.ConnectWait))
		if cn == nil {
			return d.gone(ctx, err)
		}
		if d.conns > c.cfg.Retries+1 {
			// The connection keeps dropping under this command: stop here.
			return d.gone(ctx, nil)
		}
		d.conns++
		if o, done := d.on(ctx, cn); done {
			return o
		}
		c.log.Info("relay connection lost with a command in flight; resending after reconnect",
			"command", cmd.id, "sent", d.sent)
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
		if ctx.Err() == nil {
			cn.unsubscribe(sub)
		}
	}()
	// The subscription replays the session's buffer: after a reconnect the
	// ack may already be here, before or beside `subscribed`.
	if r, ok := d.ready(acks); ok {
		return d.settled(r), true
	}
	for {
		if d.sent > c.cfg.Retries {
			// Every transmission is spent (this is a connection after a
			// drop): wait one window for a replayed or late ack.
			r, w := d.wait(ctx, cn, acks, window)
			switch w {
			case waitAcked:
				return d.settled(r), true
			case waitSilent:
				return d.timeout(window), true
			}
			return d.ended(ctx)
		}
		crashpoint.Hit(crashpoint.Unsent)
		if err := cn.writeRaw(cmd.raw); err != nil {
			return d.ended(ctx)
		}
		d.sent++
		crashpoint.Hit(crashpoint.Sent)
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
		if d.sent > c.cfg.Retries {
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
	switch {
	case d.sent > 0 && ctx.Err() != nil:
		return failed(inbox.ReasonTimeout, detailStopped)
	case d.sent > 0:
		return failed(inbox.ReasonTimeout, detailLost)
	case errors.Is(err, ErrUnauthorized):
		return failed(CodeUnauthorized, "the relay refused this UI's token; "+detailUnreachable)
	}
	return failed(inbox.ReasonUnreachable, detailUnreachable)
}

// timeout is the local nack after the window stayed silent on every send.
func (d *delivery) timeout(window time.Duration) outcome {
	return failed(inbox.ReasonTimeout, fmt.Sprintf("no acknowledgement within %s after %d sends; %s",
		window, d.sent, "the agent may still act on the answer"))
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
