package webpush

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
)

// Cards is what the notifier reads of the inbox.
type Cards interface {
	Subscribe(buf int) *inbox.Subscription
	Card(inbox.CardID) (inbox.Card, bool)
	Cards(inbox.Query) []inbox.Card
}

// SummaryTag is the tag of the "N new questions" notification.
const SummaryTag = "aepforms-new"

// queued is one push waiting for its device's next turn.
type queued struct {
	card    string
	settled bool // a replacement for a card that settled
	msg     Message
	ttl     time.Duration
	urgent  bool
}

// device is one subscription's turn-taking: at most one push per
// Config.Coalesce; what waits goes out as one.
type device struct {
	sub     store.PushSubscription
	last    time.Time // when the last push went
	pending []queued
}

// Run follows the inbox's changes until ctx ends, and every tick sends
// what waited for its device's turn. A dropped subscription (the inbox
// outran it) is made again, and the questions that arrived in the gap
// are pushed then.
func (p *Pusher) Run(ctx context.Context, cards Cards, tick time.Duration) {
	p.RunFrom(ctx, cards, cards.Subscribe(256), tick)
}

// RunFrom is Run from a subscription already made: the app makes it
// before the feed starts, so no question arrives before it exists.
func (p *Pusher) RunFrom(ctx context.Context, cards Cards, sub *inbox.Subscription, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		p.follow(ctx, cards, sub, t.C)
		sub.Close()
		if ctx.Err() != nil {
			return
		}
		sub = cards.Subscribe(256)
		// The changes of the gap are lost: every card is looked at, so a
		// question that came in it is pushed and one that settled in it
		// has its notification replaced (Observe does each once).
		for _, c := range cards.Cards(inbox.Query{}) {
			if ctx.Err() != nil {
				break
			}
			p.Observe(ctx, c)
		}
	}
}

func (p *Pusher) follow(ctx context.Context, cards Cards, sub *inbox.Subscription, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			p.Flush(ctx)
			p.pruneClaims(ctx)
		case ch, ok := <-sub.C():
			if !ok {
				return
			}
			if ch.Kind == inbox.ChangeRemoved {
				// Evicted: nothing more will settle it here.
				p.mu.Lock()
				delete(p.shown, string(ch.Card))
				p.mu.Unlock()
				continue
			}
			if ch.Kind != inbox.ChangeAdded && ch.Kind != inbox.ChangeUpdated {
				continue
			}
			if c, ok := cards.Card(ch.Card); ok {
				p.Observe(ctx, c)
			}
		}
	}
}

// Observe decides the push a card's change makes: a new answerable
// request is pushed (once, claimed in the journal, across replicas) to
// every device of every operator with no page in view; a card this
// replica pushed that can no longer be answered has its notification
// replaced ("Answered by alice", "Expired").
func (p *Pusher) Observe(ctx context.Context, c inbox.Card) {
	now := p.cfg.Now()
	id := string(c.ID)
	vd := c.Verdict(now, p.cfg.Viewer)
	closed := vd.Closed != nil
	p.mu.Lock()
	_, pushed := p.shown[id]
	decided := p.decided[id]
	if closed {
		delete(p.decided, id)
	} else if !decided && vd.Announce {
		p.decided[id] = true
	} else {
		decided = true // nothing to announce
	}
	p.mu.Unlock()
	switch {
	case pushed && closed:
		p.settle(ctx, c, vd, now)
	case !closed && !decided:
		if p.cfg.Ruled != nil && p.cfg.Ruled(ctx, c) {
			p.cfg.Logger.Debug("push: a rule answers this question", "card", id)
			return
		}
		p.announce(ctx, c, vd, now)
	}
}

func (p *Pusher) announce(ctx context.Context, c inbox.Card, vd inbox.Verdict, now time.Time) {
	id := string(c.ID)
	var audience func(string) bool
	if p.cfg.Audience != nil {
		audience = p.cfg.Audience(c)
	}
	to, subs := p.devicesFor(ctx, audience, now)
	if len(to) == 0 {
		return
	}
	won, err := p.store.ClaimPush(ctx, id, store.ClaimNew, now)
	if err != nil {
		p.cfg.Logger.Warn("push: claim", "card", id, "err", err)
		return
	}
	if !won {
		p.cfg.Logger.Debug("push: another replica pushes this question", "card", id)
		return
	}
	p.cfg.Logger.Debug("push: this replica pushes this question", "card", id, "devices", len(to))
	p.deliver(ctx, c, vd, to, subs, now)
}

