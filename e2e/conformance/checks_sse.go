package conformance

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

func sseChecks() []check {
	return []check{
		{"sse.framing", checkSSEFraming},
		{"sse.agent-scoped-no-id", checkSSEAgentScoped},
		{"sse.id-session-with-colons", checkSSEColonSession},
		{"sse.filter", checkSSEFilter},
		{"sse.invalid-filter-400", checkSSEInvalidFilter},
		{"sse.from-exclusive", checkSSEFromExclusive},
		{"sse.last-event-id", checkSSELastEventID},
		{"sse.from-all", checkSSEFromAll},
		{"sse.live0-ends", checkSSELive0},
		{"sse.bad-from-400", checkSSEBadFrom},
		{"sse.replay-live-seam", checkSSESeam},
		{"sse.ping", checkSSEPing},
		{"sse.access-token-query", checkSSEAccessToken},
	}
}

// liveStream opens a live /stream on filter and returns it.
func (r *runner) liveStream(ctx context.Context, q url.Values) (*sseStream, error) {
	s, res, err := r.openSSE(ctx, q, nil, nil)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("GET /stream?%s: got %d %s, want 200", q.Encode(), res.status, clip(res.body))
	}
	return s, nil
}

// waitEventID waits on s for the message carrying event id.
func waitEventID(ctx context.Context, s *sseStream, from int, id string) (int, sseItem, error) {
	i, it, err := s.log.wait(ctx, from, func(it sseItem) bool {
		if it.isComment {
			return false
		}
		e, err := aep.Decode([]byte(it.data))
		return err == nil && e.ID() == id
	})
	if err != nil {
		return i, it, fmt.Errorf("waiting on /stream for event %s: %w", id, err)
	}
	return i, it, nil
}

func checkSSEFraming(ctx context.Context, r *runner) error {
	sess := r.uniq("frame")
	s, err := r.liveStream(ctx, url.Values{"filter": {filterSession(sess)}})
	if err != nil {
		return err
	}
	defer s.close()
	if mt, _, _ := mime.ParseMediaType(s.header.Get("Content-Type")); mt != "text/event-stream" {
		return fmt.Errorf("Content-Type got %q, want text/event-stream", s.header.Get("Content-Type"))
	}
	e1 := r.build(ev{session: sess, seq: 0})
	e2 := r.build(ev{session: sess, seq: 5, epoch: 2, typ: "x.conformance.tool.other"})
	if err := r.post(ctx, e1); err != nil {
		return err
	}
	if err := r.post(ctx, e2); err != nil {
		return err
	}
	for _, want := range []struct {
		e  *aep.Event
		id string
	}{{e1, sess + ":0:0"}, {e2, sess + ":2:5"}} {
		_, it, err := waitEventID(ctx, s, 0, want.e.ID())
		if err != nil {
			return err
		}
		if it.event != want.e.Type() {
			return fmt.Errorf("event: line got %q, want the type %q", it.event, want.e.Type())
		}
		if it.data != string(want.e.Raw()) {
			return fmt.Errorf("data: got %s, want the event byte-identical on one line %s", clip([]byte(it.data)), want.e.Raw())
		}
		if !it.hasID || it.id != want.id {
			return fmt.Errorf("id: line got %q (present %v), want %q ({session}:{epoch}:{seq})", it.id, it.hasID, want.id)
		}
	}
	return nil
}

func checkSSEAgentScoped(ctx context.Context, r *runner) error {
	agent := r.uniq("agentscoped")
	s, err := r.liveStream(ctx, url.Values{"filter": {string(mustJSON(map[string]any{"agent": agent}))}})
	if err != nil {
		return err
	}
	defer s.close()
	e := r.build(ev{agent: agent, seq: -1, typ: "agent.heartbeat", data: map[string]any{"tick": 1}})
	if err := r.post(ctx, e); err != nil {
		return err
	}
	_, it, err := waitEventID(ctx, s, 0, e.ID())
	if err != nil {
		return err
	}
	if it.hasID {
		return fmt.Errorf("agent-scoped %s: got id: %q, want no id: line (not a resumable position, AEP-0003 §3.3.2)", e.Type(), it.id)
	}
	if it.data != string(e.Raw()) || it.event != e.Type() {
		return fmt.Errorf("agent-scoped event: got event %q data %s, want %q %s", it.event, clip([]byte(it.data)), e.Type(), e.Raw())
	}
	return nil
}

