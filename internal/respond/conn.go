package respond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/coder/websocket"
)

// Errors of the connection.
var (
	// ErrUnauthorized: the relay refused this client's token at the handshake.
	ErrUnauthorized = errors.New("respond: relay refused the token")
	// ErrHello: the relay did not complete the hello exchange.
	ErrHello = errors.New("respond: hello exchange failed")
	// errLost: the connection ended while a command was on it.
	errLost = errors.New("respond: connection lost")
)

// conn is one live relay connection after a completed hello. Its reader
// routes replies to the waiters registered on it; when the reader ends,
// done is closed and every waiter treats the connection as lost.
type conn struct {
	c    *Client
	ws   *websocket.Conn
	done chan struct{}
	// ctx scopes every write after the hello. It outlives the Run context
	// so a shutdown can still say `closing`: the library closes the
	// connection when a write's context fires, so writes never use a
	// caller's context.
	ctx    context.Context
	cancel context.CancelFunc

	roster bool          // the relay advertised the roster frame
	ask    chan struct{} // a roster request is wanted (buffer 1)

	mu   sync.Mutex
	subs map[string]chan inFrame   // subscribe id -> subscribed/error reply
	acks map[string]chan ackResult // command id -> ack or relay error
	last time.Time                 // when the last frame arrived
}

// dial connects to {RelayURL}/socket and completes the hello exchange.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	h := http.Header{}
	if c.cfg.Token != "" {
		h.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	ws, resp, err := websocket.Dial(ctx, socketURL(c.cfg.RelayURL), &websocket.DialOptions{
		HTTPClient: c.cfg.HTTPClient,
		HTTPHeader: h,
	})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return nil, fmt.Errorf("%w (HTTP %d)", ErrUnauthorized, resp.StatusCode)
		}
		return nil, fmt.Errorf("respond: dial relay: %w", err)
	}
	ws.SetReadLimit(c.cfg.MaxFrame)
	cn := &conn{
		c:    c,
		ws:   ws,
		done: make(chan struct{}),
		ask:  make(chan struct{}, 1),
		subs: make(map[string]chan inFrame),
		acks: make(map[string]chan ackResult),
		last: time.Now(),
	}
	if err := cn.hello(ctx); err != nil {
		ws.CloseNow()
		return nil, err
	}
	cn.ctx, cn.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return cn, nil
}

// socketURL is the relay base with /socket appended.
func socketURL(base string) string {
	return strings.TrimRight(base, "/") + "/socket"
}

// hello sends ours and reads the relay's, which must select version 0.1.
func (cn *conn) hello(ctx context.Context) error {
	cfg := cn.c.cfg
	b, err := json.Marshal(helloFrame{
		Type:         "hello",
		Versions:     []string{aep.Version},
		Role:         "consumer",
		Identity:     identity{Agent: cfg.Agent, Instance: cfg.Instance},
		Capabilities: json.RawMessage(`{}`),
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHello, err)
	}
	if err := cn.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("%w: %w", ErrHello, err)
	}
	typ, b, err := cn.ws.Read(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHello, err)
	}
	if typ != websocket.MessageText {
		return fmt.Errorf("%w: binary frame", ErrHello)
	}
	var f inFrame
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%w: %w", ErrHello, err)
	}
	switch {
	case f.Type == "error" && f.Code == CodeUnauthorized:
		return fmt.Errorf("%w: %s", ErrUnauthorized, f.Detail)
	case f.Type == "error":
		return fmt.Errorf("%w: relay error %q", ErrHello, f.Code)
	case f.Type != "hello":
		return fmt.Errorf("%w: first frame is %q", ErrHello, f.Type)
	case len(f.Versions) != 1 || f.Versions[0] != aep.Version:
		return fmt.Errorf("%w: relay selected versions %q", ErrHello, f.Versions)
	}
	_, cn.roster = f.Capabilities["roster"]
	return nil
}

// write sends v as one text frame.
func (cn *conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return cn.writeRaw(b)
}

// writeRaw sends b as one text frame under the write timeout (a write that
// times out closes the connection). The library serializes concurrent
// writers; its lock is taken under the same deadline.
func (cn *conn) writeRaw(b []byte) error {
	ctx, cancel := context.WithTimeout(cn.ctx, cn.c.cfg.WriteTimeout)
	defer cancel()
	return cn.ws.Write(ctx, websocket.MessageText, b)
}

