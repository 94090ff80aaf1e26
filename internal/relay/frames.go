package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// codeBinary is the error code answering a binary frame. AEP 0.1 reserves
// binary frames and names no code for refusing one (AEP-0003 §3.5); the
// frame is refused and the connection stays open.
const codeBinary = "binary-unsupported"

// codeUnavailable answers an event the relay could not keep (its
// JetStream stream did not answer in time, ErrUnavailable); the connection
// stays open and the emitter should send the event again. AEP 0.1 names
// no code for it.
const codeUnavailable = "unavailable"

// Frames (AEP-0003 §2). Ids are echoed verbatim as the JSON the peer sent.
type (
	errorFrame struct {
		Type     string          `json:"type"`
		ID       json.RawMessage `json:"id,omitempty"`
		Cause    string          `json:"cause,omitempty"`
		Code     string          `json:"code"`
		Detail   string          `json:"detail,omitempty"`
		Versions []string        `json:"versions,omitempty"`
	}
	idFrame struct {
		Type string          `json:"type"`
		ID   json.RawMessage `json:"id"`
	}
	pingFrame struct {
		Type string          `json:"type"`
		T    json.RawMessage `json:"t,omitempty"`
	}
	exhaustedFrame struct {
		Type     string          `json:"type"`
		Sub      json.RawMessage `json:"sub"`
		Session  string          `json:"session"`
		Earliest aep.Position    `json:"earliest"`
	}
	deliveredPos struct {
		Sub     json.RawMessage `json:"sub"`
		Session string          `json:"session"`
		Epoch   int64           `json:"epoch"`
		Seq     int64           `json:"seq"`
	}
	closingFrame struct {
		Type      string         `json:"type"`
		Reason    string         `json:"reason"`
		Delivered []deliveredPos `json:"delivered"`
	}
	rosterEntry struct {
		Session  string          `json:"session"`
		Agent    json.RawMessage `json:"agent,omitempty"`
		Instance json.RawMessage `json:"instance,omitempty"`
		Control  json.RawMessage `json:"control,omitempty"`
		Emits    json.RawMessage `json:"emits,omitempty"`
	}
	rosterFrame struct {
		Type    string          `json:"type"`
		ID      json.RawMessage `json:"id"`
		Entries json.RawMessage `json:"entries"`
	}
)

