package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// claimLog tells a relay node which other nodes claim a session, so a
// command to a session claimed on two nodes is refused ambiguous, as two
// claimants on one relay are.
//
// Each node records the sessions it holds a claim on in a stream of
// their own ({Stream}_CLAIMS, one message per subject
// {Subject}.cl.{session}.{node}), and a claim's record is stored before
// the event that made it is: so a command sent after two claims were
// acknowledged, through any node, finds both records when its node asks
// the stream (the stream's leader answers, in the stream's order). A
// record only says which nodes to ask: the node asked answers how many
// of its connections claim the session now, so a record its node let go
// of a moment ago counts for nothing, and one a dead node left (no
// responders) counts for nothing and is purged. A record lives
// NATSConfig.ClaimTTL unless its node writes it again (every third of
// it, and when its NATS connection comes back): a node that died holding
// claims leaves none past that, whether or not a command asked.
type claimLog struct {
	r      *Relay
	nc     *nats.Conn
	st     jetstream.Stream
	js     jetstream.JetStream
	cfg    NATSConfig
	prefix string // {Subject}.cl
	node   string // this node's token in its records' subjects
	askSub *nats.Subscription

	mu      sync.Mutex
	ops     []claimOp     // claims made or let go of here, not yet recorded
	queued  uint64        // ops ever queued
	done    uint64        // ops ever recorded
	moved   chan struct{} // closed (and replaced) when done moves
	wake    chan struct{} // ops are waiting
	again   chan struct{} // the NATS connection came back: record every claim again
	stop    chan struct{}
	stopped chan struct{}
}

// claimOp is a claim made (on) or let go of on this node.
type claimOp struct {
	session string
	on      bool
}

func openClaims(ctx context.Context, r *Relay, nc *nats.Conn, js jetstream.JetStream, node string, again chan struct{}) (*claimLog, error) {
	cfg := r.cfg.NATS
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              cfg.Stream + "_CLAIMS",
		Description:       "aepforms relay: which relay node claims each session",
		Subjects:          []string{cfg.Subject + ".cl.>"},
		Storage:           jetstream.MemoryStorage,
		Replicas:          cfg.Replicas,
		MaxMsgsPerSubject: 1,
		MaxAge:            cfg.ClaimTTL,
		Duplicates:        cfg.ClaimTTL,
		Discard:           jetstream.DiscardOld,
	})
	if err != nil {
		return nil, fmt.Errorf("relay: JetStream stream %s_CLAIMS: %w", cfg.Stream, err)
	}
	c := &claimLog{r: r, nc: nc, st: st, js: js, cfg: cfg, prefix: cfg.Subject + ".cl", node: node,
		moved: make(chan struct{}), wake: make(chan struct{}, 1), again: again,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if c.askSub, err = nc.Subscribe(c.askSubject(node), c.answer); err != nil {
		return nil, fmt.Errorf("relay: NATS subscribe: %w", err)
	}
	go c.loop()
	return c, nil
}

func (c *claimLog) askSubject(node string) string { return c.cfg.Subject + ".node." + node }

func (c *claimLog) record(session, node string) string {
	return c.prefix + "." + token(session) + "." + node
}

// queue records a claim made or let go of here (under Relay.mu).
func (c *claimLog) queue(session string, on bool) {
	c.mu.Lock()
	c.ops = append(c.ops, claimOp{session, on})
	c.queued++
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// settle returns once every claim queued before it was recorded (or
// failed to be: the next refresh writes it again).
func (c *claimLog) settle(ctx context.Context) error {
	c.mu.Lock()
	want := c.queued
	c.mu.Unlock()
	for {
		c.mu.Lock()
		ok, moved := c.done >= want, c.moved
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-moved:
		case <-c.stopped:
			return fmt.Errorf("%w: the relay is closing", ErrUnavailable)
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
	}
}

// loop records the claims in the order they were made and let go of, and
// writes every claim held here again every third of ClaimTTL and when the
// NATS connection comes back. One goroutine does both, so a refresh never
// writes again a record a later let-go purged.
func (c *claimLog) loop() {
	defer close(c.stopped)
	tick := time.NewTicker(c.cfg.ClaimTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
			c.flush()
		case <-tick.C:
			c.refresh()
		case <-c.again:
			c.refresh()
		}
	}
}

