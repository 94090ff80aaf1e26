package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/backoff"
)

// hello is the agent's hello frame (AEP-0003 §4).
type hello struct {
	Type         string            `json:"type"`
	Versions     []string          `json:"versions"`
	Role         string            `json:"role"`
	Identity     helloIdentity     `json:"identity"`
	Capabilities helloCapabilities `json:"capabilities"`
}

type helloIdentity struct {
	Agent    string `json:"agent"`
	Instance string `json:"instance"`
}

type helloCapabilities struct {
	Emits   []string     `json:"emits"`
	Capture []string     `json:"capture"`
	Control helloControl `json:"control"`
}

type helloControl struct {
	Accepts     []string `json:"accepts"`
	AckWindowMS int64    `json:"ack_window_ms"`
}

// frame is the part of any inbound frame the agent reads.
type frame struct {
	Type     string          `json:"type"`
	Versions []string        `json:"versions"`
	T        json.RawMessage `json:"t"`
	Code     string          `json:"code"`
	Cause    string          `json:"cause"`
	Reason   string          `json:"reason"`
	Detail   string          `json:"detail"`
}

func (a *Agent) helloFrame() []byte {
	var levels []string
	for c := aep.CaptureNone; c <= a.cfg.Capture; c++ {
		levels = append(levels, c.String())
	}
	b, _ := json.Marshal(hello{
		Type:     "hello",
		Versions: []string{aep.Version},
		Role:     "emitter",
		Identity: helloIdentity{Agent: a.cfg.Agent, Instance: a.cfg.Instance},
		Capabilities: helloCapabilities{
			Emits:   []string{"session", "run", "attention", "control"},
			Capture: levels,
			Control: helloControl{Accepts: slices.Clone(accepts), AckWindowMS: a.cfg.AckWindow.Milliseconds()},
		},
	})
	return b
}

// connectLoop connects, serves and reconnects with backoff until ctx ends
// (nil) or the relay refuses the credentials.
func (a *Agent) connectLoop(ctx context.Context) error {
	policy := backoff.Policy{Min: a.cfg.Backoff, Max: a.cfg.BackoffMax, Rand: a.cfg.Rand}
	attempt := 0
	for {
		helloed, err := a.connectOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrUnauthorized) {
			return err
		}
		if helloed {
			attempt = 0
		}
		wait := policy.Delay(attempt)
		attempt++
		a.log.Warn("relay connection lost; reconnecting", "err", err, "in", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// connectOnce dials, exchanges hellos, re-claims the open sessions and
// serves the connection until it fails or ctx ends. helloed reports that
// the relay answered the hello.
func (a *Agent) connectOnce(ctx context.Context) (helloed bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, a.cfg.DialTimeout)
	defer cancel()
	h := http.Header{}
	if a.cfg.Token != "" {
		h.Set("Authorization", "Bearer "+a.cfg.Token)
	}
	c, resp, err := websocket.Dial(dctx, a.cfg.socketURL(), &websocket.DialOptions{HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return false, fmt.Errorf("%w (HTTP %d)", ErrUnauthorized, resp.StatusCode)
		}
		return false, fmt.Errorf("agent: dial: %w", err)
	}
	defer c.CloseNow()
	c.SetReadLimit(a.cfg.MaxFrame)

	if err := a.writeFrame(c, a.helloFrame()); err != nil {
		return false, err
	}
	typ, b, err := c.Read(dctx)
	if err != nil {
		return false, fmt.Errorf("agent: waiting for the relay's hello: %w", err)
	}
	var f frame
	if typ != websocket.MessageText || json.Unmarshal(b, &f) != nil {
		return false, fmt.Errorf("%w: first frame is not a JSON text frame", ErrHelloRefused)
	}
	switch {
	case f.Type == "error":
		return false, fmt.Errorf("%w: error %q", ErrHelloRefused, f.Code)
	case f.Type != "hello":
		return false, fmt.Errorf("%w: first frame is %q, not hello", ErrHelloRefused, f.Type)
	case !slices.Contains(f.Versions, aep.Version):
		return false, fmt.Errorf("%w: relay speaks %v, not %s", ErrHelloRefused, f.Versions, aep.Version)
	}

	a.mu.Lock()
	reclaim := a.reclaimLocked()
	// Said before the first start's sessions are logged: connected first.
	a.log.Info("connected to relay", "relay", a.cfg.socketURL(), "reclaiming", len(reclaim))
	a.startLocked(a.cfg.Now())
	a.changedLocked()
	a.mu.Unlock()
	return true, a.serve(ctx, c, reclaim)
}

// serve writes the re-claim events, then the queue, and pings, while a
// reader goroutine handles inbound frames. When ctx ends it closes the
// connection politely (closing frame, close 1000).
func (a *Agent) serve(ctx context.Context, c *websocket.Conn, reclaim []*aep.Event) error {
	rctx, stopRead := context.WithCancel(context.Background())
	readErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { readErr <- a.readLoop(rctx, c) })
	defer func() {
		stopRead()
		wg.Wait()
	}()

	for _, ev := range reclaim {
		if err := a.writeFrame(c, ev.Raw()); err != nil {
			return err
		}
		a.delivered(ev)
	}
	ping := time.NewTicker(a.cfg.Ping)
	defer ping.Stop()
	for {
		if ev := a.peek(); ev != nil {
			if err := a.writeFrame(c, ev.Raw()); err != nil {
				return err
			}
			a.delivered(ev)
			continue
		}
		select {
		case <-ctx.Done():
			closing, _ := json.Marshal(map[string]any{"type": "closing", "reason": "agent stopping", "delivered": []any{}})
			if err := a.writeFrame(c, closing); err == nil {
				_ = c.Close(websocket.StatusNormalClosure, "agent stopping")
			}
			return ctx.Err()
		case err := <-readErr:
			return err
		case <-a.wake:
		case <-ping.C:
			p, _ := json.Marshal(map[string]any{"type": "ping", "t": a.cfg.Now().UnixMilli()})
			if err := a.writeFrame(c, p); err != nil {
				return err
			}
		}
	}
}

