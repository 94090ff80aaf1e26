// Package respond is aepforms' respond path: it turns an operator's answer
// into one control.attention.respond (AEP-0004) sent over one long-lived
// WebSocket to the relay, waits for the target's cause-matched ack or the
// relay's refusal, retries the identical envelope on silence, and reports
// every outcome. It also keeps the relay's roster, so the UI can tell
// whether a card's agent is connected before the operator types.
package respond

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/backoff"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Errors of Submit and Run.
var (
	// ErrQueueFull: Config.Queue submissions are already waiting.
	ErrQueueFull = errors.New("respond: queue full")
	// ErrClosed: Run has ended (or was already running); nothing more is sent.
	ErrClosed = errors.New("respond: client closed")
	// ErrConfig: the Config cannot work (no relay URL, bad scheme).
	ErrConfig = errors.New("respond: bad config")
	// ErrDuplicate: a command with this id is already queued or in flight
	// (one command id is one command; a resend is the client's own job).
	ErrDuplicate = errors.New("respond: command already in flight")
)

// Client is the respond path. Create it with New, start it with Run, and
// hand it submissions with Submit. Its methods are safe for concurrent use.
type Client struct {
	cfg    Config
	log    *slog.Logger
	queue  chan *command
	wake   chan struct{} // Wake: skip the reconnect wait (buffer 1)
	roster roster
	subSeq atomic.Uint64

	mu      sync.Mutex
	cur     *conn               // the live connection, nil when down
	changed chan struct{}       // closed and replaced whenever cur changes
	lastErr error               // why the last connection attempt or connection failed
	pending map[string]struct{} // ids of commands queued or in flight
	owed    map[string]*command // sent, no reply in time: queued again on every new connection (owed.go)
	// outcomes counts what became of the commands, for /metrics.
	outcomes map[inbox.SubmissionState]int64
	running  bool
	closed   bool
}

// New returns a client for cfg (see Config for the defaults). It does not
// connect until Run.
func New(cfg Config) *Client {
	cfg = cfg.withDefaults()
	return &Client{
		cfg:      cfg,
		log:      cfg.Logger,
		queue:    make(chan *command, cfg.Queue),
		wake:     make(chan struct{}, 1),
		changed:  make(chan struct{}),
		pending:  make(map[string]struct{}),
		outcomes: make(map[inbox.SubmissionState]int64),
	}
}

// Submit queues s's command; it returns at once. A submission that
// carries its command's bytes (s.Command, made by Build before it was
// journaled) is sent as those bytes; one without is built here. The
// outcome goes to the Reporter. Without a relay connection the command
// is queued: inbox.SubmissionQueued is reported before Submit returns,
// and the command waits for the relay with no time limit of its own
// (Config.Release decides, when the relay is back, whether it is still
// to be sent). It fails with ErrInvalid (the submission
// cannot be a command), ErrDuplicate, ErrQueueFull or ErrClosed; nothing is
// reported then.
func (c *Client) Submit(ctx context.Context, s inbox.Submission) error {
	return c.submit(ctx, s, nil)
}

// SubmitHeld is Submit, except that the command's first write waits
// until send(true) is called: its worker meanwhile takes a relay
// connection and subscribes to the command's acks. The UI queues an
// answer this way while the journal writes it, and calls send(true) once
// the post's 303 is out: the operator's browser still hears that the
// answer is kept before the command can reach the agent, and the ack
// subscription's round trip is no longer on the answer's way.
// send(false) drops the command unsent and unreported (the journal did
// not keep the answer). Nothing is reported for the command before send
// is called (a "queued" report waits for send(true)), so it may be
// submitted before its submission is on its card. Only send's first call
// counts; without one the command is never written, so call it on every
// path (defer). On an error nothing was queued and send does nothing.
func (c *Client) SubmitHeld(ctx context.Context, s inbox.Submission) (send func(bool), err error) {
	g := &gate{open: make(chan struct{})}
	if err := c.submit(ctx, s, g); err != nil {
		return func(bool) {}, err
	}
	return g.let, nil
}

// gate holds a command's first write (SubmitHeld).
type gate struct {
	once sync.Once
	open chan struct{} // closed by let
	drop bool          // let(false); read after open is closed
	// said is the report Submit would have made at once (queued, or
	// owed for want of a relay), made by let(true) instead.
	said func()
}

// let opens the gate: send the command, or drop it.
func (g *gate) let(send bool) {
	g.once.Do(func() {
		g.drop = !send
		if send && g.said != nil {
			g.said()
		}
		close(g.open)
	})
}

// wait waits until g is opened or ctx ends, and reports whether the
// command may go on (false: dropped); a nil gate is open.
func (g *gate) wait(ctx context.Context) bool {
	if g == nil {
		return true
	}
	select {
	case <-g.open:
		return !g.drop
	case <-ctx.Done():
		return true
	}
}

