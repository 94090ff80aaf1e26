package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
)

// benchSender is a bare AEP control sender on the relay's WebSocket: the
// baseline the UI's answer path is compared with. It does what the
// protocol needs and nothing more: hello as a consumer with the bearer
// token, a subscription to the command's acks, the command, the ack.
type benchSender struct {
	ws  *websocket.Conn
	n   int
	ctx context.Context
}

// benchDialSender connects a sender to the stack's relay.
func (s *benchStack) benchDialSender(tb testing.TB) *benchSender {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	dctx, dcancel := context.WithTimeout(ctx, benchWait)
	defer dcancel()
	ws, resp, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(s.relayURL, "http")+"/socket",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + s.token}}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		tb.Fatalf("sender: dial the relay: %v", err)
	}
	tb.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(16 << 20)
	snd := &benchSender{ws: ws, ctx: ctx}
	if err := snd.write(dctx, map[string]any{"type": "hello", "versions": []string{aep.Version}, "role": "consumer",
		"identity": map[string]string{"agent": "bench-raw-sender", "instance": "bench"}, "capabilities": map[string]any{}}); err != nil {
		tb.Fatalf("sender: hello: %v", err)
	}
	if _, err := snd.read(dctx, func(f benchFrame) bool { return f.Type == "hello" }); err != nil {
		tb.Fatalf("sender: hello: %v", err)
	}
	return snd
}

// benchFrame is any frame the relay sends, read loosely.
type benchFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Cause  string          `json:"cause"`
	Code   string          `json:"code"`
	Detail string          `json:"detail"`
	T      json.RawMessage `json:"t"`
	Data   json.RawMessage `json:"data"`
}

func (snd *benchSender) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return snd.ws.Write(ctx, websocket.MessageText, b)
}

// read reads frames until want returns true for one, and returns when it
// was read. It answers pings on the way; a relay error frame is returned
// as an error.
func (snd *benchSender) read(ctx context.Context, want func(benchFrame) bool) (time.Time, error) {
	for {
		_, b, err := snd.ws.Read(ctx)
		at := time.Now()
		if err != nil {
			return at, err
		}
		var f benchFrame
		if err := json.Unmarshal(b, &f); err != nil {
			return at, fmt.Errorf("frame %s: %w", b, err)
		}
		switch {
		case want(f):
			return at, nil
		case f.Type == "ping":
			if err := snd.write(ctx, map[string]any{"type": "pong", "t": f.T}); err != nil {
				return at, err
			}
		case f.Type == "error":
			return at, fmt.Errorf("relay error %s: %s (%s)", f.Code, f.Detail, b)
		}
	}
}

// benchSend is one timed command.
type benchSend struct {
	subscribe time.Duration // subscribe frame written until `subscribed`
	ack       time.Duration // command written until its control.accepted
}

// respond answers one request with answer: it subscribes to the
// command's acks (untimed in ack, as a long-lived sender would have),
// writes the control.attention.respond and waits for its
// control.accepted.
func (snd *benchSender) respond(tb testing.TB, a benchAsked, answer aep.Answer) benchSend {
	tb.Helper()
	ctx, cancel := context.WithTimeout(snd.ctx, benchWait)
	defer cancel()
	ev, err := aep.Decode(a.request.Event)
	if err != nil {
		tb.Fatalf("sender: the agent's request: %v", err)
	}
	var req aep.Request
	if err := ev.DecodeData(&req); err != nil {
		tb.Fatalf("sender: the agent's request: %v", err)
	}
	id := ulid.Make().String()
	cmd, err := aep.Build(aep.Envelope{
		ID: id, Type: "control.attention.respond", Subject: a.request.ID,
		Time:   time.Now().UTC().Format(time.RFC3339Nano),
		Source: "aep://bench.test/sender/raw", Agent: "bench-raw-sender",
		Session: a.session.ID, Cause: a.request.ID,
		Capture: aep.AnswerCapture(answer, req.Fields).String(),
		Data:    aep.Respond{Answer: answer},
	})
	if err != nil {
		tb.Fatalf("sender: build: %v", err)
	}
	snd.n++
	sub := fmt.Sprintf("bench-ack-%d", snd.n)
	t0 := time.Now()
	if err := snd.write(ctx, map[string]any{"type": "subscribe", "id": sub,
		"filter": map[string]any{"session": a.session.ID, "type": []string{"control.accepted", "control.rejected"}, "cause": id}}); err != nil {
		tb.Fatalf("sender: subscribe: %v", err)
	}
	tSub, err := snd.read(ctx, func(f benchFrame) bool { return f.Type == "subscribed" && f.ID == sub })
	if err != nil {
		tb.Fatalf("sender: subscribe: %v", err)
	}
	tSend := time.Now()
	if err := snd.ws.Write(ctx, websocket.MessageText, cmd.Raw()); err != nil {
		tb.Fatalf("sender: write the command: %v", err)
	}
	var got benchFrame
	tAck, err := snd.read(ctx, func(f benchFrame) bool {
		got = f
		return (f.Type == "control.accepted" || f.Type == "control.rejected") && f.Cause == id
	})
	if err != nil {
		tb.Fatalf("sender: waiting for the ack of %s: %v", id, err)
	}
	if got.Type != "control.accepted" {
		tb.Fatalf("sender: %s got %s %s, want control.accepted", id, got.Type, got.Data)
	}
	if err := snd.write(ctx, map[string]any{"type": "unsubscribe", "id": sub}); err != nil {
		tb.Fatalf("sender: unsubscribe: %v", err)
	}
	return benchSend{subscribe: tSub.Sub(t0), ack: tAck.Sub(tSend)}
}
