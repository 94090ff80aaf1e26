package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

func bufferChecks() []check {
	return []check{
		{"buffer.dedupe-source-id", checkDedupe},
		{"buffer.backfill-accepted", checkBackfill},
		{"buffer.ws-reemit-accepted", checkWSReemit},
		{"buffer.seqless-kept", checkSeqlessKept},
		{"evict.sse-replay-exhausted", checkEvictSSE},
		{"evict.ws-replay-exhausted", checkEvictWS},
		{"evict.from-all-holds-only-buffer", checkEvictFromAll},
		{"evict.per-session", checkEvictPerSession},
	}
}

// checkDedupe: buffer admission dedupes on (source, id), never bare id;
// live fan-out forwards a redelivery as received (AEP-0003 §5).
func checkDedupe(ctx context.Context, r *runner) error {
	sess := r.uniq("dedupe")
	live, err := r.liveStream(ctx, url.Values{"filter": {filterSession(sess)}})
	if err != nil {
		return err
	}
	defer live.close()
	a := r.build(ev{session: sess, seq: 0})
	sameIDOtherSource := r.build(ev{agent: r.prefix + "-other", session: sess, seq: 0, id: a.ID()})
	for _, e := range []*aep.Event{a, a, sameIDOtherSource} {
		if err := r.post(ctx, e); err != nil {
			return fmt.Errorf("posting a redelivery: %w (an at-least-once retry is accepted)", err)
		}
	}
	if err := r.wantHistory(ctx, sess, a.Raw(), sameIDOtherSource.Raw()); err != nil {
		return fmt.Errorf("after posting A twice and A's id from another source: %w", err)
	}
	i, _, err := live.log.wait(ctx, 0, func(it sseItem) bool { return it.data == string(sameIDOtherSource.Raw()) })
	if err != nil {
		return fmt.Errorf("live: the other source's event never arrived: %w", err)
	}
	n := 0
	for _, it := range live.log.all()[:i] {
		if it.data == string(a.Raw()) {
			n++
		}
	}
	if n != 2 {
		return fmt.Errorf("live fan-out: got A %d times, want 2 (redelivery forwarded as received; dedupe is the terminal consumer's duty)", n)
	}
	return nil
}

// checkBackfill: an event at or below the session's highest position is
// accepted, not refused, and replay orders by (epoch, seq).
func checkBackfill(ctx context.Context, r *runner) error {
	sess := r.uniq("backfill")
	e5 := r.build(ev{session: sess, seq: 5})
	e3 := r.build(ev{session: sess, seq: 3})
	e5b := r.build(ev{session: sess, seq: 5})
	for _, e := range []*aep.Event{e5, e3, e5b} {
		if err := r.post(ctx, e); err != nil {
			return fmt.Errorf("seq %d after seq 5: %w (at or below the high-water mark is legal backfill)", mustSeq(e), err)
		}
	}
	items, err := r.history(ctx, filterSession(sess), nil)
	if err != nil {
		return err
	}
	got := seqsOf(items)
	if !slices.Equal(got, []int64{3, 5, 5}) {
		return fmt.Errorf("replay after posting seq 5, 3, 5 (new id): got seqs %v, want [3 5 5] (every id kept, ordered by (epoch, seq))", got)
	}
	return nil
}

func mustSeq(e *aep.Event) int64 {
	s, _ := e.Seq()
	return s
}

// checkWSReemit: an emitter re-sending an event byte-identically on its
// socket (a re-ack) is not refused, is forwarded live, and is stored once.
func checkWSReemit(ctx context.Context, r *runner) error {
	e, err := r.openEmitter(ctx, "reemit", "emitter", defaultControl())
	if err != nil {
		return err
	}
	defer e.close()
	sess := r.uniq("reemit")
	live, err := r.liveStream(ctx, url.Values{"filter": {filterSession(sess)}})
	if err != nil {
		return err
	}
	defer live.close()
	evs := []*aep.Event{r.build(ev{agent: e.agent, session: sess, seq: 0}), r.build(ev{agent: e.agent, session: sess, seq: 1, typ: "control.accepted", cause: "cmd-1", data: map[string]any{}})}
	last := r.build(ev{agent: e.agent, session: sess, seq: 2})
	for _, b := range []*aep.Event{evs[0], evs[1], evs[1], last} {
		if err := e.send(ctx, b.Raw()); err != nil {
			return err
		}
	}
	if _, err := e.ping(ctx); err != nil {
		return err
	}
	for _, m := range e.log.all() {
		if m.typ == "error" {
			return fmt.Errorf("re-emitting an event below the high-water mark: got %s, want it accepted", clip(m.raw))
		}
	}
	i, _, err := waitEventID(ctx, live, 0, last.ID())
	if err != nil {
		return err
	}
	if got := seqsOf(live.log.all()[:i+1]); !slices.Equal(got, []int64{0, 1, 1, 2}) {
		return fmt.Errorf("live: got seqs %v, want [0 1 1 2] (the re-emission forwarded as received)", got)
	}
	return r.wantHistory(ctx, sess, evs[0].Raw(), evs[1].Raw(), last.Raw())
}