// isOpen reports whether g is nil or opened.
func (g *gate) isOpen() bool {
	if g == nil {
		return true
	}
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// passed waits until g is opened (true when the command is to be sent),
// or ctx or lost ends first (false); a nil gate is open.
func (g *gate) passed(ctx context.Context, lost <-chan struct{}) (send, opened bool) {
	if g == nil {
		return true, true
	}
	select {
	case <-g.open:
		return !g.drop, true
	case <-lost:
		return false, false
	case <-ctx.Done():
		return false, false
	}
}

func (c *Client) submit(ctx context.Context, s inbox.Submission, hold *gate) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var cmd *command
	var err error
	if len(s.Command) > 0 {
		cmd, err = prebuilt(s)
	} else {
		cmd, err = c.build(s)
	}
	if err != nil {
		return err
	}
	cmd.hold = hold
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if _, dup := c.pending[cmd.id]; dup {
		c.mu.Unlock()
		return ErrDuplicate
	}
	if len(c.queue) == cap(c.queue) {
		c.mu.Unlock()
		return ErrQueueFull
	}
	c.pending[cmd.id] = struct{}{}
	delete(c.owed, cmd.id)
	// A submission restored after a restart may have reached a relay
	// before it: it is owed, never "queued" (which says nothing left).
	cmd.sentBefore = s.Resumed && s.State == inbox.SubmissionSending
	// No relay connection now: the answer waits for the relay, and the
	// card says so before the post's redirect (not "sent", then a failure).
	// A relay that refused the token will not take it later either: that
	// command fails as before.
	away := c.cur == nil && !errors.Is(c.lastErr, ErrUnauthorized)
	cmd.queued = away && !cmd.sentBefore
	c.mu.Unlock()
	var said func()
	switch {
	case cmd.queued:
		// Said before the command is on the queue, so no worker's later
		// report can be overtaken by it.
		said = func() { c.cfg.Reporter.SettleSubmission(cmd.sub.Card, cmd.id, inbox.SubmissionQueued, "", "") }
	case away:
		said = func() {
			c.cfg.Reporter.SettleSubmission(cmd.sub.Card, cmd.id, inbox.SubmissionSending, inbox.ReasonRelayLost, detailLost)
		}
	}
	switch {
	case hold != nil:
		// Said when the gate opens: a worker reports nothing before it
		// (deliver.go).
		hold.said = said
	case said != nil:
		said()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		delete(c.pending, cmd.id)
		return ErrClosed
	}
	select {
	case c.queue <- cmd:
		return nil
	default:
		delete(c.pending, cmd.id)
		return ErrQueueFull
	}
}

// Outcomes counts what became of the commands sent so far, by state
// (accepted, rejected, failed, and not-sent for a queued command
// Config.Release held back).
func (c *Client) Outcomes() map[inbox.SubmissionState]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.outcomes)
}

// Connected reports whether a relay connection is up (hello completed).
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil
}

// Err returns why the relay is not connected, nil when it is or before the
// first attempt.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil {
		return nil
	}
	return c.lastErr
}

// Refresh asks the relay for a new roster snapshot (the app calls it when
// the feed shows a new session). It never blocks; requests are coalesced,
// and nothing is sent while disconnected (every connection asks anyway).
func (c *Client) Refresh() {
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	if cn != nil {
		cn.askRoster()
	}
}

// Run connects, keeps the connection up (reconnecting with capped,
// jittered backoff) and works the queue until ctx ends. It returns nil
// then, after every goroutine it started has ended and every submission it
// took has been reported; submissions still queued are reported
// "unreachable". Run may be called once.
func (c *Client) Run(ctx context.Context) error {
	u, err := url.Parse(c.cfg.RelayURL)
	if err != nil || c.cfg.RelayURL == "" {
		return fmt.Errorf("%w: relay URL %q", ErrConfig, c.cfg.RelayURL)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return fmt.Errorf("%w: relay URL scheme %q", ErrConfig, u.Scheme)
	}
	c.mu.Lock()
	if c.running || c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.running = true
	c.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { c.connect(ctx) })
	c.dispatch(ctx)
	wg.Wait()
	return nil
}

// dispatch hands queued commands to workers, at most MaxInFlight at once,
// until ctx ends; then it waits for the workers and reports what is left.
func (c *Client) dispatch(ctx context.Context) {
	sem := make(chan struct{}, c.cfg.MaxInFlight)
	var workers sync.WaitGroup
	defer func() {
		workers.Wait()
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		for {
			select {
			case cmd := <-c.queue:
				c.report(cmd, failed(inbox.ReasonUnreachable, detailUnreachable))
			default:
				return
			}
		}
	}()
	for {
		var cmd *command
		select {
		case <-ctx.Done():
			return
		case cmd = <-c.queue:
		}
		select {
		case <-ctx.Done():
			c.report(cmd, failed(inbox.ReasonUnreachable, detailUnreachable))
			return
		case sem <- struct{}{}:
		}
		workers.Go(func() {
			defer func() { <-sem }()
			d := &delivery{c: c, cmd: cmd}
			o := d.run(ctx)
			// Nothing is reported before a held command's gate opens:
			// its submission may not be on its card yet.
			if !cmd.hold.wait(ctx) {
				d.dropped = true
			}
			if d.dropped {
				c.mu.Lock()
				delete(c.pending, cmd.id)
				c.mu.Unlock()
			} else {
				c.report(cmd, o)
			}
			if d.after != nil {
				d.after()
			}
		})
	}
}