func (c *claimLog) flush() {
	c.mu.Lock()
	ops := c.ops
	c.ops = nil
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	for _, op := range ops {
		var err error
		if op.on {
			_, err = c.js.Publish(ctx, c.record(op.session, c.node), nil)
		} else {
			err = c.st.Purge(ctx, jetstream.WithPurgeSubject(c.record(op.session, c.node)))
		}
		if err != nil {
			c.r.log.Warn("relay: a claim not recorded for the other relays (written again within the claim TTL)", "on", op.on, "err", err)
		}
	}
	c.mu.Lock()
	c.done += uint64(len(ops))
	close(c.moved)
	c.moved = make(chan struct{})
	c.mu.Unlock()
}

// refresh writes again the record of every session claimed here.
func (c *claimLog) refresh() {
	c.r.mu.Lock()
	sessions := make([]string, 0, len(c.r.claims))
	for s := range c.r.claims {
		sessions = append(sessions, s)
	}
	c.r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	futs := make([]jetstream.PubAckFuture, 0, len(sessions))
	for _, s := range sessions {
		if f, err := c.js.PublishAsync(c.record(s, c.node), nil); err == nil {
			futs = append(futs, f)
		}
	}
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			c.r.log.Debug("relay: a claim's record not written again", "err", err)
		case <-ctx.Done():
			return
		}
	}
}

// answer tells another node how many connections here claim a session.
func (c *claimLog) answer(m *nats.Msg) {
	c.r.mu.Lock()
	n := len(c.r.claims[string(m.Data)])
	c.r.mu.Unlock()
	_ = m.Respond([]byte(strconv.Itoa(n)))
}

// elsewhere returns how many connections on other nodes claim session,
// given here claimants on this node. When here and the records together
// name one claimant at most it does not ask (routing finds it, or finds
// none); else it asks each node with a record, purging the record of one
// that is gone. A node that does not answer in time, or records it
// cannot read, are ErrUnavailable: a command is never delivered on a
// guess, nor refused for good (ambiguous) on one.
func (c *claimLog) elsewhere(ctx context.Context, session string, here int) (int, error) {
	info, err := c.st.Info(ctx, jetstream.WithSubjectFilter(c.record(session, "*")))
	if err != nil {
		return 0, fmt.Errorf("%w: the claims of other relay nodes are unknown: %w", ErrUnavailable, err)
	}
	var nodes []string
	for subj := range info.State.Subjects {
		if n := subj[strings.LastIndexByte(subj, '.')+1:]; n != c.node {
			nodes = append(nodes, n)
		}
	}
	if here+len(nodes) < 2 {
		return len(nodes), nil
	}
	total := 0
	for _, n := range nodes {
		k, ok := c.ask(ctx, session, n)
		if !ok {
			return 0, fmt.Errorf("%w: relay node %s holds a claim of this session and did not answer in time", ErrUnavailable, n)
		}
		total += k
	}
	return total, nil
}

// ask returns how many connections on node claim session. It asks
// again every RosterWait until ctx ends: a node that died a moment ago
// may still look subscribed through another NATS server, where the ask
// is dropped unanswered, until the cluster learns it is gone (then: no
// responders). A node that never answers is unknown (ok false): the
// command is refused unavailable, for its sender to send again, never
// delivered on a guess nor refused for good as ambiguous.
func (c *claimLog) ask(ctx context.Context, session, node string) (n int, ok bool) {
	for {
		actx, cancel := context.WithTimeout(ctx, c.cfg.RosterWait)
		resp, err := c.nc.RequestWithContext(actx, c.askSubject(node), []byte(session))
		cancel()
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			// The node is gone: its record is reclaimed.
			if err := c.st.Purge(ctx, jetstream.WithPurgeSubject(c.record(session, node))); err != nil {
				c.r.log.Debug("relay: a gone relay's claim not purged (it lapses with the claim TTL)", "err", err)
			}
			return 0, true
		case err == nil:
			n, err := strconv.Atoi(string(resp.Data))
			if err != nil {
				return 1, true
			}
			return n, true
		case ctx.Err() != nil, !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout):
			return 0, false
		}
	}
}

// close records what was queued (a node shutting down lets go of its
// claims), then stops.
func (c *claimLog) close() {
	close(c.stop)
	<-c.stopped
	if c.nc.IsConnected() {
		c.flush()
	}
	_ = c.askSub.Unsubscribe()
}