// checkSSEColonSession: a session name with ':' and a space keeps the id
// parseable from the right, and resumes through Last-Event-ID.
func checkSSEColonSession(ctx context.Context, r *runner) error {
	sess := r.uniq("a:b c") + ":9"
	evs := r.seqEvents(sess, 0, 3)
	if err := r.post(ctx, evs...); err != nil {
		return err
	}
	items, err := r.history(ctx, filterSession(sess), nil)
	if err != nil {
		return err
	}
	msgs := events(items)
	if len(msgs) != 3 {
		return fmt.Errorf("replay of session %q: got %d events, want 3", sess, len(msgs))
	}
	for i, it := range msgs {
		want := aep.FormatSSEID(sess, aep.Position{Seq: int64(i)})
		if it.id != want {
			return fmt.Errorf("id: got %q, want %q", it.id, want)
		}
		if got, p, err := aep.ParseSSEID(it.id); err != nil || got != sess || p.Seq != int64(i) {
			return fmt.Errorf("id %q parsed from the right: got session %q seq %d (%v), want %q %d", it.id, got, p.Seq, err, sess, i)
		}
	}
	got, err := r.replay(ctx, url.Values{"filter": {filterSession(sess)}, "live": {"0"}}, http.Header{"Last-Event-ID": {msgs[0].id}})
	if err != nil {
		return err
	}
	if seqs := seqsOf(got); !slices.Equal(seqs, []int64{1, 2}) {
		return fmt.Errorf("Last-Event-ID %q: got seqs %v, want [1 2]", msgs[0].id, seqs)
	}
	return nil
}

func checkSSEFilter(ctx context.Context, r *runner) error {
	sess := r.uniq("filter")
	evs := []*aep.Event{
		r.build(ev{session: sess, seq: 0, typ: "x.conformance.tool.a"}),
		r.build(ev{session: sess, seq: 1, typ: "x.conformance.run.b"}),
		r.build(ev{session: sess, seq: 2, typ: "x.conformance.tool.c", run: "r1"}),
		r.build(ev{session: sess, seq: 3, typ: "x.conformance.run.d", sev: "warning"}),
	}
	cases := []struct {
		filter map[string]any
		want   []int64
	}{
		{map[string]any{"session": sess}, []int64{0, 1, 2, 3}},
		{map[string]any{"session": sess, "type": "x.conformance.tool.*"}, []int64{0, 2}},
		{map[string]any{"session": sess, "type": []string{"x.conformance.run.b", "x.conformance.tool.c"}}, []int64{1, 2}},
		{map[string]any{"session": sess, "severity": map[string]string{"gte": "notice"}}, []int64{3}},
		{map[string]any{"session": sess, "severity": map[string]string{"lte": "info"}, "epoch": 0}, []int64{0, 1, 2}},
		{map[string]any{"session": sess, "run": "r1"}, []int64{2}},
		{map[string]any{"session": sess, "zz9": "absent-extension"}, nil},
	}
	live, err := r.liveStream(ctx, url.Values{"filter": {string(mustJSON(cases[1].filter))}})
	if err != nil {
		return err
	}
	defer live.close()
	if err := r.post(ctx, evs...); err != nil {
		return err
	}
	for _, c := range cases {
		items, err := r.history(ctx, string(mustJSON(c.filter)), nil)
		if err != nil {
			return err
		}
		if got := seqsOf(items); !slices.Equal(got, c.want) {
			return fmt.Errorf("replay with filter %s: got seqs %v, want %v", mustJSON(c.filter), got, c.want)
		}
	}
	// Live: the tool.* subscriber gets 0 and 2 and nothing else (2 arriving
	// after 0 bounds what came in between).
	i, _, err := waitEventID(ctx, live, 0, evs[2].ID())
	if err != nil {
		return err
	}
	if got := seqsOf(live.log.all()[:i+1]); !slices.Equal(got, []int64{0, 2}) {
		return fmt.Errorf("live with filter %s: got seqs %v, want [0 2]", mustJSON(cases[1].filter), got)
	}
	return nil
}

