package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

func httpChecks() []check {
	return []check{
		{"discovery.events", checkDiscoveryEvents},
		{"discovery.well-known", checkDiscoveryWellKnown},
		{"auth.token-required", checkTokenRequired},
		{"healthz.bare", checkHealthzBare},
		{"healthz.counts-with-auth", checkHealthzAuth},
		{"post.single", checkPostSingle},
		{"post.compacted-one-line", checkPostCompacted},
		{"post.ndjson-batch", checkPostBatch},
		{"post.version-unsupported-426", checkPostVersion},
		{"post.version-missing-refused", checkPostVersionMissing},
		{"post.invalid-event-400", checkPostInvalid},
		{"post.malformed-json-400", checkPostMalformed},
		{"post.batch-bad-line", checkPostBatchBadLine},
		{"post.unauthorized-401", checkPostUnauthorized},
		{"post.payload-too-large-413", checkPostTooLarge},
		{"post.too-many-events-413", checkPostTooMany},
		{"post.unsupported-media-type-415", checkPostMediaType},
	}
}

func checkDiscoveryEvents(ctx context.Context, r *runner) error {
	r.disc = nil
	d, err := r.discover(ctx)
	if err != nil {
		return err
	}
	return d.validate(r.t)
}

func checkDiscoveryWellKnown(ctx context.Context, r *runner) error {
	d, err := r.fetchDiscovery(ctx, "/.well-known/aep")
	if err != nil {
		return err
	}
	if err := d.validate(r.t); err != nil {
		return err
	}
	ev, err := r.discover(ctx)
	if err != nil {
		return err
	}
	if !jsonEqual(d.raw, ev.raw) {
		return fmt.Errorf("/.well-known/aep got %s, want the same document as GET /events %s", clip(d.raw), clip(ev.raw))
	}
	return nil
}

// checkTokenRequired: with a token configured, every request but bare
// /healthz needs it; missing or wrong gets 401 (AEP-0003 §8, the reference
// posture), on the socket before any hello.
func checkTokenRequired(ctx context.Context, r *runner) error {
	if !r.t.authenticated() {
		return skipf("no token configured: the open posture is exercised by every check running without one")
	}
	for _, tok := range []string{"", "wrong-" + r.t.Token} {
		label := "without a token"
		if tok != "" {
			label = "with a wrong token"
		}
		for _, q := range []req{
			{path: "/events"},
			{path: "/.well-known/aep"},
			{path: "/stream", query: map[string][]string{"from": {"all"}, "live": {"0"}}},
		} {
			q.token = tokenPtr(tok)
			res, err := r.do(ctx, q)
			if err != nil {
				return err
			}
			if res.status != http.StatusUnauthorized {
				return fmt.Errorf("GET %s %s: got %d %s, want 401", q.path, label, res.status, clip(res.body))
			}
		}
		_, res, err := r.dial(ctx, dialOpts{token: tokenPtr(tok)})
		if err == nil || res.status != http.StatusUnauthorized {
			return fmt.Errorf("WebSocket /socket %s: got handshake status %d (err %v), want 401 before any hello", label, res.status, err)
		}
		q := req{path: "/stream", query: map[string][]string{"from": {"all"}, "live": {"0"}, "access_token": {tok}}, token: tokenPtr("")}
		res, err = r.do(ctx, q)
		if err != nil {
			return err
		}
		if res.status != http.StatusUnauthorized {
			return fmt.Errorf("GET /stream?access_token= %s: got %d, want 401", label, res.status)
		}
	}
	return nil
}

var healthCounts = []string{"sessions", "subscribers", "connections", "uptime_s"}

