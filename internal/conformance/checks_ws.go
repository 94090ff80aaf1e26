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

func checkWSSubscribe(ctx context.Context, r *runner) error {
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	sess := r.uniq("wssub")
	if _, err := w.subscribe(ctx, map[string]any{"id": "sub-1", "filter": map[string]any{"session": sess}}); err != nil {
		return err
	}
	e := r.build(ev{session: sess, seq: 0})
	if err := r.post(ctx, e); err != nil {
		return err
	}
	_, m, err := w.next(ctx, 0, eventID(e.ID()))
	if err != nil {
		return fmt.Errorf("subscribed to session %s: the posted event never arrived: %w", sess, err)
	}
	if string(m.raw) != string(e.Raw()) {
		return fmt.Errorf("event frame got %s, want the event byte-identical %s", clip(m.raw), e.Raw())
	}
	return nil
}

func checkWSUnsubscribe(ctx context.Context, r *runner) error {
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	s1, s2 := r.uniq("unsubA"), r.uniq("unsubB")
	for id, s := range map[string]string{"a": s1, "b": s2} {
		if _, err := w.subscribe(ctx, map[string]any{"id": id, "filter": map[string]any{"session": s}}); err != nil {
			return err
		}
	}
	x, y := r.build(ev{session: s1, seq: 0}), r.build(ev{session: s2, seq: 0})
	if err := r.post(ctx, x, y); err != nil {
		return err
	}
	for _, e := range []string{x.ID(), y.ID()} {
		if _, _, err := w.next(ctx, 0, eventID(e)); err != nil {
			return fmt.Errorf("two subscriptions on one connection: event %s never arrived: %w", e, err)
		}
	}
	if err := w.send(ctx, map[string]any{"type": "unsubscribe", "id": "a"}); err != nil {
		return err
	}
	if _, _, err := w.next(ctx, 0, frame("unsubscribed", "id", "a")); err != nil {
		return fmt.Errorf("unsubscribe a: no unsubscribed frame: %w", err)
	}
	x2, y2 := r.build(ev{session: s1, seq: 1}), r.build(ev{session: s2, seq: 1})
	if err := r.post(ctx, x2); err != nil {
		return err
	}
	if err := r.post(ctx, y2); err != nil {
		return err
	}
	if _, _, err := w.next(ctx, 0, eventID(y2.ID())); err != nil {
		return fmt.Errorf("subscription b after unsubscribing a: %w", err)
	}
	if _, err := w.ping(ctx); err != nil {
		return err
	}
	for _, m := range w.log.all() {
		if m.isEvent() && str(m.obj, "id") == x2.ID() {
			return fmt.Errorf("after unsubscribed a: got %s on it, want nothing more", clip(m.raw))
		}
	}
	return nil
}

func checkWSSubscribeErrors(ctx context.Context, r *runner) error {
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	cases := []struct {
		sub  map[string]any
		code string
	}{
		{map[string]any{"filter": map[string]any{"NotAnAttr": "y"}}, "invalid-filter"},
		{map[string]any{"filter": map[string]any{"type": "*"}}, "invalid-filter"},
		{map[string]any{"filter": map[string]any{"agent": "claude*"}}, "invalid-filter"},
		{map[string]any{"filter": "not an object"}, "invalid-filter"},
		{map[string]any{"filter": map[string]any{}, "from": "bogus"}, "invalid-filter"},
		{map[string]any{"filter": map[string]any{}, "from": map[string]any{"session": "x", "epoch": 0, "seq": 0}}, "invalid-filter"},
	}
	if r.t.MaxFrom > 0 {
		var ps []pos
		for i := 0; i <= r.t.MaxFrom; i++ {
			ps = append(ps, pos{r.uniq("cap"), 0, 0})
		}
		cases = append(cases, struct {
			sub  map[string]any
			code string
		}{map[string]any{"filter": map[string]any{}, "from": ps}, "limit-exceeded"})
	}
	for i, c := range cases {
		id := "bad-" + itoa(i)
		c.sub["type"], c.sub["id"] = "subscribe", id
		if err := w.send(ctx, c.sub); err != nil {
			return err
		}
		_, m, err := w.next(ctx, 0, func(m wsMsg) bool { return str(m.obj, "id") == id })
		if err != nil {
			return fmt.Errorf("subscribe %s: no answer: %w", clip(mustJSON(c.sub)), err)
		}
		if m.typ != "error" || str(m.obj, "code") != c.code {
			return fmt.Errorf("subscribe %s: got %s, want error {id:%q, code:%q}", clip(mustJSON(c.sub)), clip(m.raw), id, c.code)
		}
	}
	// The connection survived every refusal and still subscribes.
	sess := r.uniq("survive")
	if _, err := w.subscribe(ctx, map[string]any{"id": "good", "filter": map[string]any{"session": sess}}); err != nil {
		return fmt.Errorf("after the refusals: %w", err)
	}
	e := r.build(ev{session: sess, seq: 0})
	if err := r.post(ctx, e); err != nil {
		return err
	}
	if _, _, err := w.next(ctx, 0, eventID(e.ID())); err != nil {
		return fmt.Errorf("after the refusals, the good subscription got nothing: %w", err)
	}
	return nil
}

