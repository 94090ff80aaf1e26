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

// twoEpochs posts session s: epoch 0 seq 0..4, then epoch 1 seq 0..1.
func (r *runner) twoEpochs(ctx context.Context, s string) error {
	evs := r.seqEvents(s, 0, 5)
	evs = append(evs, r.build(ev{session: s, epoch: 1, seq: 0}), r.build(ev{session: s, epoch: 1, seq: 1}))
	return r.post(ctx, evs...)
}

// positionsOf lists "epoch:seq" of the messages of items.
func positionsOf(items []sseItem) []string {
	var out []string
	for _, it := range events(items) {
		e, err := aep.Decode([]byte(it.data))
		if err != nil {
			out = append(out, "?")
			continue
		}
		p, _ := e.Position()
		out = append(out, fmt.Sprintf("%s@%d:%d", e.Session(), p.Epoch, p.Seq))
	}
	return out
}

func checkSSEFromExclusive(ctx context.Context, r *runner) error {
	a, b := r.uniq("fromA"), r.uniq("fromB")
	if err := r.twoEpochs(ctx, a); err != nil {
		return err
	}
	if err := r.post(ctx, r.seqEvents(b, 0, 2)...); err != nil {
		return err
	}
	both := filterSession(a, b)
	cases := []struct {
		from []pos
		want []string
	}{
		{[]pos{{a, 0, 2}}, []string{a + "@0:3", a + "@0:4", a + "@1:0", a + "@1:1"}},
		{[]pos{{a, 1, 0}}, []string{a + "@1:1"}},
		{[]pos{{a, 1, 1}}, nil},
		{[]pos{{a, 0, 4}, {b, 0, 0}}, []string{a + "@1:0", a + "@1:1", b + "@0:1"}},
	}
	for _, c := range cases {
		items, err := r.replay(ctx, url.Values{"filter": {both}, "from": {fromPositions(c.from...)}, "live": {"0"}}, nil)
		if err != nil {
			return err
		}
		got := positionsOf(items)
		if !sameMultiset(got, c.want) || !orderedPerSession(got) {
			return fmt.Errorf("from=%s: got %v, want %v (strictly after each position; sessions not named are live only)", fromPositions(c.from...), got, c.want)
		}
	}
	return nil
}