func checkHealthzBare(ctx context.Context, r *runner) error {
	res, err := r.do(ctx, req{path: "/healthz", token: tokenPtr("")})
	if err != nil {
		return err
	}
	if res.status != http.StatusOK {
		return fmt.Errorf("bare GET /healthz: got %d %s, want 200", res.status, clip(res.body))
	}
	m, err := object(res.body)
	if err != nil || string(m["ok"]) != "true" {
		return fmt.Errorf("bare GET /healthz: got %s, want {\"ok\":true}", clip(res.body))
	}
	if r.t.authenticated() {
		for _, k := range healthCounts {
			if _, ok := m[k]; ok {
				return fmt.Errorf("bare GET /healthz: got %s, want no %s without the token (counts need auth)", clip(res.body), k)
			}
		}
	}
	return nil
}

func checkHealthzAuth(ctx context.Context, r *runner) error {
	if !r.t.authenticated() {
		return skipf("no token configured: there is no authenticated healthz to compare with the bare one")
	}
	res, err := r.do(ctx, req{path: "/healthz"})
	if err != nil {
		return err
	}
	var m map[string]any
	if res.status != http.StatusOK || json.Unmarshal(res.body, &m) != nil || m["ok"] != true {
		return fmt.Errorf("GET /healthz with the token: got %d %s, want 200 {\"ok\":true,...counts}", res.status, clip(res.body))
	}
	for _, k := range healthCounts {
		if _, ok := m[k].(float64); !ok {
			return fmt.Errorf("GET /healthz with the token: %s got %v, want a number (body %s)", k, m[k], clip(res.body))
		}
	}
	return nil
}

func checkPostSingle(ctx context.Context, r *runner) error {
	s := r.uniq("post")
	e1, e2 := r.build(ev{session: s, seq: 0}), r.build(ev{session: s, seq: 1})
	if err := r.post(ctx, e1); err != nil {
		return err
	}
	res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/json; charset=utf-8", body: e2.Raw()})
	if err != nil {
		return err
	}
	if res.status != http.StatusAccepted {
		return fmt.Errorf("POST with Content-Type application/json; charset=utf-8: got %d %s, want 202", res.status, clip(res.body))
	}
	return r.wantHistory(ctx, s, e1.Raw(), e2.Raw())
}

// wantHistory requires session s's replay to be exactly want, byte for byte.
func (r *runner) wantHistory(ctx context.Context, s string, want ...[]byte) error {
	items, err := r.history(ctx, filterSession(s), nil)
	if err != nil {
		return err
	}
	got := events(items)
	if len(got) != len(want) {
		return fmt.Errorf("replay of session %q: got %d events %v, want %d", s, len(got), dataOf(got), len(want))
	}
	for i := range want {
		if got[i].data != string(want[i]) {
			return fmt.Errorf("replay of session %q event %d: got %s, want byte-identical %s", s, i, clip([]byte(got[i].data)), clip(want[i]))
		}
	}
	return nil
}

func dataOf(items []sseItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, clip([]byte(it.data)))
	}
	return out
}

func checkPostCompacted(ctx context.Context, r *runner) error {
	s := r.uniq("pretty")
	e := r.build(ev{session: s, seq: 0, data: map[string]any{"text": "keep  these   spaces\n and \"quotes\"", "n": 1}})
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, e.Raw(), "", "  "); err != nil {
		return err
	}
	res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/json", body: pretty.Bytes()})
	if err != nil {
		return err
	}
	if res.status != http.StatusAccepted {
		return fmt.Errorf("POST of an event over %d lines: got %d %s, want 202", bytes.Count(pretty.Bytes(), []byte("\n"))+1, res.status, clip(res.body))
	}
	// Compacting removes whitespace outside strings only: the result is the
	// compact encoding, with the string's spaces kept.
	return r.wantHistory(ctx, s, e.Raw())
}

func checkPostBatch(ctx context.Context, r *runner) error {
	s := r.uniq("batch")
	evs := r.seqEvents(s, 0, 3)
	if err := r.post(ctx, evs...); err != nil {
		return err
	}
	return r.wantHistory(ctx, s, evs[0].Raw(), evs[1].Raw(), evs[2].Raw())
}
