package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

func checkPostVersion(ctx context.Context, r *runner) error {
	s := r.uniq("version")
	for _, v := range []string{"2.0", "1"} {
		res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/json", version: v, body: r.build(ev{session: s, seq: 0}).Raw()})
		if err != nil {
			return err
		}
		if res.status != http.StatusUpgradeRequired {
			return fmt.Errorf("POST with AEP-Version: %s: got %d %s, want 426", v, res.status, clip(res.body))
		}
		var body struct{ Versions []string }
		if json.Unmarshal(res.body, &body) != nil || len(body.Versions) == 0 || !slices.Contains(body.Versions, "0.1") {
			return fmt.Errorf("POST with AEP-Version: %s: 426 body got %s, want {\"versions\":[\"0.1\"]}", v, clip(res.body))
		}
	}
	return r.wantNoHistory(ctx, s)
}

// wantNoHistory requires that nothing of session s is held.
func (r *runner) wantNoHistory(ctx context.Context, s string) error {
	items, err := r.history(ctx, filterSession(s), nil)
	if err != nil {
		return err
	}
	if got := events(items); len(got) > 0 {
		return fmt.Errorf("replay of session %q: got %d refused events stored %v, want none", s, len(got), dataOf(got))
	}
	return nil
}

func checkPostVersionMissing(ctx context.Context, r *runner) error {
	s := r.uniq("noversion")
	res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/json", noVersion: true, body: r.build(ev{session: s, seq: 0}).Raw()})
	if err != nil {
		return err
	}
	if res.status < 400 || res.status >= 500 {
		return fmt.Errorf("POST without AEP-Version (REQUIRED, AEP-0003 §3.2): got %d %s, want a 4xx refusal", res.status, clip(res.body))
	}
	if err := r.wantNoHistory(ctx, s); err != nil {
		return err
	}
	return passf("refused with %d", res.status)
}

// invalidEvent is an event missing its REQUIRED time.
func (r *runner) invalidEvent(s string) []byte {
	m := map[string]any{}
	_ = json.Unmarshal(r.build(ev{session: s, seq: 0}).Raw(), &m)
	delete(m, "time")
	return mustJSON(m)
}

