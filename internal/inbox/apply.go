package inbox

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// Apply ingests one event from the feed. Events are deduplicated on
// (source, id), then checked against the envelope rules
// (aep.ValidateEnvelope): an invalid event changes no card, but an
// invalid attention.requested is shown as a malformed card that says
// which rule it broke (validate.go). Lifecycle events whose request is not known yet are held
// and applied when it arrives, so delivery order does not change the
// result. Types the inbox does not use are accepted and ignored. Apply
// never blocks on subscribers.
func (in *Inbox) Apply(e *aep.Event) {
	if e == nil {
		return
	}
	in.lookupOwn(e) // the journal is read before the lock is taken
	in.mu.Lock()
	defer in.mu.Unlock()
	if e.Type() == "tool.requested" {
		in.onToolRequested(e)
		return
	}
	if !handles(e.Type()) {
		// Types the inbox does not use (agent.* liveness, run.*) take no
		// dedupe memory; they are only checked and counted when invalid.
		if err := aep.ValidateEnvelope(e); err != nil {
			in.invalidEvent(e, err)
		}
		return
	}
	if e.ID() != "" {
		k := seenKeyOf(e.Key())
		if in.seen.has(k) {
			return
		}
		in.seen.put(k, struct{}{})
	}
	if err := aep.ValidateEnvelope(e); err != nil {
		in.invalidEvent(e, err)
	} else {
		in.dispatch(e)
	}
	in.drain()
	in.commit()
}

// handles reports whether dispatch has a handler for events of type typ.
func handles(typ string) bool {
	switch typ {
	case "attention.requested", "attention.routed", "attention.answered", "attention.resolved", "attention.timeout",
		"control.attention.respond", "control.accepted", "control.rejected", "session.ended":
		return true
	}
	return false
}

// dispatch routes e to its handler by type (handles lists them).
func (in *Inbox) dispatch(e *aep.Event) {
	switch e.Type() {
	case "attention.requested":
		in.onRequested(e, nil)
	case "attention.routed", "attention.answered", "attention.resolved", "attention.timeout",
		"control.attention.respond":
		in.onLifecycle(e)
	case "control.accepted", "control.rejected":
		in.onAck(e)
	case "session.ended":
		in.onSessionEnded(e)
	}
}

// find returns the cards a lifecycle event belongs to: by (session,
// subject), else by (session, cause) as the request id, else by following
// cause one hop through a linked event (a command, an ack, an answer).
// Among cards sharing (session, request id), one with the event's own
// source is preferred. With no card it returns the keys to wait under.
func (in *Inbox) find(e *aep.Event) ([]*entry, []subjKey) {
	session, subject, cause := e.Session(), e.Subject(), e.Cause()
	if subject != "" {
		if ens := in.lookup(subjKey{session, subject}, e.Source()); len(ens) > 0 {
			return ens, nil
		}
	}
	if cause != "" {
		ck := subjKey{session, cause}
		if ens := in.lookup(ck, e.Source()); len(ens) > 0 {
			return ens, nil
		}
		if en, ok := in.links[ck]; ok {
			return []*entry{en}, nil
		}
	}
	var wait []subjKey
	if subject != "" {
		wait = append(wait, subjKey{session, subject})
	}
	if cause != "" && cause != subject {
		wait = append(wait, subjKey{session, cause})
	}
	return nil, wait
}

func (in *Inbox) lookup(sk subjKey, source string) []*entry {
	ens := in.bySubject[sk]
	if len(ens) <= 1 {
		return ens
	}
	var same []*entry
	for _, en := range ens {
		if en.card.Key.Source == source {
			same = append(same, en)
		}
	}
	if len(same) > 0 {
		return same
	}
	return ens
}

// link records that the event id in session belongs to en, so events whose
// cause names it find the card, and wakes orphans waiting for it.
func (in *Inbox) link(session, id string, en *entry) {
	if id == "" {
		return
	}
	k := subjKey{session, id}
	if _, ok := in.links[k]; ok {
		return
	}
	in.links[k] = en
	en.links = append(en.links, k)
	in.wake(k)
}

// firstApply marks e as applied to en and reports whether it was new.
func firstApply(en *entry, e *aep.Event) bool {
	k := e.Key()
	if en.applied[k] {
		return false
	}
	if en.applied == nil {
		en.applied = make(map[aep.Key]bool)
	}
	en.applied[k] = true
	return true
}

