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
