package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aepforms/aepforms/internal/relay"
)

// FuzzIngest drives POST /events with arbitrary bodies under both content
// types, through the relay's handler in-process (no sockets, so the fuzzer
// runs fast): every answer is one of the documented statuses with a JSON
// body, a refusal names its error, an acceptance counts every line, and
// the relay keeps taking good events afterwards.
func FuzzIngest(f *testing.F) {
	good := ev(f, "session.started", "fz", 0)
	f.Add(good)
	f.Add(append(append(append([]byte{}, good...), '\n'), ev(f, "progress.status", "fz", 1)...))
	f.Add([]byte(`{"aep":"0.1","id":"x","type":"control.pause","time":"2026-07-03T10:00:00Z","source":"aep://x","agent":"a","session":"s"}`))
	f.Add([]byte("{\n\"aep\":\"0.1\"}\n\n{}\r\n"))
	f.Add([]byte(`[{"aep":"0.1"}]`))
	f.Add([]byte{0xff, '{', '"'})
	c := cfg()
	c.MaxBody = 64 << 10
	c.MaxBatch = 16
	r := relay.New(c)
	f.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	h := r.Handler()
	post := func(ct string, body []byte) (int, map[string]any, []byte) {
		req := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(body))
		req.Header = emitHeaders(ct)
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m, rec.Body.Bytes()
	}
	probe := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, ct := range []string{"application/json", "application/x-ndjson"} {
			status, m, resp := post(ct, body)
			if m == nil {
				t.Fatalf("%s: answer %d is not a JSON object: %q", ct, status, resp)
			}
			switch status {
			case http.StatusAccepted:
				lines := 1
				if ct == "application/x-ndjson" {
					lines = 0
					for _, l := range bytes.Split(body, []byte("\n")) {
						if len(bytes.TrimSpace(l)) > 0 {
							lines++
						}
					}
				}
				if m["accepted"] != float64(lines) {
					t.Fatalf("%s: accepted %v, want %d", ct, m["accepted"], lines)
				}
			case http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge:
				if s, _ := m["error"].(string); s == "" {
					t.Fatalf("%s: refusal %d without an error name: %s", ct, status, resp)
				}
			default:
				t.Fatalf("%s: status %d is not one the relay documents: %s", ct, status, resp)
			}
		}
		probe++
		if status, _, resp := post("application/json", ev(t, "progress.status", "fz-probe", int64(probe))); status != http.StatusAccepted {
			t.Fatalf("the relay stopped taking good events: %d %s", status, resp)
		}
	})
}
