package relay

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/aepforms/aepforms/internal/aep"
)

// jsLog keeps the relay's events in a JetStream stream. Every relay node
// on the stream reads it back whole, in the stream's order, through one
// ordered consumer, and applies each event to its own store and
// subscribers exactly as the in-memory relay applies an ingest: so every
// node's store holds the same events in the same order, replay and
// replay-exhausted answer the same on each, and an event sent to one
// node reaches the subscribers of all. A node that starts reads the
// stream from its first message before it serves.
type jsLog struct {
	r   *Relay
	cfg NATSConfig
	nc  *nats.Conn
	js  jetstream.JetStream
	cc  jetstream.ConsumeContext
	st  jetstream.Stream

	in        chan jetstream.Msg // consumer -> applier
	stop      chan struct{}      // closed by close
	done      chan struct{}      // closed when the applier returned
	passSub   *nats.Subscription
	rosterSub *nats.Subscription
	claims    *claimLog // which other nodes claim a session

	mu      sync.Mutex
	applied uint64        // stream sequence of the last message applied
	moved   chan struct{} // closed (and replaced) when applied moves

	// routes (under Relay.mu) are the command subscriptions of the
	// sessions a connection here claims.
	routes map[string]*nats.Subscription

	closeOnce   sync.Once
	id          string        // this relay among those on the stream (roster requests skip their own)
	redelivered atomic.Uint64 // redeliveries sent (redeliveryID)
}

// retryWait is the pause between two attempts to store an event while
// the stream elects a leader or a server is unreachable.
const retryWait = 50 * time.Millisecond

// streamSlack is how many times the relays' own buffers (Config.Buffer
// per session, Config.BufferBytes in all) the stream keeps: more than
// they hold, so a node's buffer, not the stream, lets an event go first,
// and knows its position (replay-exhausted is exact); a node that starts
// and reads the stream trims it to its buffer the same way.
const streamSlack = 2

// routeQueue is the queue group of the command subscriptions: a command
// reaches one node's claimant, never two.
const routeQueue = "relay"

func openJetStream(ctx context.Context, r *Relay) (*jsLog, error) {
	cfg := r.cfg.NATS
	back := make(chan struct{}, 1) // the connection came back (claimLog.again)
	nc, err := nats.Connect(strings.Join(cfg.URLs, ","), nats.Name("aepforms-relay"),
		nats.MaxReconnects(-1), nats.Timeout(cfg.Timeout), nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case back <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("relay: connect to NATS: %w", err)
	}
	l := &jsLog{r: r, cfg: cfg, nc: nc, id: nats.NewInbox(), in: make(chan jetstream.Msg, 4096), stop: make(chan struct{}),
		done: make(chan struct{}), moved: make(chan struct{}), routes: make(map[string]*nats.Subscription)}
	fail := func(err error) (*jsLog, error) {
		l.close()
		return nil, err
	}
	l.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(cfg.Timeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("relay: JetStream: %w", err)
	}
	go l.applyLoop()
	stream, err := l.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              cfg.Stream,
		Description:       "aepforms relay: AEP events and commands",
		Subjects:          []string{cfg.Subject + ".ev.>", cfg.Subject + ".ag.>"},
		Storage:           jetstream.FileStorage,
		Replicas:          cfg.Replicas,
		MaxMsgsPerSubject: int64(streamSlack * r.cfg.Buffer),
		MaxBytes:          streamSlack * r.cfg.BufferBytes,
		Discard:           jetstream.DiscardOld,
		Duplicates:        cfg.Duplicates,
	})
	if err != nil {
		return fail(fmt.Errorf("relay: JetStream stream %s (replicas %d): %w", cfg.Stream, cfg.Replicas, err))
	}
	l.st = stream
	if l.claims, err = openClaims(ctx, r, nc, l.js, l.id[strings.LastIndexByte(l.id, '.')+1:], back); err != nil {
		return fail(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return fail(fmt.Errorf("relay: JetStream stream %s: %w", cfg.Stream, err))
	}
	if l.passSub, err = nc.Subscribe(cfg.Subject+".pass", l.passed); err != nil {
		return fail(fmt.Errorf("relay: NATS subscribe: %w", err))
	}
	if l.rosterSub, err = nc.Subscribe(cfg.Subject+".roster", l.serveRoster); err != nil {
		return fail(fmt.Errorf("relay: NATS subscribe: %w", err))
	}
	cons, err := l.js.OrderedConsumer(ctx, cfg.Stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fail(fmt.Errorf("relay: JetStream consumer: %w", err))
	}
	if l.cc, err = cons.Consume(l.received); err != nil {
		return fail(fmt.Errorf("relay: JetStream consume: %w", err))
	}
	if err := l.waitApplied(ctx, info.State.LastSeq); err != nil {
		return fail(fmt.Errorf("relay: reading JetStream stream %s (%d messages): %w", cfg.Stream, info.State.Msgs, err))
	}
	if info.State.FirstSeq > 1 || info.State.NumDeleted > 0 {
		// The stream let events go before this node read them: a resume
		// from before what a session holds may miss some, and is told so.
		r.mu.Lock()
		r.store.distrust()
		r.mu.Unlock()
	}
	return l, nil
}

