package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/aepforms/aepforms/internal/aep"
)

// Roles a hello may declare.
const (
	roleEmitter  = "emitter"
	roleConsumer = "consumer"
	roleBoth     = "both"
)

// wsConn is one WebSocket connection after its hello.
type wsConn struct {
	r   *Relay
	ws  *websocket.Conn
	raw net.Conn // the hijacked connection, closed to force a stuck close handshake
	out *outbox

	// From the peer's hello, kept verbatim for the roster.
	role                            string
	agent, instance, control, emits json.RawMessage
	accepts                         []string // declared control.accepts

	lastSeen atomic.Int64 // unix nanos of the last frame received
	closed   atomic.Bool  // a closing frame was sent: later frames are ignored

	mu   sync.Mutex // guards subs
	subs map[string]*subscriber

	// claims, under r.mu: sessions this connection owns, oldest first.
	claimed []string

	buf []item // writer-owned
}

// handleSocket serves GET /socket (AEP-0003 §3.5): hello first both ways,
// then events, commands and frames from the peer, and the peer's
// subscriptions, routed commands and replies toward it.
func (r *Relay) handleSocket(w http.ResponseWriter, req *http.Request) {
	if !r.enter() {
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "shutting-down"})
		return
	}
	defer r.wg.Done()
	tap := &hijackTap{ResponseWriter: w}
	ws, err := websocket.Accept(tap, req, &websocket.AcceptOptions{
		OriginPatterns:     r.cfg.OriginPatterns,
		InsecureSkipVerify: r.cfg.Token != "", // the token is not ambient, so no cross-site risk
	})
	if err != nil {
		r.log.Debug("relay: websocket accept", "err", err)
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(r.cfg.MaxBody)
	c := &wsConn{r: r, ws: ws, raw: tap.conn, out: newOutboxWithin(r.cfg.Queue, r.cfg.QueueBytes), subs: make(map[string]*subscriber)}
	r.mu.Lock()
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	defer r.dropConn(c)
	if !c.hello() {
		return
	}
	c.lastSeen.Store(time.Now().UnixNano())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeLoop(ctx)
	}()
	c.readLoop(ctx)
	// The peer is gone (or closed in order): stop the writer before failing
	// the outbox, so the end of a connection is not mistaken for a slow
	// consumer (and logged as one).
	cancel()
	<-done
	c.out.fail()
}

// hijackTap records the connection websocket.Accept hijacks, so a drain
// that must be forced can close it even while a close handshake waits on
// a peer that stopped reading.
type hijackTap struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackTap) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, brw, err
}