// devicesFor lists the devices of the operators audience reports true
// for (nil: every operator) who have no page in view, and every device
// that may be pushed to now (subscriptions), for deliver's sending.
func (p *Pusher) devicesFor(ctx context.Context, audience func(string) bool, now time.Time) (to, subs []store.PushSubscription) {
	subs, err := p.subscriptions(ctx)
	if err != nil || len(subs) == 0 {
		return nil, nil
	}
	looking := p.looking(ctx, now)
	for _, s := range subs {
		if !looking[s.Operator] && (audience == nil || audience(s.Operator)) {
			to = append(to, s)
		}
	}
	return to, subs
}

// WatchSessions has every push go only to the devices whose sign-in
// session live still reports counting, asked at each send, for all of
// the push's devices at once: a device whose session ended (expired,
// signed out from another browser, or on another replica) is told
// nothing more, and its subscription is removed. So is one made with no
// session (while sign-in was off): sign-in is on now, and it belongs to
// no sign-in.
func (p *Pusher) WatchSessions(live func(ctx context.Context, idHashes []string) (map[string]bool, error)) {
	p.live.Store(&live)
}

// subscriptions lists the devices that may be pushed to: every
// subscription whose session still counts (WatchSessions), looked up
// once for all of them. Those whose session ended are removed; when the
// sessions could not be checked, it fails: every device is kept, and
// none pushed to this time.
func (p *Pusher) subscriptions(ctx context.Context) ([]store.PushSubscription, error) {
	subs, err := p.store.PushSubscriptions(ctx)
	live := p.live.Load()
	if err != nil || live == nil {
		return subs, err
	}
	var hashes []string
	asked := map[string]bool{}
	for _, s := range subs {
		if s.Session != "" && !asked[s.Session] {
			asked[s.Session] = true
			hashes = append(hashes, s.Session)
		}
	}
	alive := map[string]bool{}
	if len(hashes) > 0 {
		if alive, err = (*live)(ctx, hashes); err != nil {
			p.cfg.Logger.Warn("push: the devices' sign-ins could not be checked", "err", err)
			return nil, fmt.Errorf("push: check the devices' sign-ins: %w", err)
		}
	}
	out := subs[:0]
	for _, s := range subs {
		if s.Session != "" && alive[s.Session] {
			out = append(out, s)
			continue
		}
		if _, err := p.store.DeletePushSubscription(ctx, s.Operator, s.Endpoint); err != nil {
			p.cfg.Logger.Warn("push: removing the subscription of an ended sign-in", "endpoint", Origin(s.Endpoint), "err", redactEndpoint(err, s.Endpoint))
		}
		p.forget(s.Endpoint)
	}
	return out, nil
}

// Renotify pushes open question c again, to the devices of the
// operators audience reports true for (a reminder, an escalation; the
// caller claimed it in the journal), and reports how many devices it
// went to.
func (p *Pusher) Renotify(ctx context.Context, c inbox.Card, audience func(string) bool) int {
	now := p.cfg.Now()
	vd := c.Verdict(now, p.cfg.Viewer)
	if vd.Closed != nil {
		return 0
	}
	to, subs := p.devicesFor(ctx, audience, now)
	if len(to) == 0 {
		return 0
	}
	p.deliver(ctx, c, vd, to, subs, now)
	return len(to)
}