// read runs the reader until the connection ends. It reads under the
// connection's own long-lived context (the library closes the connection
// when a read context fires); shutdown goes through close. It closes done
// on return.
func (cn *conn) read() error {
	defer close(cn.done)
	for {
		typ, b, err := cn.ws.Read(cn.ctx)
		if err != nil {
			return err
		}
		cn.mu.Lock()
		cn.last = time.Now()
		cn.mu.Unlock()
		if typ != websocket.MessageText {
			cn.c.log.Debug("relay sent a binary frame; ignored")
			continue
		}
		cn.route(b)
	}
}

// route dispatches one text frame.
func (cn *conn) route(b []byte) {
	var f inFrame
	if err := json.Unmarshal(b, &f); err != nil {
		cn.c.log.Debug("relay sent a frame that is not a JSON object; ignored", "err", err)
		return
	}
	if isEvent(f.Type) {
		cn.event(b)
		return
	}
	switch f.Type {
	case "ping":
		t := f.T
		if t == nil {
			t = json.RawMessage("null")
		}
		if err := cn.write(pingFrame{Type: "pong", T: t}); err != nil {
			cn.c.log.Debug("pong not written", "err", err)
		}
	case "subscribed":
		cn.reply(f.ID, f)
	case "error":
		cn.relayError(f)
	case "roster":
		taken, again := cn.c.roster.set(f.ID, f.Entries)
		if taken {
			cn.c.cfg.Notify()
			cn.c.agentBack() // answers refused no-route whose agent is back
		}
		if again {
			cn.askRoster()
		}
	case "closing":
		cn.c.log.Info("relay is closing the connection", "reason", f.Reason)
	}
	// pong, unsubscribed, replay-exhausted, hello and unknown frames need
	// nothing (unknown frames are ignored, AEP-0003 §2).
}

// event hands an ack to the command waiting for its cause.
func (cn *conn) event(b []byte) {
	ev, err := aep.Decode(b)
	if err != nil {
		cn.c.log.Debug("relay sent an undecodable event; ignored", "err", err)
		return
	}
	if ev.Type() != typeAccepted && ev.Type() != typeRejected {
		return
	}
	cn.settle(ev.Cause(), ackResult{event: ev})
}

// relayError routes an error frame: by cause to a command, by id to a
// subscription or the roster request.
func (cn *conn) relayError(f inFrame) {
	if f.Cause != "" {
		if f.Code == CodeUnavailable {
			// The relay could not decide where it goes yet (its
			// cluster mid-election, a node not answering) and sent it
			// nowhere: the command is sent again within its ack window
			// and owed past it, never failed for good.
			cn.c.log.Info("relay: command not routed yet; it is sent again", "command", f.Cause, "detail", f.Detail)
			return
		}
		cn.settle(f.Cause, ackResult{code: f.Code, detl: f.Detail})
		if f.Code == CodeNoRoute || f.Code == CodeAmbiguous {
			cn.c.Refresh()
		}
		return
	}
	if cn.c.roster.refused(f.ID) {
		cn.c.log.Warn("relay refused the roster request", "code", f.Code)
		cn.c.cfg.Notify()
		return
	}
	if f.ID != "" && cn.reply(f.ID, f) {
		return
	}
	cn.c.log.Warn("relay error", "code", f.Code, "detail", f.Detail)
}

// close ends the connection deliberately: a `closing` frame, then the
// close handshake (bounded by the library), then the write context.
// ended reports whether the connection is lost (done closed).
func (cn *conn) ended() bool {
	select {
	case <-cn.done:
		return true
	default:
		return false
	}
}

func (cn *conn) close(reason string) {
	if err := cn.write(closingFrame{Type: "closing", Reason: reason, Delivered: []struct{}{}}); err != nil {
		cn.c.log.Debug("closing frame not written", "err", err)
	}
	if err := cn.ws.Close(websocket.StatusNormalClosure, reason); err != nil {
		cn.c.log.Debug("close handshake", "err", err)
	}
	cn.cancel()
}