func checkPostInvalid(ctx context.Context, r *runner) error {
	s := r.uniq("invalid")
	res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/json", body: r.invalidEvent(s)})
	if err != nil {
		return err
	}
	var body struct {
		Error  string          `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if res.status != http.StatusBadRequest || json.Unmarshal(res.body, &body) != nil || body.Error != "invalid-event" {
		return fmt.Errorf("POST of an event without time: got %d %s, want 400 {\"error\":\"invalid-event\",\"detail\":...}", res.status, clip(res.body))
	}
	if len(body.Detail) == 0 || string(body.Detail) == `""` || string(body.Detail) == "null" {
		return fmt.Errorf("POST of an event without time: 400 body got %s, want a detail saying why", clip(res.body))
	}
	return r.wantNoHistory(ctx, s)
}

func checkPostMalformed(ctx context.Context, r *runner) error {
	for _, body := range []string{`{"aep":"0.1",`, `[1,2]`, `"just a string"`} {
		res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/json", body: []byte(body)})
		if err != nil {
			return err
		}
		if res.status != http.StatusBadRequest {
			return fmt.Errorf("POST of %s: got %d %s, want 400", body, res.status, clip(res.body))
		}
	}
	return nil
}

// checkPostBatchBadLine: a batch with one invalid line gets either a
// per-line report or a whole-batch refusal naming the line (AEP-0003 §3.2.3).
func checkPostBatchBadLine(ctx context.Context, r *runner) error {
	s := r.uniq("badline")
	good := r.seqEvents(s, 0, 3)
	body := bytes.Join([][]byte{good[0].Raw(), r.invalidEvent(s), good[2].Raw()}, []byte("\n"))
	res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/x-ndjson", body: append(body, '\n')})
	if err != nil {
		return err
	}
	items, err := r.history(ctx, filterSession(s), nil)
	if err != nil {
		return err
	}
	stored := len(events(items))
	switch res.status {
	case http.StatusBadRequest:
		// Whole-batch refusal: nothing stored, the line named (0-based 1 or
		// 1-based 2).
		if stored != 0 {
			return fmt.Errorf("batch refused whole with 400, yet %d of its events were stored", stored)
		}
		if !namesLine(res.body) {
			return fmt.Errorf("400 body got %s, want it to name the failing line (index 1, or line 2)", clip(res.body))
		}
		return passf("whole batch refused: %s", clip(res.body))
	case http.StatusMultiStatus:
		if stored != 2 {
			return fmt.Errorf("207 per-line report, yet %d events stored, want the 2 valid lines", stored)
		}
		return passf("per-line report: %s", clip(res.body))
	}
	return fmt.Errorf("batch with an invalid second line: got %d %s, want 400 naming the line or a 207 per-line report", res.status, clip(res.body))
}

// namesLine reports whether a refusal body names line index 1 / line 2.
func namesLine(b []byte) bool {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for _, k := range []string{"line", "index"} {
		if n, ok := m[k].(float64); ok && (n == 1 || n == 2) {
			return true
		}
	}
	d, _ := m["detail"].(string)
	return strings.Contains(d, "line 2") || strings.Contains(d, "line 1") || strings.Contains(d, "index 1")
}

func checkPostUnauthorized(ctx context.Context, r *runner) error {
	if !r.t.authenticated() {
		return skipf("no token configured: emitting is open by the posture under test")
	}
	s := r.uniq("unauth")
	for _, tok := range []string{"", "wrong-" + r.t.Token} {
		res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/json", body: r.build(ev{session: s, seq: 0}).Raw(), token: tokenPtr(tok)})
		if err != nil {
			return err
		}
		if res.status != http.StatusUnauthorized {
			return fmt.Errorf("POST with token %q: got %d %s, want 401", redactTok(tok), res.status, clip(res.body))
		}
	}
	return r.wantNoHistory(ctx, s)
}

func redactTok(t string) string {
	if t == "" {
		return ""
	}
	return "<wrong>"
}

func checkPostTooLarge(ctx context.Context, r *runner) error {
	if r.t.MaxBody <= 0 {
		return skipf("Target.MaxBody not set: the configured body limit is unknown")
	}
	s := r.uniq("big")
	e := r.build(ev{session: s, seq: 0, data: map[string]any{"pad": strings.Repeat("x", int(r.t.MaxBody))}})
	for _, ct := range []string{"application/json", "application/x-ndjson"} {
		res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: ct, body: e.Raw()})
		if err != nil {
			return err
		}
		if res.status != http.StatusRequestEntityTooLarge || errorCode(res.body) != "payload-too-large" {
			return fmt.Errorf("POST (%s) of %d bytes over a %d-byte limit: got %d %s, want 413 {\"error\":\"payload-too-large\"}", ct, len(e.Raw()), r.t.MaxBody, res.status, clip(res.body))
		}
	}
	return r.wantNoHistory(ctx, s)
}

func errorCode(b []byte) string {
	var m struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Error
}

func checkPostTooMany(ctx context.Context, r *runner) error {
	if r.t.MaxBatch <= 0 {
		return skipf("Target.MaxBatch not set: the configured batch limit is unknown")
	}
	s := r.uniq("many")
	evs := r.seqEvents(s, 0, int64(r.t.MaxBatch)+1)
	res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: "application/x-ndjson", body: ndjson(evs)})
	if err != nil {
		return err
	}
	if res.status != http.StatusRequestEntityTooLarge || errorCode(res.body) != "too-many-events" {
		return fmt.Errorf("NDJSON batch of %d events over a limit of %d: got %d %s, want 413 {\"error\":\"too-many-events\"}", len(evs), r.t.MaxBatch, res.status, clip(res.body))
	}
	if err := r.wantNoHistory(ctx, s); err != nil {
		return err
	}
	// Exactly at the limit is accepted.
	if err := r.post(ctx, evs[:r.t.MaxBatch]...); err != nil {
		return fmt.Errorf("batch of exactly the limit: %w", err)
	}
	return nil
}

func checkPostMediaType(ctx context.Context, r *runner) error {
	s := r.uniq("media")
	for _, ct := range []string{"text/plain", "application/xml", ""} {
		res, err := r.do(ctx, req{method: http.MethodPost, path: "/events", ctype: ct, body: r.build(ev{session: s, seq: 0}).Raw()})
		if err != nil {
			return err
		}
		if res.status != http.StatusUnsupportedMediaType {
			return fmt.Errorf("POST with Content-Type %q: got %d %s, want 415", ct, res.status, clip(res.body))
		}
	}
	return r.wantNoHistory(ctx, s)
}