// deliver queues card c's push on each device of to and sends what is
// due, to the devices of subs: those found live for this push (their
// sign-ins are not looked up again).
func (p *Pusher) deliver(ctx context.Context, c inbox.Card, vd inbox.Verdict, to, subs []store.PushSubscription, now time.Time) {
	id := string(c.ID)
	msg, ttl, urgent := p.newMessage(c, vd)
	msgs := make([]Message, len(to))
	for i, s := range to {
		msgs[i] = msg
		if s.Actions {
			msgs[i] = p.withActions(ctx, msg, c, vd, s.Session, now)
		}
	}
	p.mu.Lock()
	if p.shown[id] == nil {
		p.shown[id] = map[string]bool{}
	}
	for i, s := range to {
		p.shown[id][s.Endpoint] = true
		d := p.device(s)
		d.pending = slices.DeleteFunc(d.pending, func(q queued) bool { return q.card == id && !q.settled })
		d.pending = append(d.pending, queued{card: id, msg: msgs[i], ttl: ttl, urgent: urgent})
	}
	p.mu.Unlock()
	if p.cfg.Delivered != nil {
		p.cfg.Delivered(c)
	}
	p.flush(ctx, subs)
}

func (p *Pusher) settle(ctx context.Context, c inbox.Card, vd inbox.Verdict, now time.Time) {
	id := string(c.ID)
	msg := p.settledMessage(c, vd)
	p.mu.Lock()
	to := p.shown[id]
	delete(p.shown, id)
	for endpoint := range to {
		d, ok := p.devices[endpoint]
		if !ok {
			continue
		}
		// Not shown yet: nothing to replace, and nothing to ask.
		before := len(d.pending)
		d.pending = slices.DeleteFunc(d.pending, func(q queued) bool { return q.card == id })
		if len(d.pending) < before {
			continue
		}
		d.pending = append(d.pending, queued{card: id, settled: true, msg: msg, ttl: p.cfg.TTL})
	}
	p.mu.Unlock()
	if _, err := p.store.ClaimPush(ctx, id, store.ClaimSettled, now); err != nil {
		p.cfg.Logger.Warn("push: claim", "err", err)
	}
	p.Flush(ctx)
}

// device returns the turn-taking of s (p.mu held).
func (p *Pusher) device(s store.PushSubscription) *device {
	d, ok := p.devices[s.Endpoint]
	if !ok {
		d = &device{}
		p.devices[s.Endpoint] = d
	}
	d.sub = s
	return d
}

// looking is the operators with a page in view.
func (p *Pusher) looking(ctx context.Context, now time.Time) map[string]bool {
	ops, err := p.store.VisibleOperators(ctx, now.Add(-p.cfg.VisibleFor))
	if err != nil {
		// Unknown: push rather than leave a question unseen.
		return nil
	}
	m := make(map[string]bool, len(ops))
	for _, o := range ops {
		m[o] = true
	}
	return m
}

// Flush sends, to each device whose turn it is, what waits for it: one
// push, or for several new questions one "N new questions" summary. New
// questions for an operator who is now looking are dropped.
func (p *Pusher) Flush(ctx context.Context) { p.flush(ctx, nil) }