func checkSSEInvalidFilter(ctx context.Context, r *runner) error {
	for _, f := range []string{`{"no such key!":1}`, `not json`, `{"type":"*"}`, `{"session":[]}`,
		`{"severity":{"gt":"info"}}`, `{"seq":1}`, `{"data":{}}`, `{"session":"s*"}`, `[1]`} {
		res, err := r.do(ctx, req{path: "/stream", query: url.Values{"filter": {f}, "live": {"0"}}})
		if err != nil {
			return err
		}
		if res.status != http.StatusBadRequest {
			return fmt.Errorf("GET /stream?filter=%s: got %d %s, want 400 (filters fail closed, AEP-0003 §6.2)", f, res.status, clip(res.body))
		}
	}
	return nil
}

func checkSSELive0(ctx context.Context, r *runner) error {
	sess := r.uniq("live0")
	if err := r.post(ctx, r.seqEvents(sess, 0, 2)...); err != nil {
		return err
	}
	// No from: nothing to replay, so the response ends at once, empty.
	items, err := r.replay(ctx, url.Values{"filter": {filterSession(sess)}, "live": {"0"}}, nil)
	if err != nil {
		return err
	}
	if got := events(items); len(got) != 0 {
		return fmt.Errorf("live=0 without from: got %d events %v, want none (no history asked for)", len(got), dataOf(got))
	}
	items, err = r.history(ctx, filterSession(sess), nil)
	if err != nil {
		return err
	}
	if got := seqsOf(items); !slices.Equal(got, []int64{0, 1}) {
		return fmt.Errorf("live=0 from=all: got seqs %v, want [0 1] then the end", got)
	}
	return nil
}

func checkSSEPing(ctx context.Context, r *runner) error {
	if r.t.SSEPing <= 0 {
		return skipf("Target.SSEPing not set: the endpoint's heartbeat interval is not configurable here, and waiting out a 15-30 s default exceeds the run's budget")
	}
	s, err := r.liveStream(ctx, url.Values{"filter": {filterSession(r.uniq("ping"))}})
	if err != nil {
		return err
	}
	defer s.close()
	wctx, cancel := context.WithTimeout(ctx, 2*r.t.SSEPing+time.Second)
	defer cancel()
	if _, _, err := s.log.wait(wctx, 0, func(it sseItem) bool { return it.isComment && it.comment == "ping" }); err != nil {
		return fmt.Errorf("no `: ping` comment within twice the %s interval: %w", r.t.SSEPing, err)
	}
	return nil
}

func checkSSEAccessToken(ctx context.Context, r *runner) error {
	if !r.t.authenticated() {
		return skipf("no token configured: there is no token to carry in ?access_token=")
	}
	sess := r.uniq("qtoken")
	if err := r.post(ctx, r.seqEvents(sess, 0, 1)...); err != nil {
		return err
	}
	q := url.Values{"filter": {filterSession(sess)}, "from": {"all"}, "live": {"0"}, "access_token": {r.t.Token}}
	s, res, err := r.openSSE(ctx, q, nil, tokenPtr(""))
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("GET /stream?access_token=<token> without a header: got %d %s, want 200", res.status, clip(res.body))
	}
	defer s.close()
	items, err := s.log.waitEnd(ctx)
	if err != nil {
		return err
	}
	if got := seqsOf(items); !slices.Equal(got, []int64{0}) {
		return fmt.Errorf("GET /stream?access_token=: got seqs %v, want [0]", got)
	}
	return nil
}
