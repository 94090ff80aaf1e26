package respond

import (
	"context"
	"errors"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Owed commands.
//
// An answer the operator was told was taken is never lost: a command
// that was written and got no reply from the agent within its ack window
// on every send (reported sending with inbox.ReasonTimeout) is not given
// up. The client keeps it, and every new relay connection queues it
// again, with the same id and bytes: the relay that came back may hold
// none of the old one's commands, and the agent dedupes an id it has
// seen. Before each write Config.Release decides whether it is still
// owed (the agent's ack or record, the request closing, the answer
// growing older than --resend-max-age or being replaced all end it).

// ErrNotOwed: SendAgain was asked for a command the client does not
// hold as owed (settled, already on its way, or never sent).
var ErrNotOwed = errors.New("respond: no such answer waiting to be sent again")

// A command the relay refused no-route (its agent is not on the relay)
// is owed too, queued: it is queued again when the roster lists its
// session's agent (agentBack), or on the next relay connection, and
// released and written as any queued command.

// owe keeps cmd to be sent again on the next relay connection. One whose
// connection was lost (lost) is queued at once when a new one is up
// already (it came up before the command ended); one that got no reply
// on a live connection waits for the next one, or for SendAgain. At most
// Config.Queue commands are kept; past that one is not kept here (the
// journal still holds it owed, and a restart sends it again).
func (c *Client) owe(cmd *command, lost bool) {
	cmd.sentBefore, cmd.queued, cmd.forAgent = true, false, false
	c.mu.Lock()
	defer c.mu.Unlock()
	if lost && c.cur != nil && !c.cur.ended() && !c.closed {
		select {
		case c.queue <- cmd:
			c.pending[cmd.id] = struct{}{}
			return
		default:
		}
	}
	c.keepOwed(cmd)
}

// oweAgent keeps cmd, refused no-route, until its agent is back.
func (c *Client) oweAgent(cmd *command) {
	cmd.queued, cmd.forAgent = true, true
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keepOwed(cmd)
}

// keepOwed keeps cmd in the owed commands, up to Config.Queue. The
// caller holds c.mu.
func (c *Client) keepOwed(cmd *command) {
	if c.owed == nil {
		c.owed = make(map[string]*command)
	}
	if len(c.owed) >= c.cfg.Queue {
		c.log.Warn("too many answers owed; this one is sent again after a restart", "command", cmd.id, "owed", len(c.owed))
		return
	}
	c.owed[cmd.id] = cmd
}

// agentBack queues again every command waiting for its agent whose
// session the roster now lists with a claimant: a roster reply came.
func (c *Client) agentBack() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requeueLocked(func(cmd *command) bool {
		return cmd.forAgent && c.Reach(cmd.session) == inbox.ReachConnected
	})
}

// requeueOwed puts every owed command back on the queue: a relay
// connection came up. What does not fit waits for the next one.
func (c *Client) requeueOwed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requeueLocked(func(*command) bool { return true })
}

// requeueLocked puts the owed commands due (due(cmd) true) and not
// already queued back on the queue, until it is full: what does not fit
// waits for the next call. The caller holds c.mu.
func (c *Client) requeueLocked(due func(*command) bool) {
	for id, cmd := range c.owed {
		if !due(cmd) {
			continue
		}
		if _, busy := c.pending[id]; busy {
			continue
		}
		select {
		case c.queue <- cmd:
			c.pending[id] = struct{}{}
			delete(c.owed, id)
		default:
			return
		}
	}
}

// SendAgain sends an owed command again now, with its own id and bytes
// (the operator's "Send again" after no reply in time). It returns
// ErrNotOwed when the client holds no such owed command, ErrQueueFull or
// ErrClosed.
func (c *Client) SendAgain(ctx context.Context, commandID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	cmd, ok := c.owed[commandID]
	if !ok {
		return ErrNotOwed
	}
	select {
	case c.queue <- cmd:
		c.pending[commandID] = struct{}{}
		delete(c.owed, commandID)
		return nil
	default:
		return ErrQueueFull
	}
}

// Owed returns how many commands the client holds to send again.
func (c *Client) Owed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.owed)
}

// forgetOwed drops an owed command the agent has now answered (its ack
// on the feed, Observe).
func (c *Client) forgetOwed(e *aep.Event) {
	if e.Type() != typeAccepted && e.Type() != typeRejected {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cmd, ok := c.owed[e.Cause()]; ok && cmd.session == e.Session() {
		delete(c.owed, e.Cause())
	}
}

// owedOutcome reports whether o leaves its command owed.
func owedOutcome(o outcome) bool {
	return o.State == inbox.SubmissionSending && (o.Reason == inbox.ReasonTimeout || o.Reason == inbox.ReasonRelayLost)
}

// agentOutcome reports whether o leaves its command waiting for its agent.
func agentOutcome(o outcome) bool {
	return o.State == inbox.SubmissionQueued && o.Reason == inbox.ReasonNoRoute
}
