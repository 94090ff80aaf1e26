package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coder/websocket"
)

func wsChecks() []check {
	return []check{
		{"ws.hello", checkWSHello},
		{"ws.hello-version-unsupported", checkWSVersionUnsupported},
		{"ws.hello-required", checkWSHelloRequired},
		{"ws.auth-header-or-query", checkWSAuth},
		{"ws.subscribe", checkWSSubscribe},
		{"ws.subscribe-many-unsubscribe", checkWSUnsubscribe},
		{"ws.subscribe-errors-in-band", checkWSSubscribeErrors},
		{"ws.subscribe-from", checkWSFrom},
		{"ws.roster", checkWSRoster},
		{"ws.roster-emitter-refused", checkWSRosterEmitter},
		{"ws.ping-pong", checkWSPing},
		{"ws.binary-refused", checkWSBinary},
		{"ws.unknown-frame-ignored", checkWSUnknownFrame},
		{"ws.event-ingest", checkWSIngest},
	}
}

func checkWSHello(ctx context.Context, r *runner) error {
	w, _, err := r.dial(ctx, dialOpts{})
	if err != nil {
		return err
	}
	defer w.close()
	h := consumerHello(r.prefix + "-hello")
	h["versions"] = []string{"9.9", "0.1"}
	h["capabilities"] = map[string]any{"x-unknown-capability": map[string]any{"a": 1}, "filters": []string{"attr-match"}}
	m, err := w.hello(ctx, h)
	if err != nil {
		return err
	}
	var got struct {
		Versions []string `json:"versions"`
	}
	_ = json.Unmarshal(m.raw, &got)
	if !slices.Equal(got.Versions, []string{"0.1"}) {
		return fmt.Errorf("hello answering versions [9.9 0.1]: got versions %v, want exactly [0.1] (one version selected)", got.Versions)
	}
	if first := w.log.all()[0]; first.typ != "hello" {
		return fmt.Errorf("the relay's first frame: got %s, want hello", clip(first.raw))
	}
	if _, err := w.ping(ctx); err != nil {
		return fmt.Errorf("after hello with an unknown capability key: %w", err)
	}
	return nil
}

// wantErrorAndClose waits for an error frame with code on w, then the close.
func wantErrorAndClose(ctx context.Context, w *wsConn, code, what string) (wsMsg, error) {
	_, m, err := w.next(ctx, 0, func(m wsMsg) bool { return m.typ == "error" })
	if err != nil {
		return m, fmt.Errorf("%s: no error frame: %w (got %v)", what, err, types(w.log.all()))
	}
	if got := str(m.obj, "code"); got != code {
		return m, fmt.Errorf("%s: error frame got %s, want code %q", what, clip(m.raw), code)
	}
	if _, err := w.waitClosed(ctx); err != nil {
		return m, fmt.Errorf("%s: after the %s error: %w", what, code, err)
	}
	return m, nil
}

func types(ms []wsMsg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.typ)
	}
	return out
}

func checkWSVersionUnsupported(ctx context.Context, r *runner) error {
	w, _, err := r.dial(ctx, dialOpts{})
	if err != nil {
		return err
	}
	defer w.close()
	h := consumerHello(r.prefix + "-v9")
	h["type"], h["versions"] = "hello", []string{"9.9"}
	if err := w.send(ctx, h); err != nil {
		return err
	}
	m, err := wantErrorAndClose(ctx, w, "version-unsupported", "hello with versions [9.9]")
	if err != nil {
		return err
	}
	var body struct {
		Versions []string `json:"versions"`
	}
	if json.Unmarshal(m.raw, &body) != nil || !slices.Contains(body.Versions, "0.1") {
		return fmt.Errorf("version-unsupported frame got %s, want versions listing 0.1", clip(m.raw))
	}
	return nil
}

func checkWSHelloRequired(ctx context.Context, r *runner) error {
	firsts := []any{
		map[string]any{"type": "subscribe", "id": "s1", "filter": map[string]any{}},
		map[string]any{"type": "ping", "t": 1},
		r.build(ev{session: r.uniq("nohello"), seq: 0}).Raw(),
	}
	for _, first := range firsts {
		w, _, err := r.dial(ctx, dialOpts{})
		if err != nil {
			return err
		}
		err = w.send(ctx, first)
		if err == nil {
			_, err = wantErrorAndClose(ctx, w, "hello-required", fmt.Sprintf("first frame %s", clip(mustRaw(first))))
		}
		w.close()
		if err != nil {
			return err
		}
	}
	return nil
}