// token encodes a name as one subject token.
func token(s string) string {
	if s == "" {
		return "_"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func (l *jsLog) subject(ev *aep.Event) string {
	if !ev.SessionScoped() {
		return l.cfg.Subject + ".ag." + token(ev.Agent())
	}
	return l.cfg.Subject + ".ev." + token(ev.Agent()) + "." + token(ev.Session())
}

// msgID is the Nats-Msg-Id of an event: its (source, id), hashed since
// both are producer-controlled strings of any length and bytes.
func msgID(ev *aep.Event) string {
	k := ev.Key()
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(k.Source))))
	h.Write([]byte{':'})
	h.Write([]byte(k.Source))
	h.Write([]byte(k.ID))
	return hex.EncodeToString(h.Sum(nil))
}

// redeliveryID is the Nats-Msg-Id of one redelivery of ev (an event the
// store holds, sent again): its (source, id) and a number this node gives
// each redelivery. The stream keeps the redelivery once however often
// its publish is retried, and keeps the next redelivery too, so every
// node forwards each live as a relay in memory does.
func (l *jsLog) redeliveryID(ev *aep.Event) string {
	return msgID(ev) + "." + l.id + "." + strconv.FormatUint(l.redelivered.Add(1), 36)
}

func (l *jsLog) msg(ev *aep.Event, id string) *nats.Msg {
	m := nats.NewMsg(l.subject(ev))
	m.Data = ev.Raw()
	m.Header.Set(jetstream.MsgIDHeader, id)
	return m
}

func (l *jsLog) append(ctx context.Context, evs []*aep.Event) ([]*aep.Event, error) {
	r := l.r
	// An event the store holds is a redelivery: it goes on the stream
	// too, under a Nats-Msg-Id of its own (redeliveryID), so every node
	// forwards it live in the stream's order as a relay in memory does
	// (its store keeps it once).
	ids := make([]string, len(evs))
	var dups []*aep.Event
	r.mu.Lock()
	for i, ev := range evs {
		if r.store.holds(ev) {
			dups = append(dups, ev)
			ids[i] = l.redeliveryID(ev)
		} else {
			ids[i] = msgID(ev)
		}
	}
	r.mu.Unlock()
	acks, err := l.publish(ctx, evs, ids)
	if err != nil {
		return nil, err
	}
	var top uint64
	var again []*aep.Event
	for i, a := range acks {
		top = max(top, a.Sequence)
		if a.Duplicate {
			again = append(again, evs[i])
		}
	}
	if len(again) > 0 {
		// Known to the stream's de-duplication window but not held here
		// (taken through another node a moment ago): forwarded here.
		r.mu.Lock()
		r.fanOutLocked(again)
		r.mu.Unlock()
	}
	if err := l.waitApplied(ctx, top); err != nil {
		return nil, err
	}
	return append(dups, again...), nil
}

// publish stores evs, in order when nothing fails, each one retried
// under its Nats-Msg-Id (ids), so never stored twice, until ctx ends.
func (l *jsLog) publish(ctx context.Context, evs []*aep.Event, ids []string) ([]*jetstream.PubAck, error) {
	futs := make([]jetstream.PubAckFuture, len(evs))
	for i, ev := range evs {
		if f, err := l.js.PublishMsgAsync(l.msg(ev, ids[i]), jetstream.WithExpectStream(l.cfg.Stream)); err == nil {
			futs[i] = f
		}
	}
	acks := make([]*jetstream.PubAck, len(evs))
	for i, ev := range evs {
		if f := futs[i]; f != nil {
			select {
			case a := <-f.Ok():
				acks[i] = a
				continue
			case <-f.Err():
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
			}
		}
		a, err := l.publishAgain(ctx, ev, ids[i])
		if err != nil {
			return nil, err
		}
		acks[i] = a
	}
	return acks, nil
}