func checkWSFrom(ctx context.Context, r *runner) error {
	a, b := r.uniq("wsfromA"), r.uniq("wsfromB")
	if err := r.twoEpochs(ctx, a); err != nil {
		return err
	}
	if err := r.post(ctx, r.seqEvents(b, 0, 2)...); err != nil {
		return err
	}
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	filter := map[string]any{"session": []string{a, b}}
	if _, err := w.subscribe(ctx, map[string]any{"id": "f1", "filter": filter, "from": []pos{{a, 0, 3}}}); err != nil {
		return err
	}
	live := r.build(ev{session: b, seq: 2})
	if err := r.post(ctx, live); err != nil {
		return err
	}
	i, _, err := w.next(ctx, 0, eventID(live.ID()))
	if err != nil {
		return fmt.Errorf("from=[%s 0:3] then live: the live event never arrived: %w", a, err)
	}
	got := wsPositions(w.log.all()[:i+1])
	want := []string{a + "@0:4", a + "@1:0", a + "@1:1", b + "@0:2"}
	if !slices.Equal(got, want) {
		return fmt.Errorf("subscribe from=[%s 0:3]: got %v, want %v (replay strictly after, unnamed sessions live only, then live)", a, got, want)
	}
	n := len(w.log.all())
	if _, err := w.subscribe(ctx, map[string]any{"id": "f2", "filter": map[string]any{"session": a}, "from": "all"}); err != nil {
		return err
	}
	last := w.log.all()
	_, _, err = w.next(ctx, n, func(m wsMsg) bool {
		return m.isEvent() && str(m.obj, "session") == a && string(m.obj["epoch"]) == "1" && string(m.obj["seq"]) == "1"
	})
	if err != nil {
		return fmt.Errorf("subscribe from=all: session %s's last event never arrived: %w (got %v)", a, err, wsPositions(last[n:]))
	}
	got = wsPositions(w.log.all()[n:])
	want = []string{a + "@0:0", a + "@0:1", a + "@0:2", a + "@0:3", a + "@0:4", a + "@1:0", a + "@1:1"}
	if !slices.Equal(got, want) {
		return fmt.Errorf("subscribe from=all: got %v, want %v", got, want)
	}
	for _, m := range w.log.all() {
		if m.typ == "replay-exhausted" {
			return fmt.Errorf("got %s, want no replay-exhausted (positions within the buffer, and from=all)", clip(m.raw))
		}
	}
	return nil
}

// wsPositions lists session@epoch:seq of the events among ms.
func wsPositions(ms []wsMsg) []string {
	var out []string
	for _, m := range ms {
		if !m.isEvent() {
			continue
		}
		ep := string(m.obj["epoch"])
		if ep == "" {
			ep = "0"
		}
		out = append(out, str(m.obj, "session")+"@"+ep+":"+string(m.obj["seq"]))
	}
	return out
}

