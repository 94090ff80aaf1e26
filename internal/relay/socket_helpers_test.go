package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// wsClient is one WebSocket connection with its incoming frames.
type wsClient struct {
	c      *websocket.Conn
	frames chan []byte
	done   chan struct{}
	err    error // why reading ended, valid after done
}

// dial opens /socket with the relay's token in the query.
func (tr *testRelay) dial(t *testing.T) *wsClient {
	t.Helper()
	c, resp, err := tr.dialRaw(t, url.Values{"access_token": {tr.token}})
	require.NoError(t, err, "dial /socket: %v", resp)
	return c
}

func (tr *testRelay) dialRaw(t *testing.T, q url.Values) (*wsClient, *http.Response, error) {
	t.Helper()
	if tr.token == "" {
		q.Del("access_token")
	}
	u := "ws" + strings.TrimPrefix(tr.url("/socket", q), "http")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(64 << 20)
	w := &wsClient{c: c, frames: make(chan []byte, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				w.err = err
				return
			}
			w.frames <- b
		}
	}()
	t.Cleanup(func() {
		_ = c.CloseNow()
		<-w.done
	})
	return w, resp, nil
}

// send writes one JSON frame (bytes as they are, anything else encoded).
func (w *wsClient) send(t *testing.T, v any) {
	t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(v)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, w.c.Write(ctx, websocket.MessageText, b))
}

// next returns the next frame as raw bytes.
func (w *wsClient) next(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-w.frames:
		return b
	case <-w.done:
		select {
		case b := <-w.frames:
			return b
		default:
		}
		require.FailNow(t, "socket closed", "want another frame; read ended with %v", w.err)
	case <-time.After(wait):
		require.FailNow(t, "no frame", "waited %s for the next frame", wait)
	}
	return nil
}

// frame is a decoded frame or event.
type frame map[string]any

func (f frame) str(k string) string { s, _ := f[k].(string); return s }

// nextFrame returns the next frame decoded, skipping the relay's pings.
func (w *wsClient) nextFrame(t *testing.T) (frame, []byte) {
	t.Helper()
	for {
		b := w.next(t)
		var f frame
		require.NoError(t, json.Unmarshal(b, &f), "frame %s", b)
		if f.str("type") == "ping" {
			continue
		}
		return f, b
	}
}

// frameWithin returns the next frame decoded (pings skipped) if one
// comes within d: false when none does.
func (w *wsClient) frameWithin(t *testing.T, d time.Duration) (frame, bool) {
	t.Helper()
	end := time.After(d)
	for {
		select {
		case b := <-w.frames:
			var f frame
			require.NoError(t, json.Unmarshal(b, &f), "frame %s", b)
			if f.str("type") != "ping" {
				return f, true
			}
		case <-end:
			return nil, false
		}
	}
}

// expect returns the next frame of type typ, failing on any other first.
func (w *wsClient) expect(t *testing.T, typ string) frame {
	t.Helper()
	f, b := w.nextFrame(t)
	require.Equal(t, typ, f.str("type"), "got frame %s, want type %q", b, typ)
	return f
}

// closed waits for the connection to end and returns the close status.
func (w *wsClient) closed(t *testing.T) websocket.StatusCode {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(wait):
		require.FailNow(t, "socket still open", "waited %s for it to close", wait)
	}
	return websocket.CloseStatus(w.err)
}

func hello(role string) map[string]any {
	return map[string]any{"type": "hello", "versions": []string{"0.1"}, "role": role,
		"identity": map[string]any{"agent": "tester", "instance": "test/1"}, "capabilities": map[string]any{}}
}

// consumer dials and completes a consumer hello.
func (tr *testRelay) consumer(t *testing.T) *wsClient {
	t.Helper()
	w := tr.dial(t)
	w.send(t, hello("consumer"))
	w.expect(t, "hello")
	return w
}

// subscribe subscribes with the given members and requires subscribed.
func (w *wsClient) subscribe(t *testing.T, id string, members map[string]any) {
	t.Helper()
	f := map[string]any{"type": "subscribe", "id": id, "filter": map[string]any{}}
	for k, v := range members {
		f[k] = v
	}
	w.send(t, f)
	got := w.expect(t, "subscribed")
	require.Equal(t, id, got.str("id"))
}
