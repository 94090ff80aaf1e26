package conformance

import (
	"context"
	"fmt"
	"slices"
)

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