func (in *Inbox) onLifecycle(e *aep.Event) {
	ens, wait := in.find(e)
	if len(ens) == 0 {
		in.hold(e, wait)
		return
	}
	for _, en := range ens {
		if !firstApply(en, e) {
			continue
		}
		in.link(e.Session(), e.ID(), en)
		in.touch(en, in.applyLifecycle(en, e))
	}
}

// maxCardFacts bounds the routes and the other senders' commands kept on
// one card: the first ones tell the operator what they need to know, and
// producer-controlled events must not grow memory (or every Card copy)
// without bound.
const maxCardFacts = 32

// applyLifecycle records one lifecycle fact and reports whether the card
// changed. Where two events say the same kind of thing, the earlier in the
// session's order wins, whatever order they arrived in.
func (in *Inbox) applyLifecycle(en *entry, e *aep.Event) bool {
	c := &en.card
	at := factAt(e)
	switch e.Type() {
	case "attention.routed":
		var d aep.Routed
		_ = e.DecodeData(&d) // a route is a fact even when its data is unreadable
		if d.Via == SurfaceVia {
			return false // this UI's own delivery: the card's Routing tells it
		}
		if len(c.Routes) >= maxCardFacts {
			return false // bounded: a flood of routes cannot grow a card without end
		}
		c.Routes = append(c.Routes, Route{To: d.To, Via: d.Via, Source: e.Source(), Agent: e.Agent()})
		return true
	case "attention.answered":
		if c.Recorded != nil && !at.before(en.answeredAt) {
			return false
		}
		var d aep.Answered
		o := &Recorded{Capture: e.Capture(), EventID: e.ID(), Time: e.Time(), Cause: e.Cause()}
		if err := e.DecodeData(&d); err != nil {
			o.Malformed = "the answer does not decode: " + decodeWords("its data", err)
		}
		o.Answer, o.By, o.Via = d.Answer, d.By, d.Via
		c.Recorded, en.answeredAt = o, at
		return true
	case "attention.resolved":
		if en.resolved && !at.before(en.resolvedAt) {
			return false
		}
		var d aep.Resolved
		_ = e.DecodeData(&d)
		c.Resolution, c.LatencyMS = d.Resolution, d.LatencyMS
		en.resolved, en.resolvedAt = true, at
		return true
	case "attention.timeout":
		if en.timedOut && !at.before(en.timeoutAt) {
			return false
		}
		var d aep.Timeout
		_ = e.DecodeData(&d)
		c.TimeoutMS = d.AfterMS
		en.timedOut, en.timeoutAt = true, at
		return true
	case "control.attention.respond":
		return in.onCommand(en, e)
	}
	return false
}

// onCommand applies a control.attention.respond for en's request and
// reports whether the card changed. Our own command (one this inbox
// sent, or its journal holds: sent before a restart) is the card's
// submission; any other is a Responder that locks the form while it is in
// flight: another sender's, or one from this UI's own source that the
// journal does not hold (a journal deleted or replaced).
func (in *Inbox) onCommand(en *entry, e *aep.Event) bool {
	c := &en.card
	id := e.ID()
	if en.ownIDs[id] {
		return false // our own command, echoed by the relay
	}
	for _, r := range c.Responders {
		if r.CommandID == id {
			return false
		}
	}
	own := slices.Contains(in.opts.OwnSources, e.Source())
	if own {
		if s, ok := in.journaled(id); ok {
			return in.adopt(en, s)
		}
	}
	if len(c.Responders) >= maxCardFacts {
		return false
	}
	var d struct {
		Answer aep.Answer      `json:"answer"`
		By     json.RawMessage `json:"by"`
	}
	_ = e.DecodeData(&d) // a command is a fact even when its data is unreadable
	r := Responder{CommandID: id, Agent: e.Agent(), Source: e.Source(), Answer: d.Answer, Capture: e.Capture(),
		By: senderName(e.Agent(), d.By), Own: own, SeenAt: in.opts.Now()}
	c.Responders = append(c.Responders, r)
	if own {
		// Sent by this UI, so what it causes is this UI's (ownOutcome),
		// though no submission of the journal holds it.
		in.ownID(en, id)
	}
	return true
}