func mustRaw(v any) []byte {
	if b, ok := v.([]byte); ok {
		return b
	}
	return mustJSON(v)
}

func checkWSAuth(ctx context.Context, r *runner) error {
	if !r.t.authenticated() {
		return skipf("no token configured: sockets open without one (every other WS check does)")
	}
	for _, viaHeader := range []bool{true, false} {
		w, res, err := r.dial(ctx, dialOpts{viaHeader: viaHeader})
		if err != nil {
			return fmt.Errorf("dial with the token (header %v): got status %d: %w", viaHeader, res.status, err)
		}
		_, err = w.hello(ctx, consumerHello(r.prefix+"-auth"))
		w.close()
		if err != nil {
			return fmt.Errorf("hello with the token (header %v): %w", viaHeader, err)
		}
	}
	return nil
}

func checkWSPing(ctx context.Context, r *runner) error {
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	for _, t := range []any{1717171717123, "opaque-t"} {
		if err := w.send(ctx, map[string]any{"type": "ping", "t": t}); err != nil {
			return err
		}
		want := string(mustJSON(t))
		if _, _, err := w.next(ctx, 0, func(m wsMsg) bool { return m.typ == "pong" && string(m.obj["t"]) == want }); err != nil {
			return fmt.Errorf("ping t=%s: no pong echoing it: %w (got %v)", want, err, types(w.log.all()))
		}
	}
	return nil
}

func checkWSBinary(ctx context.Context, r *runner) error {
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	n := len(w.log.all())
	if err := w.c.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ping","t":1}`)); err != nil {
		return err
	}
	// Refused: an error frame, a close, or both. Never a pong.
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, m, err := w.next(wctx, n, func(m wsMsg) bool { return true })
	switch {
	case err == nil && m.typ == "error":
		return passf("refused with %s", clip(m.raw))
	case err == nil:
		return fmt.Errorf("binary frame: got %s, want it refused (an error frame or a close)", clip(m.raw))
	case ctx.Err() == nil && wctx.Err() == nil:
		st, _ := w.waitClosed(ctx)
		return passf("refused by closing the connection (status %d)", st)
	}
	return fmt.Errorf("binary frame: nothing within 3 s, want it refused (an error frame or a close): it was silently ignored")
}

func checkWSUnknownFrame(ctx context.Context, r *runner) error {
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	n := len(w.log.all())
	for _, f := range []map[string]any{{"type": "frobnicate", "x": 1}, {"type": "hello-again"}, {"type": "closing-soon", "delivered": []any{}}} {
		if err := w.send(ctx, f); err != nil {
			return err
		}
	}
	i, err := w.ping(ctx)
	if err != nil {
		return fmt.Errorf("after unknown frame types: %w", err)
	}
	for _, m := range w.log.all()[n:i] {
		return fmt.Errorf("unknown frame types must be ignored: got %s, want nothing before the pong", clip(m.raw))
	}
	return nil
}

// checkWSIngest: an event sent on any authenticated connection, whatever
// its role, is ingested and fanned out.
func checkWSIngest(ctx context.Context, r *runner) error {
	sess := r.uniq("wsingest")
	var want [][]byte
	for i, role := range []string{"consumer", "emitter", "both"} {
		w, _, err := r.dial(ctx, dialOpts{})
		if err != nil {
			return err
		}
		h := consumerHello(r.prefix + "-ingest")
		h["role"] = role
		if _, err := w.hello(ctx, h); err != nil {
			w.close()
			return err
		}
		e := r.build(ev{agent: r.prefix + "-ingest" + itoa(i), session: sess, seq: 0})
		want = append(want, e.Raw())
		err = w.send(ctx, e.Raw())
		if err == nil {
			_, err = w.ping(ctx)
		}
		var errs []string
		for _, m := range w.log.all() {
			if m.typ == "error" {
				errs = append(errs, string(m.raw))
			}
		}
		w.close()
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			return fmt.Errorf("event on a %s connection: got %s, want it ingested", role, strings.Join(errs, " "))
		}
	}
	return r.wantHistory(ctx, sess, want...)
}