func (l *jsLog) publishAgain(ctx context.Context, ev *aep.Event, id string) (*jetstream.PubAck, error) {
	for {
		a, err := l.js.PublishMsg(ctx, l.msg(ev, id), jetstream.WithExpectStream(l.cfg.Stream))
		if err == nil {
			return a, nil
		}
		if errors.Is(err, nats.ErrMaxPayload) {
			return nil, fmt.Errorf("%w: an event of %d bytes is over the NATS servers' max_payload", ErrUnavailable, len(ev.Raw()))
		}
		l.r.log.Debug("relay: JetStream publish, again", "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w (last: %v)", ErrUnavailable, ctx.Err(), err)
		case <-time.After(retryWait):
		}
	}
}

func (l *jsLog) catchUp(ctx context.Context) error {
	info, err := l.st.Info(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return l.waitApplied(ctx, info.State.LastSeq)
}

func (l *jsLog) settle(ctx context.Context) error {
	if err := l.claims.settle(ctx); err != nil {
		return err
	}
	return l.nc.FlushWithContext(ctx)
}

func (l *jsLog) elsewhere(ctx context.Context, session string, here int) (int, error) {
	return l.claims.elsewhere(ctx, session, here)
}

// waitApplied returns once the applier has applied stream sequence seq.
func (l *jsLog) waitApplied(ctx context.Context, seq uint64) error {
	for {
		l.mu.Lock()
		ok, moved := l.applied >= seq, l.moved
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-moved:
		case <-l.stop:
			return fmt.Errorf("%w: the relay is closing", ErrUnavailable)
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
	}
}

// received hands a stream message to the applier (on the consumer's
// goroutine; it waits while the applier is behind, which holds the
// consumer back rather than growing a queue).
func (l *jsLog) received(m jetstream.Msg) {
	select {
	case l.in <- m:
	case <-l.stop:
	}
}

// applyLoop applies what the consumer received, everything waiting at
// once as one ingest (one queue item per subscriber, as a POST is).
func (l *jsLog) applyLoop() {
	defer close(l.done)
	var batch []jetstream.Msg
	for {
		select {
		case <-l.stop:
			return
		case m := <-l.in:
			batch = append(batch[:0], m)
		}
	more:
		for len(batch) < 1024 {
			select {
			case m := <-l.in:
				batch = append(batch, m)
			default:
				break more
			}
		}
		l.apply(batch)
		clear(batch)
	}
}

func (l *jsLog) apply(batch []jetstream.Msg) {
	l.mu.Lock()
	last := l.applied
	l.mu.Unlock()
	evs := make([]*aep.Event, 0, len(batch))
	top := last
	gap := false
	for _, m := range batch {
		md, err := m.Metadata()
		if err != nil || md.Sequence.Stream <= top {
			continue
		}
		gap = gap || (top > 0 && md.Sequence.Stream > top+1)
		top = md.Sequence.Stream
		ev, err := aep.Decode(m.Data())
		if err != nil {
			l.r.log.Warn("relay: undecodable message on the JetStream stream; skipped", "subject", m.Subject(), "err", err)
			continue
		}
		evs = append(evs, ev)
	}
	if gap {
		// The stream let messages go before this node read them (a burst
		// past its limits): which sessions lost events is unknown, so a
		// resume from before what any session holds is told events may be
		// missing rather than given a silent gap.
		l.r.log.Warn("relay: the JetStream stream dropped events before this relay read them; raise --buffer or --buffer-bytes")
	}
	if len(evs) > 0 || gap {
		r := l.r
		r.mu.Lock()
		if gap {
			r.store.distrust()
		}
		for _, ev := range evs {
			r.store.add(ev)
		}
		if len(evs) > 0 {
			r.fanOutLocked(evs)
		}
		r.mu.Unlock()
	}
	if top == last {
		return
	}
	l.mu.Lock()
	l.applied = top
	close(l.moved)
	l.moved = make(chan struct{})
	l.mu.Unlock()
}

func (l *jsLog) pass(_ context.Context, ev *aep.Event) error {
	if err := l.nc.Publish(l.cfg.Subject+".pass", ev.Raw()); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// passed fans out a command another node (or this one) routed and keeps
// none of (Config.KeepNoCommands).
func (l *jsLog) passed(m *nats.Msg) {
	ev, err := aep.Decode(m.Data)
	if err != nil {
		return
	}
	l.r.mu.Lock()
	l.r.fanOutLocked([]*aep.Event{ev})
	l.r.mu.Unlock()
}

// redelivers: a command kept in the stream is owed to its session's
// claimant until the claimant acknowledges it, across the death of the
// relay node that delivered it (see Relay.redeliverLocked).
func (l *jsLog) redelivers() bool { return true }

func (l *jsLog) ctlSubject(session string) string { return l.cfg.Subject + ".ctl." + token(session) }

func (l *jsLog) owned(session string) {
	if _, ok := l.routes[session]; ok {
		return
	}
	l.claims.queue(session, true)
	sub, err := l.nc.QueueSubscribe(l.ctlSubject(session), routeQueue, l.serveRoute)
	if err != nil {
		l.r.log.Warn("relay: commands for a session claimed here cannot be routed from other relays", "err", err)
		return
	}
	l.routes[session] = sub
}

func (l *jsLog) disowned(session string) {
	if sub := l.routes[session]; sub != nil {
		_ = sub.Unsubscribe()
		delete(l.routes, session)
		l.claims.queue(session, false)
	}
}

// routeReply is a node's answer to a routed command: Code "" delivered.
type routeReply struct {
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// serveRoute delivers a command another node asks this one to, to the
// claimant here.
func (l *jsLog) serveRoute(m *nats.Msg) {
	reply := routeReply{Code: codeNoRoute, Detail: "the command could not be read"}
	if ev, err := aep.Decode(m.Data); err == nil {
		l.r.mu.Lock()
		reply.Code, reply.Detail = l.r.deliverLocked(ev)
		l.r.mu.Unlock()
	}
	b, _ := json.Marshal(reply)
	_ = m.Respond(b)
}

func (l *jsLog) route(ctx context.Context, ev *aep.Event) (string, string) {
	resp, err := l.nc.RequestWithContext(ctx, l.ctlSubject(ev.Session()), ev.Raw())
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return codeNoRoute, "no connected emitter owns this session"
	case err != nil:
		return codeNoRoute, "the relay holding this session's owner did not answer: " + err.Error()
	}
	var reply routeReply
	if json.Unmarshal(resp.Data, &reply) != nil {
		return codeNoRoute, "the relay holding this session's owner answered unreadably"
	}
	return reply.Code, reply.Detail
}

// serveRoster answers another relay's roster request with the claims
// held here.
func (l *jsLog) serveRoster(m *nats.Msg) {
	if m.Reply == "" || m.Header.Get("Aep-Relay") == l.id {
		return
	}
	_ = m.Respond(l.r.rosterEntries())
}

// roster asks every other relay on the stream for its claims, waits
// RosterWait for their answers, and merges them with local.
func (l *jsLog) roster(ctx context.Context, local json.RawMessage) json.RawMessage {
	inbox := l.nc.NewRespInbox()
	sub, err := l.nc.SubscribeSync(inbox)
	if err != nil {
		return local
	}
	defer func() { _ = sub.Unsubscribe() }()
	req := nats.NewMsg(l.cfg.Subject + ".roster")
	req.Reply = inbox
	req.Header.Set("Aep-Relay", l.id)
	if l.nc.PublishMsg(req) != nil {
		return local
	}
	var all []rosterEntry
	if json.Unmarshal(local, &all) != nil {
		return local
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RosterWait)
	defer cancel()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break
		}
		var theirs []rosterEntry
		if json.Unmarshal(m.Data, &theirs) == nil {
			all = append(all, theirs...)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Session < all[j].Session })
	b, err := json.Marshal(all)
	if err != nil {
		return local
	}
	return b
}

func (l *jsLog) close() {
	l.closeOnce.Do(func() {
		if l.cc != nil {
			l.cc.Stop()
		}
		close(l.stop)
		<-l.done
		if l.claims != nil {
			l.claims.close()
		}
		l.nc.Close()
	})
}