// senderName is who sent a command: its data's "by" when it is a string,
// else the operator in an agent attribute "{ui}/{operator}" (aepforms
// sends "{agent}/{operator}"), else the agent attribute.
func senderName(agent string, by json.RawMessage) string {
	var name string
	if json.Unmarshal(by, &name) == nil && strings.TrimSpace(name) != "" {
		return name
	}
	if _, op, ok := strings.Cut(agent, "/"); ok && op != "" {
		return op
	}
	return agent
}

// ownID marks a command id (or its ack's) as this UI's on en.
func (in *Inbox) ownID(en *entry, id string) {
	if en.ownIDs == nil {
		en.ownIDs = make(map[string]bool)
		en.tokens = make(map[string]bool)
	}
	en.ownIDs[id] = true
}

// onAck applies control.accepted / control.rejected: cause is a command
// id, ours (the submission settles) or another sender's (its Responder
// records the ack).
func (in *Inbox) onAck(e *aep.Event) {
	cause := e.Cause()
	if cause == "" {
		return
	}
	state := SubmissionAccepted
	var d aep.Rejected
	if e.Type() == "control.rejected" {
		state = SubmissionRejected
		_ = e.DecodeData(&d)
	}
	if _, ok := in.ours[cause]; !ok {
		if _, ok := in.links[subjKey{e.Session(), cause}]; !ok {
			// A relay that keeps no commands in history replays only
			// their acks: one of a command the journal holds is ours.
			in.adoptCommand(e.Session(), cause)
		}
	}
	if en, ok := in.ours[cause]; ok && en.card.Key.Session == e.Session() {
		if !firstApply(en, e) {
			return
		}
		en.ownIDs[e.ID()] = true
		en.noteAck(e.ID(), cause)
		in.link(e.Session(), e.ID(), en)
		changed := false
		if s := en.sub(cause); s != nil {
			changed = in.settle(s, state, d.Reason, d.Detail)
		}
		in.touch(en, changed)
		return
	}
	en, ok := in.links[subjKey{e.Session(), cause}]
	if !ok {
		in.hold(e, []subjKey{{e.Session(), cause}})
		return
	}
	if !firstApply(en, e) {
		return
	}
	in.link(e.Session(), e.ID(), en)
	changed := false
	for i := range en.card.Responders {
		r := &en.card.Responders[i]
		if r.CommandID == cause && r.Ack == "" {
			r.Ack, r.Reason = state, d.Reason
			changed = true
			if r.Own {
				in.ownID(en, e.ID()) // an outcome caused by this ack is this UI's
			}
		}
	}
	in.touch(en, changed)
}

// onSessionEnded marks the (source, session) ended at the event's
// position; every request of that session asked before it is ended.
func (in *Inbox) onSessionEnded(e *aep.Event) {
	sk := e.SessionKey()
	pos, sequenced := e.Position()
	mark := endMark{pos: pos, sequenced: sequenced}
	if old, ok := in.ended.get(sessionDigest(sk)); ok {
		if !old.sequenced || (sequenced && !old.pos.Less(pos)) {
			return
		}
	}
	in.ended.put(sessionDigest(sk), mark)
	for _, en := range in.byID {
		if en.card.Key.Source == sk.Source && en.card.Key.Session == sk.Session {
			in.touch(en, false)
		}
	}
}

// factPos orders competing events of one kind (two answers to one
// request) independently of arrival: sequenced before unsequenced, then by
// (epoch, seq), then by id.
type factPos struct {
	pos       aep.Position
	sequenced bool
	id        string
}

func factAt(e *aep.Event) factPos {
	pos, ok := e.Position()
	return factPos{pos: pos, sequenced: ok, id: e.ID()}
}

func (p factPos) before(q factPos) bool {
	if p.sequenced != q.sequenced {
		return p.sequenced
	}
	if c := p.pos.Compare(q.pos); c != 0 {
		return c < 0
	}
	return p.id < q.id
}

// onToolRequested remembers the tool a tool.requested event names, so a
// request whose cause is that event names its tool (Card.Tool): a rule
// made from it answers only requests for the same tool.
func (in *Inbox) onToolRequested(e *aep.Event) {
	if err := aep.ValidateEnvelope(e); err != nil {
		in.invalidEvent(e, err)
		return
	}
	var d struct {
		Tool struct {
			Name string `json:"name"`
		} `json:"tool"`
	}
	if e.ID() == "" || json.Unmarshal(e.Data(), &d) != nil || d.Tool.Name == "" {
		return
	}
	in.tools.put(seenKeyOf(e.Key()), d.Tool.Name)
}