// helloFrame is the hello both ways (AEP-0003 §4).
type helloFrame struct {
	Type         string          `json:"type"`
	Versions     []string        `json:"versions"`
	Role         string          `json:"role"`
	Identity     json.RawMessage `json:"identity,omitempty"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
}

// hello reads the peer's hello and answers it; false (after an error frame
// and a close) when the first frame is not an acceptable hello.
func (c *wsConn) hello() bool {
	ctx, cancel := context.WithTimeout(c.r.drain, c.r.cfg.HelloTimeout)
	defer cancel()
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		return false
	}
	var h helloFrame
	if typ != websocket.MessageText || json.Unmarshal(data, &h) != nil || h.Type != "hello" {
		c.refuse(errorFrame{Code: "hello-required", Detail: "the first frame must be a hello"})
		return false
	}
	if !slices.Contains(h.Versions, aep.Version) {
		c.refuse(errorFrame{Code: "version-unsupported", Detail: "this relay speaks AEP 0.1 only", Versions: []string{aep.Version}})
		return false
	}
	switch h.Role {
	case roleEmitter, roleConsumer, roleBoth:
	default:
		c.refuse(errorFrame{Code: "invalid-hello", Detail: "role must be emitter, consumer or both"})
		return false
	}
	c.role = h.Role
	var id struct{ Agent, Instance json.RawMessage }
	_ = json.Unmarshal(h.Identity, &id)
	var caps struct{ Control, Emits json.RawMessage }
	_ = json.Unmarshal(h.Capabilities, &caps)
	c.agent, c.instance = present(id.Agent), present(id.Instance)
	c.control, c.emits = present(caps.Control), present(caps.Emits)
	var ctl struct {
		Accepts []string `json:"accepts"`
	}
	if c.control != nil && json.Unmarshal(c.control, &ctl) == nil {
		c.accepts = ctl.Accepts
	}
	capsJSON, _ := json.Marshal(c.r.capabilities())
	reply, _ := json.Marshal(helloFrame{
		Type: "hello", Versions: []string{aep.Version}, Role: roleBoth,
		Identity:     json.RawMessage(`{"agent":"aepforms-relay"}`),
		Capabilities: capsJSON,
	})
	return c.write(reply) == nil
}

// present returns v unless it is absent or JSON null.
func present(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// refuse sends an error frame during the handshake and closes.
func (c *wsConn) refuse(f errorFrame) {
	f.Type = "error"
	b, _ := json.Marshal(f)
	if c.write(b) == nil {
		_ = c.ws.Close(websocket.StatusPolicyViolation, f.Code)
	}
}

// write sends one text frame under the write deadline.
func (c *wsConn) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.r.cfg.WriteTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// readLoop handles the peer's frames until the connection ends.
func (c *wsConn) readLoop(ctx context.Context) {
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) && ctx.Err() == nil {
				c.r.log.Debug("relay: socket read", "err", err)
			}
			return
		}
		c.lastSeen.Store(time.Now().UnixNano())
		if c.closed.Load() {
			continue // frames after our closing are not processed
		}
		if typ != websocket.MessageText {
			c.send(errorFrame{Code: codeBinary, Detail: "AEP 0.1 carries one JSON object per text frame; binary frames are reserved"})
			continue
		}
		c.handle(data)
	}
}

// writeLoop is the connection's only writer after the hello: queued
// frames, events and forwarded commands, the ping every WSPing, and the
// closing frame when the relay drains or the peer is too slow.
func (c *wsConn) writeLoop(ctx context.Context) {
	ping := time.NewTicker(c.r.cfg.WSPing)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.r.closing:
			if c.drain() {
				c.closeWith("shutting-down", websocket.StatusGoingAway)
			}
			return
		case <-ping.C:
			if time.Since(time.Unix(0, c.lastSeen.Load())) > c.r.cfg.WSPongTimeout {
				c.closeWith("ping timeout", websocket.StatusPolicyViolation)
				return
			}
			b, _ := json.Marshal(pingFrame{Type: "ping", T: json.RawMessage(jsonInt(time.Now().UnixMilli()))})
			if c.write(b) != nil {
				return
			}
		case <-c.out.notify:
			if !c.drain() {
				return
			}
		}
	}
}

// drain writes everything queued; false when the connection is done
// (a write failed, or the peer overflowed and was sent closing).
func (c *wsConn) drain() bool {
	var failed bool
	c.buf, failed = c.out.take(c.buf)
	for i, it := range c.buf {
		c.buf[i] = item{}
		if c.closed.Load() {
			return false
		}
		if !c.writeItem(it) {
			_ = c.ws.CloseNow()
			return false
		}
	}
	if failed && !c.closed.Load() {
		c.r.log.Warn("relay: socket consumer too slow; closing so it resumes", "queue", c.r.cfg.Queue)
		c.closeWith("slow consumer: resume from the delivered positions", websocket.StatusTryAgainLater)
		return false
	}
	return !failed
}

func (c *wsConn) writeItem(it item) bool {
	switch it.kind {
	case itemFrame:
		return c.write(it.frame) == nil
	case itemEvents:
		for _, d := range it.batch.ds {
			if !it.sub.match(d.ev) {
				continue
			}
			ev, err := d.at(it.sub.ceiling)
			if err != nil {
				c.r.log.Warn("relay: down-level for delivery", "err", err)
				continue
			}
			if !c.deliver(it.sub, ev) {
				return false
			}
		}
	case itemReplay:
		for _, m := range it.replay.marks {
			b, _ := json.Marshal(exhaustedFrame{Type: "replay-exhausted", Sub: json.RawMessage(it.sub.id), Session: m.session, Earliest: m.earliest})
			if c.write(b) != nil {
				return false
			}
		}
		for _, ev := range it.replay.events {
			out, err := downlevel(ev, it.sub.ceiling)
			if err != nil {
				c.r.log.Warn("relay: down-level for replay", "err", err)
				continue
			}
			if !c.deliver(it.sub, out) {
				return false
			}
		}
	}
	return true
}

// deliver writes one event of sub and records its position for closing.
func (c *wsConn) deliver(sub *subscriber, ev *aep.Event) bool {
	if c.write(ev.Raw()) != nil {
		return false
	}
	if p, ok := ev.Position(); ok && ev.SessionScoped() {
		sub.delivered(ev.Session(), p, c.r.cfg.MaxSessions)
	}
	return true
}

// closeWith sends closing with the delivered positions, then closes.
func (c *wsConn) closeWith(reason string, code websocket.StatusCode) {
	if c.closed.Swap(true) {
		return
	}
	f := closingFrame{Type: "closing", Reason: reason, Delivered: []deliveredPos{}}
	c.mu.Lock()
	for _, s := range c.subs {
		f.Delivered = append(f.Delivered, s.positions()...)
	}
	c.mu.Unlock()
	b, _ := json.Marshal(f)
	if c.write(b) != nil {
		_ = c.ws.CloseNow()
		return
	}
	// The close frame goes out; the peer's answer is waited for at most
	// CloseWait, then the connection is dropped under the handshake (a
	// CloseNow would wait for the handshake it cuts short).
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = c.ws.Close(code, reason)
	}()
	t := time.NewTimer(c.r.cfg.CloseWait)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		if c.raw != nil {
			_ = c.raw.Close()
		}
		<-closed
	}
}

// send queues a frame for the writer.
func (c *wsConn) send(f any) {
	if e, ok := f.(errorFrame); ok {
		e.Type = "error"
		f = e
	}
	b, err := json.Marshal(f)
	if err != nil {
		c.r.log.Error("relay: encode frame", "err", err)
		return
	}
	c.out.pushControl(item{kind: itemFrame, frame: b})
}

func jsonInt(n int64) []byte {
	b, _ := json.Marshal(n)
	return b
}