// askRoster sends a roster request on w and returns the reply (or error
// frame) naming id.
func askRoster(ctx context.Context, w *wsConn, id string) (wsMsg, error) {
	if err := w.send(ctx, map[string]any{"type": "roster", "id": id}); err != nil {
		return wsMsg{}, err
	}
	_, m, err := w.next(ctx, 0, func(m wsMsg) bool { return (m.typ == "roster" || m.typ == "error") && str(m.obj, "id") == id })
	if err != nil {
		return m, fmt.Errorf("roster %s: no reply echoing the id: %w", id, err)
	}
	return m, nil
}

// rosterEntry is one roster entry.
type rosterEntry struct {
	Session  string          `json:"session"`
	Agent    string          `json:"agent"`
	Instance string          `json:"instance"`
	Control  json.RawMessage `json:"control"`
	Emits    []string        `json:"emits"`
}

func rosterEntries(m wsMsg, session string) ([]rosterEntry, error) {
	var body struct {
		Entries []rosterEntry `json:"entries"`
	}
	if err := json.Unmarshal(m.raw, &body); err != nil || m.typ != "roster" {
		return nil, fmt.Errorf("roster reply got %s, want {type:roster, id, entries:[...]}", clip(m.raw))
	}
	var out []rosterEntry
	for _, e := range body.Entries {
		if e.Session == session {
			out = append(out, e)
		}
	}
	return out, nil
}

func checkWSRoster(ctx context.Context, r *runner) error {
	if err := r.rosterAdvertised(ctx); err != nil {
		return err
	}
	control := map[string]any{"accepts": []string{respondType}, "ack_window_ms": 4321, "x_note": "kept verbatim"}
	e1, err := r.openEmitter(ctx, "roster1", "emitter", control)
	if err != nil {
		return err
	}
	defer e1.close()
	e2, err := r.openEmitter(ctx, "roster2", "both", nil)
	if err != nil {
		return err
	}
	defer e2.close()
	s1, s2 := r.uniq("roster1"), r.uniq("roster2")
	if _, err := e1.claim(ctx, r, s1); err != nil {
		return err
	}
	if _, err := e2.claim(ctx, r, s2); err != nil {
		return err
	}
	c, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	m, err := askRoster(ctx, c, "r-1")
	if err != nil {
		return err
	}
	got1, err := rosterEntries(m, s1)
	if err != nil {
		return err
	}
	if len(got1) != 1 {
		return fmt.Errorf("roster: got %d entries for session %s, want 1 (one live claim): %s", len(got1), s1, clip(m.raw))
	}
	en := got1[0]
	if en.Agent != e1.agent || en.Instance != e1.instance {
		return fmt.Errorf("roster entry for %s: got agent %q instance %q, want the hello's %q %q", s1, en.Agent, en.Instance, e1.agent, e1.instance)
	}
	if !jsonEqual(en.Control, mustJSON(control)) {
		return fmt.Errorf("roster entry control: got %s, want the declared block verbatim %s", en.Control, mustJSON(control))
	}
	if !slices.Equal(en.Emits, []string{"progress", "session"}) {
		return fmt.Errorf("roster entry emits: got %v, want the declared [progress session]", en.Emits)
	}
	got2, err := rosterEntries(m, s2)
	if err != nil {
		return err
	}
	if len(got2) != 1 || got2[0].Agent != e2.agent || len(got2[0].Control) != 0 {
		return fmt.Errorf("roster entry for %s (a claimant that declared no control): got %s, want one entry, agent %q, no control member", s2, mustJSON(got2), e2.agent)
	}
	return nil
}

func checkWSRosterEmitter(ctx context.Context, r *runner) error {
	if err := r.rosterAdvertised(ctx); err != nil {
		return err
	}
	e, err := r.openEmitter(ctx, "rosterask", "emitter", nil)
	if err != nil {
		return err
	}
	defer e.close()
	m, err := askRoster(ctx, e.wsConn, "r-em")
	if err != nil {
		return err
	}
	if m.typ != "error" || str(m.obj, "code") != "unauthorized" {
		return fmt.Errorf("roster asked on an emitter-role connection: got %s, want error {code:unauthorized, id:r-em}", clip(m.raw))
	}
	if _, err := e.claim(ctx, r, r.uniq("rosterask")); err != nil {
		return fmt.Errorf("after the in-band refusal the connection must survive: %w", err)
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