// checkSeqlessKept: seq-less session events and agent-scoped events are
// kept, in arrival order among themselves.
func checkSeqlessKept(ctx context.Context, r *runner) error {
	sess, agent := r.uniq("seqless"), r.uniq("agentonly")
	routed := func(to string) *aep.Event {
		return r.build(ev{agent: r.prefix + "-sink", session: sess, seq: -1, typ: "attention.routed", subject: "req-1", data: map[string]any{"to": to}})
	}
	hb := func(n int) *aep.Event {
		return r.build(ev{agent: agent, seq: -1, typ: "agent.heartbeat", data: map[string]any{"tick": n}})
	}
	seqd := r.build(ev{session: sess, seq: 0})
	posts := []*aep.Event{routed("b"), seqd, routed("a"), hb(2), hb(1)}
	for _, e := range posts {
		if err := r.post(ctx, e); err != nil {
			return err
		}
	}
	items, err := r.history(ctx, filterSession(sess), nil)
	if err != nil {
		return err
	}
	var got []string
	for _, it := range events(items) {
		got = append(got, it.data)
	}
	if len(got) != 3 || !slices.Contains(got, string(seqd.Raw())) {
		return fmt.Errorf("replay of session %s: got %v, want the 2 attention.routed and the sequenced event", sess, got)
	}
	routedOnly := slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s == string(seqd.Raw()) })
	if routedOnly[0] != string(posts[0].Raw()) || routedOnly[1] != string(posts[2].Raw()) {
		return fmt.Errorf("seq-less events: got %v, want them in arrival order (to b, then to a)", routedOnly)
	}
	items, err = r.history(ctx, string(mustJSON(map[string]any{"agent": agent})), nil)
	if err != nil {
		return err
	}
	msgs := events(items)
	if len(msgs) != 2 || msgs[0].data != string(posts[3].Raw()) || msgs[1].data != string(posts[4].Raw()) {
		return fmt.Errorf("agent-scoped events under from=all: got %v, want both heartbeats in arrival order (tick 2, tick 1)", dataOf(msgs))
	}
	return nil
}

// flood posts Buffer+extra events to a fresh session and returns it and
// the seq of the earliest event still held.
func (r *runner) flood(ctx context.Context, extra int) (string, int64, error) {
	sess := r.uniq("flood")
	n := int64(r.t.Buffer + extra)
	if err := r.postChunked(ctx, r.seqEvents(sess, 0, n)); err != nil {
		return "", 0, err
	}
	return sess, int64(extra), nil
}

func (r *runner) needEvict() error {
	if !r.t.Evict {
		return skipf("not in eviction mode (Target.Evict): flooding a %d-event buffer is left to an eviction run", r.t.Buffer)
	}
	return nil
}

// wantHeld checks that msgs are exactly seqs earliest..earliest+Buffer-1.
func (r *runner) wantHeld(got []int64, earliest int64, what string) error {
	var want []int64
	for s := earliest; s < earliest+int64(r.t.Buffer); s++ {
		want = append(want, s)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: got %d events (seqs %s), want the %d held, seq %d..%d in order", what, len(got), seqRange(got), r.t.Buffer, earliest, earliest+int64(r.t.Buffer)-1)
	}
	return nil
}