// report sends cmd's outcome to the Reporter. A queued command that was
// held back (not-sent) was settled by Config.Release itself; the report
// tells the Reporter nothing new.
func (c *Client) report(cmd *command, o outcome) {
	c.mu.Lock()
	delete(c.pending, cmd.id)
	c.outcomes[o.State]++
	c.mu.Unlock()
	c.cfg.Reporter.SettleSubmission(cmd.sub.Card, cmd.id, o.State, o.Reason, o.Detail)
	// Logged after the report: the card shows the outcome without
	// waiting for the log's write.
	c.log.Info("command settled", "command", cmd.id, "session", cmd.session,
		"state", o.State, "reason", o.Reason)
	switch {
	case c.isClosed():
	case owedOutcome(o):
		// After the report: its next round's release must come after it.
		c.owe(cmd, o.Reason == inbox.ReasonRelayLost)
	case agentOutcome(o):
		c.oweAgent(cmd)
		// The agent may have come back while the command was refused.
		c.Refresh()
	}
}

// isClosed reports whether Run has ended.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Wake ends the current reconnect wait at once, so the next attempt
// starts now: the app calls it when the feed has reconnected to the same
// relay, which is back, and answers queued meanwhile should not wait out
// the backoff. It never blocks; while connected it does nothing.
func (c *Client) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// connect keeps one connection up until ctx ends.
func (c *Client) connect(ctx context.Context) {
	policy := c.backoff()
	attempt := 0
	for ctx.Err() == nil {
		cn, err := c.dial(ctx)
		if err != nil {
			c.setConn(nil, err)
			wait := policy.Delay(attempt)
			attempt++
			c.log.Warn("relay connection failed", "err", err, "retry_in", wait)
			if !c.pause(ctx, wait) {
				return
			}
			continue
		}
		attempt = 0
		// A wake meant for an earlier outage must not cut the next
		// backoff short.
		select {
		case <-c.wake:
		default:
		}
		c.log.Info("relay connected", "roster", cn.roster)
		c.serve(ctx, cn)
	}
}

// serve runs one connection until it ends, then marks the client
// disconnected. When ctx ends, the connection is closed in order.
func (c *Client) serve(ctx context.Context, cn *conn) {
	c.roster.reset()
	c.setConn(cn, nil)
	c.cfg.Connected()
	cn.askRoster()
	c.requeueOwed() // what got no reply before is sent again on this relay
	var wg sync.WaitGroup
	wg.Go(cn.housekeep)
	wg.Go(func() {
		select {
		case <-ctx.Done():
			cn.close("shutdown")
		case <-cn.done:
		}
	})
	err := cn.read()
	wg.Wait()
	cn.cancel()
	cn.ws.CloseNow()
	c.roster.reset()
	if ctx.Err() == nil {
		c.log.Warn("relay connection lost", "err", err)
	}
	c.setConn(nil, fmt.Errorf("respond: relay connection lost: %w", err))
}

// setConn records the current connection (nil = down) and wakes waiters.
func (c *Client) setConn(cn *conn, err error) {
	c.mu.Lock()
	was := c.cur != nil
	c.cur, c.lastErr = cn, err
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if was != (cn != nil) {
		c.cfg.Notify()
	}
}

// awaitConn returns the live connection, waiting for one until deadline.
// It returns nil with the last connection error when none came.
func (c *Client) awaitConn(ctx context.Context, deadline time.Time) (*conn, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		c.mu.Lock()
		cn, changed, err := c.cur, c.changed, c.lastErr
		c.mu.Unlock()
		if cn != nil {
			select {
			case <-cn.done:
				// A dead connection not yet cleared: wait for the change.
			default:
				return cn, nil
			}
		}
		select {
		case <-changed:
		case <-t.C:
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// backoff is the reconnect delay policy of the config.
func (c *Client) backoff() backoff.Policy {
	return backoff.Policy{Min: c.cfg.BackoffMin, Max: c.cfg.BackoffMax}
}

// pause waits d, or less when Wake is called; false when ctx ended.
func (c *Client) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.wake:
		c.log.Info("reconnect wait cut short: the relay is reachable again")
		return true
	case <-ctx.Done():
		return false
	}
}

func failed(reason, detail string) outcome {
	return outcome{State: inbox.SubmissionFailed, Reason: reason, Detail: detail}
}
