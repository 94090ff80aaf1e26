package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// wsMsg is one message a WebSocket peer sent.
type wsMsg struct {
	binary bool
	raw    []byte
	typ    string // the type member ("" when absent or not an object)
	obj    map[string]json.RawMessage
}

// isEvent reports whether m is an Event (its type has a dot), not a frame.
func (m wsMsg) isEvent() bool { return strings.Contains(m.typ, ".") }

// wsConn is a WebSocket connection whose incoming messages are logged by a
// reader goroutine that close waits for.
type wsConn struct {
	c       *websocket.Conn
	log     *feed[wsMsg]
	cancel  context.CancelFunc
	done    chan struct{}
	closed  atomic.Int32 // the close status the peer sent, -1 when none
	pingSeq atomic.Int64
}

// dialOpts says how to authenticate a socket.
type dialOpts struct {
	token     *string // nil: the target's token
	viaHeader bool    // send it as a bearer header instead of ?access_token=
}

// dial opens /socket. The checker authenticates sockets with
// ?access_token= by default, as browsers must (AEP-0003 §8.1). A refused
// handshake returns the HTTP status in resp.
func (r *runner) dial(ctx context.Context, o dialOpts) (*wsConn, resp, error) {
	tok := r.t.Token
	if o.token != nil {
		tok = *o.token
	}
	u := strings.Replace(r.base, "http", "ws", 1) + "/socket"
	hdr := http.Header{}
	if tok != "" {
		if o.viaHeader {
			hdr.Set("Authorization", "Bearer "+tok)
		} else {
			u += "?" + url.Values{"access_token": {tok}}.Encode()
		}
	}
	c, hres, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr, HTTPClient: r.hc})
	if err != nil {
		var rs resp
		if hres != nil {
			rs.status, rs.header = hres.StatusCode, hres.Header
		}
		return nil, rs, fmt.Errorf("dial /socket: %w", err)
	}
	c.SetReadLimit(64 << 20)
	// The reader outlives the dial context: it ends at close.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &wsConn{c: c, log: newFeed[wsMsg](), cancel: cancel, done: make(chan struct{})}
	w.closed.Store(-1)
	go w.read(rctx)
	return w, resp{status: hres.StatusCode}, nil
}

func (w *wsConn) read(ctx context.Context) {
	defer close(w.done)
	for {
		mt, b, err := w.c.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 {
				w.closed.Store(int32(st))
				w.log.end(nil)
				return
			}
			w.log.end(err)
			return
		}
		m := wsMsg{binary: mt == websocket.MessageBinary, raw: b}
		if obj, err := object(b); err == nil {
			m.obj = obj
			m.typ = str(obj, "type")
		}
		if !w.log.add(m) {
			return
		}
	}
}

// close closes the connection and waits for its reader.
func (w *wsConn) close() {
	_ = w.c.Close(websocket.StatusNormalClosure, "checker done")
	w.cancel()
	<-w.done
}

// send writes one text frame: raw bytes as given, anything else as JSON.
func (w *wsConn) send(ctx context.Context, v any) error {
	b, ok := v.([]byte)
	if !ok {
		b = mustJSON(v)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return w.c.Write(wctx, websocket.MessageText, b)
}

// next waits for the first message at index >= from that pred accepts.
func (w *wsConn) next(ctx context.Context, from int, pred func(wsMsg) bool) (int, wsMsg, error) {
	return w.log.wait(ctx, from, pred)
}

// frame matches a frame of type typ whose member key (if key != "")
// equals the JSON string val.
func frame(typ, key, val string) func(wsMsg) bool {
	return func(m wsMsg) bool {
		return m.typ == typ && (key == "" || str(m.obj, key) == val)
	}
}

// errorFor matches an error frame naming id (as id or as cause).
func errorFor(id string) func(wsMsg) bool {
	return func(m wsMsg) bool {
		return m.typ == "error" && (str(m.obj, "id") == id || str(m.obj, "cause") == id)
	}
}

// eventID matches an Event with id.
func eventID(id string) func(wsMsg) bool {
	return func(m wsMsg) bool { return m.isEvent() && str(m.obj, "id") == id }
}

// hello sends a hello frame with role and waits for the peer's hello. An
// error frame instead is returned as an error naming its code.
func (w *wsConn) hello(ctx context.Context, h map[string]any) (wsMsg, error) {
	if _, ok := h["type"]; !ok {
		h["type"] = "hello"
	}
	if _, ok := h["versions"]; !ok {
		h["versions"] = []string{"0.1"}
	}
	if err := w.send(ctx, h); err != nil {
		return wsMsg{}, err
	}
	_, m, err := w.next(ctx, 0, func(m wsMsg) bool { return m.typ == "hello" || m.typ == "error" })
	if err != nil {
		return wsMsg{}, fmt.Errorf("waiting for the relay's hello: %w", err)
	}
	if m.typ == "error" {
		return m, fmt.Errorf("hello refused: %s", clip(m.raw))
	}
	return m, nil
}

// ping sends a ping frame with a fresh t and waits for the pong echoing
// it; it returns the pong's index. Frames from a peer on one connection
// arrive in order, so anything the peer sent before the pong precedes it.
func (w *wsConn) ping(ctx context.Context) (int, error) {
	t := w.pingSeq.Add(1) + 1000
	if err := w.send(ctx, map[string]any{"type": "ping", "t": t}); err != nil {
		return -1, err
	}
	i, _, err := w.next(ctx, 0, func(m wsMsg) bool {
		return m.typ == "pong" && string(m.obj["t"]) == fmt.Sprint(t)
	})
	if err != nil {
		return -1, fmt.Errorf("ping t=%d: no pong echoing it: %w", t, err)
	}
	return i, nil
}

// role hellos.
func consumerHello(name string) map[string]any {
	return map[string]any{"role": "consumer", "identity": map[string]any{"agent": name, "instance": name + "/1"}}
}

// openConsumer dials and completes a consumer hello.
func (r *runner) openConsumer(ctx context.Context) (*wsConn, error) {
	w, _, err := r.dial(ctx, dialOpts{})
	if err != nil {
		return nil, err
	}
	if _, err := w.hello(ctx, consumerHello(r.prefix+"-consumer")); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// subscribe sends a subscribe frame and waits for subscribed; an error
// frame for it is returned as an error.
func (w *wsConn) subscribe(ctx context.Context, sub map[string]any) (int, error) {
	id, _ := sub["id"].(string)
	sub["type"] = "subscribe"
	if err := w.send(ctx, sub); err != nil {
		return -1, err
	}
	i, m, err := w.next(ctx, 0, func(m wsMsg) bool {
		return (m.typ == "subscribed" || m.typ == "error") && str(m.obj, "id") == id
	})
	if err != nil {
		return -1, fmt.Errorf("subscribe %s: no answer: %w", id, err)
	}
	if m.typ == "error" {
		return i, fmt.Errorf("subscribe %s: got %s, want subscribed", id, clip(m.raw))
	}
	return i, nil
}

var errNoClose = errors.New("the connection did not close")

// waitClosed waits for the peer to close; it returns the close status
// (-1 for a connection dropped without a close frame).
func (w *wsConn) waitClosed(ctx context.Context) (websocket.StatusCode, error) {
	if _, err := w.log.waitEnd(ctx); err != nil && ctx.Err() != nil {
		return -1, errNoClose
	}
	return websocket.StatusCode(w.closed.Load()), nil
}