// handle dispatches one text frame: an event (its type has a dot) or a
// frame. Unknown frame types are ignored (AEP-0003 §2).
func (c *wsConn) handle(data []byte) {
	var head struct {
		Type json.RawMessage `json:"type"`
		ID   json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(data, &head); err != nil || len(data) == 0 || firstNonSpace(data) != '{' {
		c.send(errorFrame{Code: "invalid-frame", Detail: "a frame is one JSON object"})
		return
	}
	var typ string
	if json.Unmarshal(head.Type, &typ) != nil {
		c.send(errorFrame{Code: "invalid-frame", Detail: "type must be a string"})
		return
	}
	if strings.Contains(typ, ".") {
		c.event(data)
		return
	}
	switch typ {
	case "subscribe":
		c.subscribe(data)
	case "unsubscribe":
		c.unsubscribe(present(head.ID))
	case "roster":
		c.roster(present(head.ID))
	case "ping":
		var p pingFrame
		_ = json.Unmarshal(data, &p)
		c.send(pingFrame{Type: "pong", T: present(p.T)})
	}
}

func firstNonSpace(b []byte) byte {
	for _, x := range b {
		switch x {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return x
	}
	return 0
}

// event ingests one event from the peer; a command is routed instead.
func (c *wsConn) event(data []byte) {
	ev, err := decodeEvent(data)
	if err != nil {
		var id struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(data, &id)
		c.send(errorFrame{Code: "invalid-event", Cause: id.ID, Detail: err.Error()})
		return
	}
	if aep.IsCommand(ev.Type()) {
		c.r.route(c, ev)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.r.cfg.NATS.Timeout)
	defer cancel()
	if _, err := c.r.ingest(ctx, []*aep.Event{ev}, c); err != nil {
		c.send(errorFrame{Code: codeUnavailable, Cause: ev.ID(), Detail: err.Error() + ": send it again"})
	}
}

// subscribeFrame is {type:"subscribe", id, filter, from?, capture?}.
type subscribeFrame struct {
	ID      json.RawMessage `json:"id"`
	Filter  json.RawMessage `json:"filter"`
	From    json.RawMessage `json:"from"`
	Capture json.RawMessage `json:"capture"`
}

// subscribe answers subscribed, then the replay, then live events; or an
// error from the closed set (invalid-filter | unknown-dialect |
// unauthorized | limit-exceeded) that leaves the connection as it was.
func (c *wsConn) subscribe(data []byte) {
	var f subscribeFrame
	if err := json.Unmarshal(data, &f); err != nil {
		c.send(errorFrame{Code: "invalid-filter", Detail: "malformed subscribe frame"})
		return
	}
	id := present(f.ID)
	refuse := func(code, detail string) { c.send(errorFrame{ID: id, Code: code, Detail: detail}) }
	if c.role == roleEmitter {
		refuse("unauthorized", "an emitter-role connection may not subscribe; hello as consumer or both")
		return
	}
	if id == nil {
		refuse("invalid-filter", "subscribe needs an id")
		return
	}
	key := string(id)
	c.mu.Lock()
	_, dup := c.subs[key]
	n := len(c.subs)
	c.mu.Unlock()
	if dup {
		refuse("invalid-filter", "a subscription with this id is active")
		return
	}
	if n >= c.r.cfg.MaxSubscriptions {
		refuse("limit-exceeded", "too many subscriptions on this connection (limit "+itoa(c.r.cfg.MaxSubscriptions)+")")
		return
	}
	sub := &subscriber{ceiling: aep.CaptureFull, out: c.out, id: key, conn: c}
	if raw := present(f.Filter); raw != nil {
		flt, err := aep.ParseFilter(raw)
		if err != nil {
			refuse("invalid-filter", err.Error())
			return
		}
		sub.filter = flt
	}
	if raw := present(f.Capture); raw != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			refuse("invalid-filter", "capture must be a capture level")
			return
		}
		ceiling, err := aep.ParseCapture(s)
		if err != nil {
			refuse("invalid-filter", err.Error())
			return
		}
		sub.ceiling = ceiling
	}
	var from resume
	if raw := present(f.From); raw != nil {
		var err error
		from, err = parseFrom(raw, c.r.cfg.MaxFrom)
		if errors.Is(err, ErrFromLimit) {
			refuse("limit-exceeded", err.Error())
			return
		}
		if err != nil {
			refuse("invalid-filter", err.Error())
			return
		}
	}
	c.mu.Lock()
	c.subs[key] = sub
	c.mu.Unlock()
	ok, _ := json.Marshal(idFrame{Type: "subscribed", ID: id})
	if !from.none() {
		c.r.catchUp(context.Background())
	}
	c.r.attachSocket(sub, from, ok)
}

// unsubscribe ends a subscription; unsubscribed answers it either way.
func (c *wsConn) unsubscribe(id json.RawMessage) {
	if id == nil {
		c.send(errorFrame{Code: "invalid-frame", Detail: "unsubscribe needs an id"})
		return
	}
	c.mu.Lock()
	sub := c.subs[string(id)]
	delete(c.subs, string(id))
	c.mu.Unlock()
	if sub != nil {
		c.r.detach(sub)
	}
	c.send(idFrame{Type: "unsubscribed", ID: id})
}

// roster answers the live claims snapshot (AEP-0003 §4.1); watch-class,
// so an emitter-role ask is refused in-band.
func (c *wsConn) roster(id json.RawMessage) {
	if id == nil {
		c.send(errorFrame{Code: "invalid-frame", Detail: "roster needs an id"})
		return
	}
	if c.role == roleEmitter {
		c.send(errorFrame{ID: id, Code: "unauthorized", Detail: "roster is watch-class: hello as consumer or both"})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.r.cfg.NATS.Timeout)
	defer cancel()
	c.send(rosterFrame{Type: "roster", ID: id, Entries: c.r.events.roster(ctx, c.r.rosterEntries())})
}

// delivered records the highest position delivered per session, at most
// max sessions (an arbitrary one is forgotten past that).
func (s *subscriber) delivered(session string, p aep.Position, max int) {
	if s.pos == nil {
		s.pos = make(map[string]aep.Position)
	}
	if old, ok := s.pos[session]; ok {
		if old.Less(p) {
			s.pos[session] = p
		}
		return
	}
	if len(s.pos) >= max {
		for k := range s.pos {
			delete(s.pos, k)
			break
		}
	}
	s.pos[session] = p
}

// positions lists the delivered positions for a closing frame.
func (s *subscriber) positions() []deliveredPos {
	out := make([]deliveredPos, 0, len(s.pos))
	for session, p := range s.pos {
		out = append(out, deliveredPos{Sub: json.RawMessage(s.id), Session: session, Epoch: p.Epoch, Seq: p.Seq})
	}
	return out
}
