package respond

import (
	"context"
	"strconv"
	"time"
)

// Routing of replies to the commands waiting on one connection, and the
// per-command ack subscriptions.

// reply hands a subscribe reply to its waiter; false when none waits.
func (cn *conn) reply(id string, f inFrame) bool {
	cn.mu.Lock()
	ch, ok := cn.subs[id]
	cn.mu.Unlock()
	if ok {
		select {
		case ch <- f:
		default:
		}
	}
	return ok
}

// settle hands a result to the command waiting on cause, dropping
// redeliveries once one is pending.
func (cn *conn) settle(cause string, r ackResult) {
	cn.mu.Lock()
	ch, ok := cn.acks[cause]
	cn.mu.Unlock()
	if ok {
		select {
		case ch <- r:
		default:
		}
	}
}

// watch registers a command's ack waiter. Register before subscribing, so
// an ack replayed or delivered before `subscribed` is not missed.
func (cn *conn) watch(id string) (<-chan ackResult, func()) {
	ch := make(chan ackResult, 1)
	cn.mu.Lock()
	cn.acks[id] = ch
	cn.mu.Unlock()
	return ch, func() {
		cn.mu.Lock()
		delete(cn.acks, id)
		cn.mu.Unlock()
	}
}

// subscribe asks for the acks of cmd, replaying the session's buffer too,
// and returns once the relay answered. It returns the subscription id, the
// relay's refusal code (when it refused), or errLost / ctx's error. An
// ack that arrives meanwhile lands in the command's watch channel. If the
// relay does not answer within wait, the subscription is kept (it may
// still be honoured) and subscribe returns without error.
func (cn *conn) subscribe(ctx context.Context, cmd *command, wait time.Duration) (id, code string, err error) {
	id = "ack-" + cmd.id + "-" + strconv.FormatUint(cn.c.subSeq.Add(1), 10)
	ch := make(chan inFrame, 1)
	cn.mu.Lock()
	cn.subs[id] = ch
	cn.mu.Unlock()
	defer func() {
		cn.mu.Lock()
		delete(cn.subs, id)
		cn.mu.Unlock()
	}()
	// Positions are exclusive and an ack always follows the request it
	// answers, so (0, 0) replays every ack the buffer still holds; an older
	// position gets replay-exhausted and delivery from the earliest held.
	f := subscribeFrame{
		Type:   "subscribe",
		ID:     id,
		Filter: ackFilter{Session: cmd.session, Type: []string{typeAccepted, typeRejected}, Cause: cmd.id},
		From:   []fromPosition{{Session: cmd.session}},
	}
	if err := cn.write(f); err != nil {
		return "", "", errLost
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Type == "error" {
			return "", r.Code, nil
		}
		return id, "", nil
	case <-t.C:
		cn.c.log.Warn("relay did not confirm an ack subscription", "command", cmd.id)
		return id, "", nil
	case <-cn.done:
		return "", "", errLost
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
}

// unsubscribe ends a subscription, best effort (the reply is not awaited).
func (cn *conn) unsubscribe(id string) {
	if id == "" {
		return
	}
	select {
	case <-cn.done:
		return
	default:
	}
	if err := cn.write(idFrame{Type: "unsubscribe", ID: id}); err != nil {
		cn.c.log.Debug("unsubscribe not written", "err", err)
	}
}
