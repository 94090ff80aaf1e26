package conformance

import (
	"context"
	"fmt"

	"github.com/aepforms/aepforms/internal/aep"
)

// emitter is the checker's fake control-capable emitter: a WebSocket
// connection that claims sessions by emitting sequenced events on them
// (AEP-0003: ownership is only by sequenced events) and logs the commands
// routed to it.
type emitter struct {
	*wsConn
	agent, instance string
	seq             map[string]int64
}

// defaultControl is the control block the fake emitter declares.
func defaultControl() map[string]any {
	return map[string]any{"accepts": []string{respondType, "control.cancel"}, "ack_window_ms": 4321}
}

// openEmitter dials and completes an emitter hello declaring control (nil:
// none) and emits.
func (r *runner) openEmitter(ctx context.Context, name, role string, control map[string]any) (*emitter, error) {
	w, _, err := r.dial(ctx, dialOpts{})
	if err != nil {
		return nil, err
	}
	e := &emitter{wsConn: w, agent: r.prefix + "-" + name, instance: r.prefix + "-" + name + "/inst", seq: map[string]int64{}}
	caps := map[string]any{"emits": []string{"progress", "session"}}
	if control != nil {
		caps["control"] = control
	}
	h := map[string]any{"role": role, "identity": map[string]any{"agent": e.agent, "instance": e.instance}, "capabilities": caps}
	if _, err := w.hello(ctx, h); err != nil {
		w.close()
		return nil, err
	}
	return e, nil
}

// claim emits the next sequenced event of session on e, then waits for a
// ping round trip, so the relay has read the event before the caller goes
// on. It returns the event.
func (e *emitter) claim(ctx context.Context, r *runner, session string) (*aep.Event, error) {
	ev := r.build(ev{agent: e.agent, session: session, seq: e.seq[session]})
	e.seq[session]++
	if err := e.send(ctx, ev.Raw()); err != nil {
		return nil, err
	}
	if _, err := e.ping(ctx); err != nil {
		return nil, err
	}
	return ev, nil
}

// received counts the transmissions of the event id e received.
func (e *emitter) received(id string) int {
	n := 0
	for _, m := range e.log.all() {
		if m.isEvent() && str(m.obj, "id") == id {
			n++
		}
	}
	return n
}

// sendCommand sends a command's bytes on w and returns the log length
// before it, so waits start there.
func (w *wsConn) sendCommand(ctx context.Context, cmd *aep.Event) (int, error) {
	n := len(w.log.all())
	if err := w.send(ctx, cmd.Raw()); err != nil {
		return n, fmt.Errorf("sending %s: %w", cmd.Type(), err)
	}
	return n, nil
}