// flush is Flush, with live the devices that may be pushed to when the
// caller just found them (nil: flush looks them up).
func (p *Pusher) flush(ctx context.Context, live []store.PushSubscription) {
	now := p.cfg.Now()
	type send struct {
		sub    store.PushSubscription
		msg    Message
		ttl    time.Duration
		urgent bool
	}
	due := func(d *device) bool {
		return len(d.pending) > 0 && (d.last.IsZero() || now.Sub(d.last) >= p.cfg.Coalesce)
	}
	p.mu.Lock()
	some := false
	for _, d := range p.devices {
		some = some || due(d)
	}
	p.mu.Unlock()
	if !some {
		return
	}
	// Who is looking, read once (outside the lock: it is the journal),
	// and which devices are still subscribed: one removed (its owner
	// stopped it, or signed out) or whose sign-in ended gets nothing more.
	// Not known (the journal unreachable): nothing is sent this time, and
	// what waits, waits for the next.
	looking := p.looking(ctx, now)
	if live == nil {
		var err error
		if live, err = p.subscriptions(ctx); err != nil {
			return
		}
	}
	subscribed := make(map[string]bool, len(live))
	for _, s := range live {
		subscribed[s.Endpoint] = true
	}
	p.mu.Lock()
	for endpoint := range p.devices {
		if !subscribed[endpoint] {
			delete(p.devices, endpoint)
		}
	}
	p.mu.Unlock()
	var sends []send
	p.mu.Lock()
	for _, d := range p.devices {
		if !due(d) {
			continue
		}
		// A question not shown by itself (dropped, or summed up below)
		// has no notification of its own to replace when it settles.
		unshown := func(q queued) {
			if to, ok := p.shown[q.card]; ok {
				delete(to, d.sub.Endpoint)
			}
		}
		if looking[d.sub.Operator] {
			d.pending = slices.DeleteFunc(d.pending, func(q queued) bool {
				if !q.settled {
					unshown(q)
				}
				return !q.settled
			})
		}
		var news []queued
		for _, q := range d.pending {
			if !q.settled {
				news = append(news, q)
			}
		}
		switch {
		case len(d.pending) == 0:
			continue
		case len(news) > 1:
			// One summary for them all; the soonest deadline sets TTL and urgency.
			s := send{sub: d.sub, msg: Message{Tag: SummaryTag, Title: view.PushWord("summary-title", len(news)), Body: view.PushWord("summary-body"), URL: p.cfg.BasePath, Renotify: true}}
			for _, q := range news {
				s.ttl = max(s.ttl, q.ttl)
				s.urgent = s.urgent || q.urgent
				unshown(q)
			}
			sends = append(sends, s)
			d.pending = slices.DeleteFunc(d.pending, func(q queued) bool { return !q.settled })
		default:
			q := d.pending[0]
			sends = append(sends, send{sub: d.sub, msg: q.msg, ttl: q.ttl, urgent: q.urgent})
			d.pending = d.pending[1:]
		}
		d.last = now
	}
	p.mu.Unlock()
	for _, s := range sends {
		p.Send(ctx, s.sub, s.msg, s.ttl, s.urgent)
	}
}

// newMessage is a new question's notification, its TTL (until the
// deadline, else Config.TTL) and urgency (high near the deadline).
func (p *Pusher) newMessage(c inbox.Card, vd inbox.Verdict) (Message, time.Duration, bool) {
	agent := c.Agent
	if agent == "" {
		agent = view.PushWord("no-agent")
	}
	m := Message{
		Tag:   string(c.ID),
		Title: cut(view.PushWord("new-title", agent), 120),
		Body:  p.questionLine(c, vd),
		URL:   p.cfg.BasePath + "#card-" + string(c.ID),
	}
	ttl, urgent := p.cfg.TTL, false
	if !vd.Deadline.IsZero() {
		m.Deadline = vd.Deadline.UTC().Format(time.RFC3339)
		ttl = vd.Left
		urgent = ttl < p.cfg.UrgentWithin
		m.Body = cut(m.Body+"\n"+view.PushWord("deadline", vd.Deadline.UTC().Format("15:04 UTC")), 600)
	}
	return m, ttl, urgent
}

// questionLine is what the notification says of the question: its first
// line with Markdown stripped, or only its kind when the request was
// captured at metadata (no text) or HideText is set.
func (p *Pusher) questionLine(c inbox.Card, vd inbox.Verdict) string {
	line := FirstLine(c.Request.Prompt)
	if p.cfg.HideText || vd.Placeholder || line == "" {
		switch c.Request.Kind {
		case "permission", "input", "review", "form":
			return view.PushWord("kind-" + c.Request.Kind)
		}
		return view.PushWord("hidden-text")
	}
	return cut(line, 300)
}

// settledMessage replaces a card's notification when it settles, in the
// words of its verdict (view.PushSettled).
func (p *Pusher) settledMessage(c inbox.Card, vd inbox.Verdict) Message {
	agent := c.Agent
	if agent == "" {
		agent = view.PushWord("no-agent")
	}
	return Message{Tag: string(c.ID), Title: cut(view.PushWord("new-title", agent), 120), Body: cut(view.PushSettled(vd), 200),
		URL: p.cfg.BasePath + "#card-" + string(c.ID), Closed: true}
}

// cut shortens s to at most n bytes on a rune boundary, with an ellipsis.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// pruneClaims forgets push claims older than ClaimsKept, once an hour.
func (p *Pusher) pruneClaims(ctx context.Context) {
	if err := p.pruner.Prune(ctx, p.store, p.cfg.Now()); err != nil {
		p.cfg.Logger.Warn("push: pruning claims", "err", err)
	}
}
