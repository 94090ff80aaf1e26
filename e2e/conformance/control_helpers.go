package conformance

import (
	"context"
	"fmt"

	"github.com/aepforms/aepforms/internal/aep"
)

// routedTo waits until e received cmd, and requires the bytes identical.
func routedTo(ctx context.Context, e *emitter, from int, cmd *aep.Event) error {
	_, m, err := e.next(ctx, from, eventID(cmd.ID()))
	if err != nil {
		return fmt.Errorf("%s to session %s: the owning emitter never received it: %w", cmd.Type(), cmd.Session(), err)
	}
	if string(m.raw) != string(cmd.Raw()) {
		return fmt.Errorf("%s routed: got %s, want byte-identical %s", cmd.Type(), clip(m.raw), clip(cmd.Raw()))
	}
	return nil
}

// noErrorFor requires that w holds no error frame for cmd up to a ping
// round trip (frames arrive in order, so a refusal would precede the pong).
func noErrorFor(ctx context.Context, w *wsConn, cmd *aep.Event) error {
	i, err := w.ping(ctx)
	if err != nil {
		return err
	}
	for _, m := range w.log.all()[:i] {
		if errorFor(cmd.ID())(m) {
			return fmt.Errorf("%s: sender got %s, want no refusal (it was routed)", cmd.Type(), clip(m.raw))
		}
	}
	return nil
}

// refused waits for the sender's error frame for cmd and requires code.
func refused(ctx context.Context, w *wsConn, from int, cmd *aep.Event, code string) error {
	_, m, err := w.next(ctx, from, errorFor(cmd.ID()))
	if err != nil {
		return fmt.Errorf("%s to session %s: no error frame for it, want {type:error, cause:%q, code:%q}: %w", cmd.Type(), cmd.Session(), cmd.ID(), code, err)
	}
	if str(m.obj, "cause") != cmd.ID() || str(m.obj, "code") != code {
		return fmt.Errorf("%s refused: got %s, want {type:error, cause:%q, code:%q}", cmd.Type(), clip(m.raw), cmd.ID(), code)
	}
	if _, ok := m.obj["seq"]; ok {
		return fmt.Errorf("relay-behalf error frame carries seq: %s", clip(m.raw))
	}
	return nil
}

// notStored requires that cmd is absent from its session's replay.
func (r *runner) notStored(ctx context.Context, cmd *aep.Event) error {
	items, err := r.history(ctx, filterSession(cmd.Session()), nil)
	if err != nil {
		return err
	}
	if containsID(items, cmd.ID()) {
		return fmt.Errorf("refused %s found in session %s's replay; a refusal never enters history (AEP-0004 §4.2)", cmd.Type(), cmd.Session())
	}
	return nil
}

// controlPair is the set-up most control checks share: routed control
// must be available, an emitter owns a fresh session named after name,
// and a consumer connection is open to send commands from. The caller
// closes both.
func (r *runner) controlPair(ctx context.Context, name string) (*emitter, string, *wsConn, error) {
	if err := r.needControl(); err != nil {
		return nil, "", nil, err
	}
	e, s, err := r.ownedSession(ctx, name)
	if err != nil {
		return nil, "", nil, err
	}
	c, err := r.openConsumer(ctx)
	if err != nil {
		e.close()
		return nil, "", nil, err
	}
	return e, s, c, nil
}

// ownedSession opens an emitter claiming a fresh session.
func (r *runner) ownedSession(ctx context.Context, name string) (*emitter, string, error) {
	e, err := r.openEmitter(ctx, name, "emitter", defaultControl())
	if err != nil {
		return nil, "", err
	}
	s := r.uniq(name)
	if _, err := e.claim(ctx, r, s); err != nil {
		e.close()
		return nil, "", err
	}
	return e, s, nil
}