// seqRange summarises a seq list for a message.
func seqRange(s []int64) string {
	if len(s) <= 12 {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%v ... %v", s[:5], s[len(s)-5:])
}

func checkEvictSSE(ctx context.Context, r *runner) error {
	if err := r.needEvict(); err != nil {
		return err
	}
	sess, earliest, err := r.flood(ctx, 16)
	if err != nil {
		return err
	}
	wantComment := fmt.Sprintf("replay-exhausted %s 0:%d", sess, earliest)
	for _, c := range []struct {
		what string
		q    url.Values
		hdr  http.Header
	}{
		{"from=[seq 0]", url.Values{"from": {fromPositions(pos{sess, 0, 0})}}, nil},
		{"Last-Event-ID seq 3", url.Values{}, http.Header{"Last-Event-ID": {sess + ":0:3"}}},
	} {
		c.q.Set("filter", filterSession(sess))
		c.q.Set("live", "0")
		items, err := r.replay(ctx, c.q, c.hdr)
		if err != nil {
			return err
		}
		if len(items) == 0 || !items[0].isComment || items[0].comment != wantComment {
			first := "nothing"
			if len(items) > 0 {
				first = fmt.Sprintf("%+v", items[0])
			}
			return fmt.Errorf("%s past a %d-event buffer: first item got %s, want the comment %q before any replayed event", c.what, r.t.Buffer, first, ": "+wantComment)
		}
		if err := r.wantHeld(seqsOf(items), earliest, c.what); err != nil {
			return err
		}
	}
	return nil
}

func checkEvictWS(ctx context.Context, r *runner) error {
	if err := r.needEvict(); err != nil {
		return err
	}
	sess, earliest, err := r.flood(ctx, 16)
	if err != nil {
		return err
	}
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	n := len(w.log.all())
	if _, err := w.subscribe(ctx, map[string]any{"id": "ex", "filter": map[string]any{"session": sess}, "from": []pos{{sess, 0, 0}}}); err != nil {
		return err
	}
	lastSeq := fmt.Sprint(earliest + int64(r.t.Buffer) - 1)
	i, _, err := w.next(ctx, n, func(m wsMsg) bool { return m.isEvent() && string(m.obj["seq"]) == lastSeq })
	if err != nil {
		return fmt.Errorf("subscribe from seq 0: the last held event (seq %s) never arrived: %w", lastSeq, err)
	}
	msgs := w.log.all()[n : i+1]
	ex := -1
	for j, m := range msgs {
		if m.typ == "replay-exhausted" {
			ex = j
			break
		}
	}
	if ex < 0 {
		return fmt.Errorf("subscribe from seq 0 past a %d-event buffer: got frames %v, want a replay-exhausted frame", r.t.Buffer, types(msgs))
	}
	for _, m := range msgs[:ex] {
		if m.isEvent() {
			return fmt.Errorf("an event %s arrived before the replay-exhausted frame, want the frame first", clip(m.raw))
		}
	}
	m := msgs[ex]
	want := fmt.Sprintf(`{"type":"replay-exhausted","sub":"ex","session":%q,"earliest":{"epoch":0,"seq":%d}}`, sess, earliest)
	if !jsonEqual(m.raw, []byte(want)) {
		return fmt.Errorf("replay-exhausted frame: got %s, want %s", clip(m.raw), want)
	}
	var seqs []int64
	for _, p := range wsPositions(msgs) {
		var s int64
		fmt.Sscanf(p[strings.LastIndexByte(p, ':')+1:], "%d", &s)
		seqs = append(seqs, s)
	}
	return r.wantHeld(seqs, earliest, "WS replay from seq 0")
}

func checkEvictFromAll(ctx context.Context, r *runner) error {
	if err := r.needEvict(); err != nil {
		return err
	}
	sess, earliest, err := r.flood(ctx, 10)
	if err != nil {
		return err
	}
	items, err := r.history(ctx, filterSession(sess), nil)
	if err != nil {
		return err
	}
	for _, c := range commentsOf(items) {
		if strings.HasPrefix(c, "replay-exhausted") {
			return fmt.Errorf("from=all over an evicted session: got %q, want no replay-exhausted (AEP-0003 §5 rule 2)", c)
		}
	}
	if err := r.wantHeld(seqsOf(items), earliest, "SSE from=all"); err != nil {
		return err
	}
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	if _, err := w.subscribe(ctx, map[string]any{"id": "all", "filter": map[string]any{"session": sess}, "from": "all"}); err != nil {
		return err
	}
	lastSeq := fmt.Sprint(earliest + int64(r.t.Buffer) - 1)
	i, _, err := w.next(ctx, 0, func(m wsMsg) bool { return m.isEvent() && string(m.obj["seq"]) == lastSeq })
	if err != nil {
		return fmt.Errorf("WS from=all: the last held event never arrived: %w", err)
	}
	var seqs []int64
	for _, m := range w.log.all()[:i+1] {
		if m.typ == "replay-exhausted" {
			return fmt.Errorf("WS from=all: got %s, want no replay-exhausted", clip(m.raw))
		}
		if m.isEvent() {
			var s int64
			fmt.Sscanf(string(m.obj["seq"]), "%d", &s)
			seqs = append(seqs, s)
		}
	}
	return r.wantHeld(seqs, earliest, "WS from=all")
}

func checkEvictPerSession(ctx context.Context, r *runner) error {
	if err := r.needEvict(); err != nil {
		return err
	}
	small := r.uniq("small")
	evs := r.seqEvents(small, 0, 2)
	if err := r.post(ctx, evs...); err != nil {
		return err
	}
	if _, _, err := r.flood(ctx, 40); err != nil {
		return err
	}
	if err := r.wantHistory(ctx, small, evs[0].Raw(), evs[1].Raw()); err != nil {
		return fmt.Errorf("flooding another session evicted this one's events (buffers are per session): %w", err)
	}
	return nil
}