// readLoop reads frames until the connection fails, ctx ends, or nothing
// arrived for PongTimeout.
func (a *Agent) readLoop(ctx context.Context, c *websocket.Conn) error {
	for {
		tctx, cancel := context.WithTimeout(ctx, a.cfg.PongTimeout)
		typ, b, err := c.Read(tctx)
		timedOut := tctx.Err() == context.DeadlineExceeded
		cancel()
		if err != nil {
			if timedOut {
				return fmt.Errorf("agent: no frame from the relay for %s", a.cfg.PongTimeout)
			}
			return fmt.Errorf("agent: read: %w", err)
		}
		if typ != websocket.MessageText {
			a.log.Warn("binary frame from the relay ignored")
			continue
		}
		if reply := a.handleFrame(b); reply != nil {
			if err := a.writeFrame(c, reply); err != nil {
				return err
			}
		}
	}
}

// deliverCommand handles a command now, or hands its handling to
// Config.Commands.
func (a *Agent) deliverCommand(raw []byte, cmd *aep.Event) {
	if a.cfg.Commands == nil {
		a.handleCommand(raw, cmd)
		return
	}
	a.cfg.Commands(func() { a.handleCommand(raw, cmd) })
}

// handleFrame handles one inbound text frame and returns the frame to send
// back, if any: a pong for a ping. Events whose type is a command go to
// handleCommand; other events and unknown frames are ignored.
func (a *Agent) handleFrame(b []byte) []byte {
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		a.log.Warn("unreadable frame from the relay ignored", "err", err)
		return nil
	}
	if strings.Contains(f.Type, ".") {
		ev, err := aep.Decode(b)
		if err != nil {
			a.log.Warn("undecodable event from the relay ignored", "err", err)
			return nil
		}
		if aep.IsCommand(ev.Type()) && ev.ID() != "" {
			a.deliverCommand(b, ev)
		}
		return nil
	}
	switch f.Type {
	case "ping":
		pong := map[string]json.RawMessage{"type": json.RawMessage(`"pong"`)}
		if len(f.T) > 0 {
			pong["t"] = f.T
		}
		b, _ := json.Marshal(pong)
		return b
	case "closing":
		a.log.Info("relay is closing the connection", "reason", f.Reason)
	case "error":
		a.log.Warn("relay error frame", "code", f.Code, "cause", f.Cause, "detail", f.Detail)
	}
	return nil
}

// writeFrame writes one text frame within WriteTimeout. Writes use their own
// context: a cancelled caller context would close the connection mid-frame.
func (a *Agent) writeFrame(c *websocket.Conn, b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("agent: write: %w", err)
	}
	return nil
}