func sameMultiset(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// orderedPerSession reports whether each session's positions ascend.
func orderedPerSession(ps []string) bool {
	last := map[string]aep.Position{}
	for _, p := range ps {
		i := strings.LastIndexByte(p, '@')
		var pp aep.Position
		fmt.Sscanf(p[i+1:], "%d:%d", &pp.Epoch, &pp.Seq)
		if l, ok := last[p[:i]]; ok && !l.Less(pp) {
			return false
		}
		last[p[:i]] = pp
	}
	return true
}

func checkSSELastEventID(ctx context.Context, r *runner) error {
	a, b := r.uniq("leiA"), r.uniq("leiB")
	if err := r.twoEpochs(ctx, a); err != nil {
		return err
	}
	if err := r.post(ctx, r.seqEvents(b, 0, 2)...); err != nil {
		return err
	}
	both := url.Values{"filter": {filterSession(a, b)}, "live": {"0"}}
	items, err := r.replay(ctx, both, http.Header{"Last-Event-ID": {a + ":0:3"}})
	if err != nil {
		return err
	}
	if got, want := positionsOf(items), []string{a + "@0:4", a + "@1:0", a + "@1:1"}; !slices.Equal(got, want) {
		return fmt.Errorf("Last-Event-ID %s:0:3: got %v, want %v (that one session, strictly after)", a, got, want)
	}
	withFrom := url.Values{"filter": {filterSession(a, b)}, "live": {"0"}, "from": {fromPositions(pos{a, 1, 0})}}
	items, err = r.replay(ctx, withFrom, http.Header{"Last-Event-ID": {a + ":0:1"}})
	if err != nil {
		return err
	}
	if got, want := positionsOf(items), []string{a + "@1:1"}; !slices.Equal(got, want) {
		return fmt.Errorf("from=[%s 1:0] with Last-Event-ID %s:0:1: got %v, want %v (from takes precedence)", a, a, got, want)
	}
	return nil
}

func checkSSEFromAll(ctx context.Context, r *runner) error {
	a, b := r.uniq("allA"), r.uniq("allB")
	if err := r.post(ctx, r.seqEvents(a, 0, 2)...); err != nil {
		return err
	}
	if err := r.post(ctx, r.seqEvents(b, 0, 3)...); err != nil {
		return err
	}
	items, err := r.history(ctx, filterSession(a, b), nil)
	if err != nil {
		return err
	}
	got := positionsOf(items)
	want := []string{a + "@0:0", a + "@0:1", b + "@0:0", b + "@0:1", b + "@0:2"}
	if !sameMultiset(got, want) || !orderedPerSession(got) {
		return fmt.Errorf("from=all: got %v, want %v, each session from its earliest", got, want)
	}
	for _, c := range commentsOf(items) {
		if strings.HasPrefix(c, "replay-exhausted") {
			return fmt.Errorf("from=all: got comment %q, want no replay-exhausted (AEP-0003 §5 rule 2)", c)
		}
	}
	return nil
}

func checkSSEBadFrom(ctx context.Context, r *runner) error {
	sess := r.uniq("badfrom")
	bad := []string{`not json`, `{"session":"x","epoch":0,"seq":1}`, `[{"session":1,"epoch":0,"seq":1}]`, `alll`, `[{"session":"x","epoch":0}]`, `[{"session":"x","epoch":0,"seq":-1}]`}
	if r.t.MaxFrom > 0 {
		var ps []pos
		for i := 0; i <= r.t.MaxFrom; i++ {
			ps = append(ps, pos{sess + itoa(i), 0, 0})
		}
		bad = append(bad, fromPositions(ps...))
	}
	for _, f := range bad {
		res, err := r.do(ctx, req{path: "/stream", query: url.Values{"filter": {filterSession(sess)}, "from": {f}, "live": {"0"}}})
		if err != nil {
			return err
		}
		if res.status != http.StatusBadRequest {
			return fmt.Errorf("GET /stream?from=%s: got %d %s, want 400", clip([]byte(f)), res.status, clip(res.body))
		}
	}
	if r.t.MaxFrom > 0 {
		var ps []pos
		for i := 0; i < r.t.MaxFrom; i++ {
			ps = append(ps, pos{sess + itoa(i), 0, 0})
		}
		if _, err := r.replay(ctx, url.Values{"filter": {filterSession(sess)}, "from": {fromPositions(ps...)}, "live": {"0"}}, nil); err != nil {
			return fmt.Errorf("from with exactly the limit of %d positions: %w", r.t.MaxFrom, err)
		}
		return nil
	}
	return passf("from over the cap not probed: Target.MaxFrom not set")
}

// checkSSESeam: a stream that replays and then goes live, while the
// session is written concurrently, delivers every seq exactly once, in order.
func checkSSESeam(ctx context.Context, r *runner) error {
	sess := r.uniq("seam")
	const before, during = 20, 30
	evs := r.seqEvents(sess, 0, before+during)
	if err := r.post(ctx, evs[:before]...); err != nil {
		return err
	}
	posted := make(chan error, 1)
	start := make(chan struct{})
	go func() {
		<-start
		for _, e := range evs[before:] {
			if err := r.post(ctx, e); err != nil {
				posted <- err
				return
			}
		}
		posted <- nil
	}()
	close(start)
	s, err := r.liveStream(ctx, url.Values{"filter": {filterSession(sess)}, "from": {fromPositions(pos{sess, 0, 4})}})
	if err != nil {
		<-posted
		return err
	}
	defer s.close()
	if err := <-posted; err != nil {
		return err
	}
	i, _, err := waitEventID(ctx, s, 0, evs[len(evs)-1].ID())
	if err != nil {
		return fmt.Errorf("replay from seq 4 while posting 20..49: %w (got seqs %v)", err, seqsOf(s.log.all()))
	}
	got := seqsOf(s.log.all()[:i+1])
	var want []int64
	for n := int64(5); n < before+during; n++ {
		want = append(want, n)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("replay then live: got seqs %v, want 5..49 once each in order (no gap, no duplicate at the seam)", got)
	}
	return nil
}
