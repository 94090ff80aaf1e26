package relay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/relay"
)

func TestDiscoveryAdvertisesWhatIsImplemented(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.Buffer = 123
	tr := startRelay(t, c)
	for _, path := range []string{"/events", "/.well-known/aep"} {
		t.Run(path, func(t *testing.T) {
			status, h, body := tr.request(t, http.MethodGet, path, nil, nil, nil)
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, "application/json", h.Get("Content-Type"))
			var d struct {
				AEP          []string          `json:"aep"`
				Endpoints    map[string]string `json:"endpoints"`
				Capabilities struct {
					Filters []string `json:"filters"`
					Replay  struct {
						Buffer int  `json:"buffer"`
						All    bool `json:"all"`
					} `json:"replay"`
					Capture []string        `json:"capture"`
					Control *map[string]any `json:"control"`
					Roster  *map[string]any `json:"roster"`
				} `json:"capabilities"`
			}
			require.NoError(t, json.Unmarshal(body, &d))
			assert.Equal(t, []string{"0.1"}, d.AEP)
			assert.Equal(t, map[string]string{"events": "/events", "stream": "/stream", "socket": "/socket"}, d.Endpoints)
			assert.Equal(t, []string{"attr-match"}, d.Capabilities.Filters)
			assert.Equal(t, 123, d.Capabilities.Replay.Buffer, "replay.buffer must equal the configured buffer")
			assert.True(t, d.Capabilities.Replay.All)
			assert.Equal(t, []string{"none", "metadata", "redacted", "full"}, d.Capabilities.Capture)
			require.NotNil(t, d.Capabilities.Control)
			assert.Equal(t, []any{}, (*d.Capabilities.Control)["accepts"])
			assert.NotNil(t, d.Capabilities.Roster)
		})
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	tr.mustPost(t, ev(t, "session.started", "h1", 0))

	resp, err := http.Get(tr.url("/healthz", nil))
	require.NoError(t, err)
	var bare map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&bare))
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, map[string]any{"ok": true}, bare, "unauthenticated healthz is bare")

	status, _, body := tr.request(t, http.MethodGet, "/healthz", nil, nil, nil)
	require.Equal(t, http.StatusOK, status)
	var full map[string]any
	require.NoError(t, json.Unmarshal(body, &full))
	assert.Equal(t, true, full["ok"])
	assert.Equal(t, 1.0, full["sessions"])
	assert.Equal(t, 0.0, full["subscribers"])
	assert.Equal(t, 0.0, full["connections"])
	assert.Contains(t, full, "uptime_s")

	open := startRelay(t, relay.Config{})
	status, _, body = open.request(t, http.MethodGet, "/healthz", nil, nil, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `"sessions":0`, "with no token configured everything is open, counts included")
}

func TestAuth(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	anon := *tr
	anon.token = ""
	for _, c := range []struct {
		name, method, path string
		q                  url.Values
		h                  http.Header
		want               int
	}{
		{"discovery without token", http.MethodGet, "/events", nil, nil, 401},
		{"well-known without token", http.MethodGet, "/.well-known/aep", nil, nil, 401},
		{"ingest without token", http.MethodPost, "/events", nil, emitHeaders("application/json"), 401},
		{"stream without token", http.MethodGet, "/stream", nil, nil, 401},
		{"socket without token", http.MethodGet, "/socket", nil, nil, 401},
		{"wrong bearer", http.MethodGet, "/events", nil, http.Header{"Authorization": {"Bearer nope"}}, 401},
		{"wrong query token", http.MethodGet, "/events", url.Values{"access_token": {"nope"}}, nil, 401},
		{"bearer", http.MethodGet, "/events", nil, http.Header{"Authorization": {"Bearer " + testToken}}, 200},
		{"query token", http.MethodGet, "/events", url.Values{"access_token": {testToken}}, nil, 200},
		{"query token on stream", http.MethodGet, "/stream", url.Values{"access_token": {testToken}, "live": {"0"}}, nil, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, h, body := anon.request(t, c.method, c.path, c.q, c.h, []byte("{}"))
			assert.Equal(t, c.want, status, "body %s", body)
			if c.want == 401 {
				assert.Contains(t, h.Get("WWW-Authenticate"), "Bearer")
				assert.Contains(t, string(body), `"error":"unauthorized"`)
			}
		})
	}
}

func TestIngestStatuses(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.MaxBody = 4096
	c.MaxBatch = 3
	tr := startRelay(t, c)
	good := ev(t, "session.started", "st", 0)
	noID := []byte(`{"aep":"0.1","type":"session.started","time":"2026-07-03T10:00:00Z","source":"aep://x","agent":"a","session":"s","seq":0}`)
	cmd := ev(t, "control.attention.respond", "st", 0, withSubject("req-1"), withData(map[string]any{"answer": map[string]any{"option": "yes"}}))
	batch := func(lines ...[]byte) []byte { return append(bytes.Join(lines, []byte("\n")), '\n') }
	for _, tc := range []struct {
		name      string
		h         http.Header
		body      []byte
		want      int
		wantError string
	}{
		{"single", emitHeaders("application/json"), good, 202, ""},
		{"single with charset", http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Aep-Version": {"0.1"}}, ev(t, "session.started", "st2", 0), 202, ""},
		{"batch", emitHeaders("application/x-ndjson"), batch(ev(t, "run.started", "st", 1, withData(map[string]any{"trigger": "user"})), ev(t, "session.ended", "st", 2)), 202, ""},
		{"missing version", http.Header{"Content-Type": {"application/json"}}, good, 426, "version-unsupported"},
		{"unsupported version", http.Header{"Content-Type": {"application/json"}, "Aep-Version": {"9.9"}}, good, 426, "version-unsupported"},
		{"wrong content type", emitHeaders("text/plain"), good, 415, "unsupported-media-type"},
		{"no content type", http.Header{"Aep-Version": {"0.1"}}, good, 415, "unsupported-media-type"},
		{"malformed JSON", emitHeaders("application/json"), []byte(`{"aep":`), 400, "invalid-event"},
		{"not an object", emitHeaders("application/json"), []byte(`[1,2]`), 400, "invalid-event"},
		{"two objects", emitHeaders("application/json"), []byte(`{} {}`), 400, "invalid-event"},
		{"empty body", emitHeaders("application/json"), nil, 400, "invalid-event"},
		{"invalid envelope", emitHeaders("application/json"), noID, 400, "invalid-event"},
		{"command over HTTP", emitHeaders("application/json"), cmd, 403, "forbidden"},
		{"oversized body", emitHeaders("application/json"), append(good[:len(good)-1], []byte(`,"x":"`+strings.Repeat("a", 5000)+`"}`)...), 413, "payload-too-large"},
		{"too many events", emitHeaders("application/x-ndjson"), batch(good, good, good, good), 413, "too-many-events"},
		{"empty batch", emitHeaders("application/x-ndjson"), []byte("\n\n"), 400, "invalid-event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := tr.request(t, http.MethodPost, "/events", nil, tc.h, tc.body)
			require.Equal(t, tc.want, status, "got %d %s, want %d", status, body, tc.want)
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m), "every answer is JSON: %s", body)
			if tc.wantError != "" {
				assert.Equal(t, tc.wantError, m["error"])
			}
			if status == 426 {
				assert.Equal(t, []any{"0.1"}, m["versions"])
			}
		})
	}
	t.Run("chunked oversized body", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, tr.url("/events", nil), struct{ *strings.Reader }{strings.NewReader(strings.Repeat(" ", 8192))})
		require.NoError(t, err)
		req.Header = emitHeaders("application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	})
}

func TestBatchRefusedWholeNamingTheLine(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	a := ev(t, "session.started", "bw", 0)
	bad := []byte(`{"aep":"0.1","id":"x","type":"session.started"}`)
	cmd := ev(t, "control.pause", "bw", 0)
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		line   float64
	}{
		{"invalid third line", []byte(string(a) + "\n\n" + string(bad) + "\n"), 400, 3},
		{"malformed second line", []byte(string(a) + "\n{nope\n"), 400, 2},
		{"command line", []byte(string(a) + "\n" + string(cmd) + "\n"), 403, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := tr.request(t, http.MethodPost, "/events", nil, emitHeaders("application/x-ndjson"), tc.body)
			require.Equal(t, tc.status, status, "body %s", body)
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m))
			assert.Equal(t, tc.line, m["line"], "the refusal names the 1-based line")
			assert.Equal(t, tc.line-1, m["index"], "and its 0-based index")
			assert.Contains(t, m["detail"], fmt.Sprintf("line %d", int(tc.line)))
		})
	}
	events, _ := tr.history(t, url.Values{"from": {"all"}})
	assert.Empty(t, events, "nothing of a refused batch is ingested")
}

func TestSingleEventOverSeveralLinesIsCompacted(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	pretty := []byte("{\n  \"aep\": \"0.1\",\n  \"id\": \"multi-1\",\n  \"type\": \"session.started\",\n  \"time\": \"2026-07-03T10:00:00Z\",\n" +
		"  \"source\": \"aep://test/agent/a\",\n  \"agent\": \"a\",\n  \"session\": \"ml\",\n  \"seq\": 0,\n  \"data\": {\"note\": \"two  spaces\\nand an escape\"}\n}\n")
	tr.mustPost(t, pretty)
	events, _ := tr.history(t, url.Values{"from": {"all"}})
	require.Len(t, events, 1)
	assert.Equal(t, `{"aep":"0.1","id":"multi-1","type":"session.started","time":"2026-07-03T10:00:00Z","source":"aep://test/agent/a","agent":"a","session":"ml","seq":0,"data":{"note":"two  spaces\nand an escape"}}`, events[0],
		"whitespace outside strings goes, everything else is kept as posted")
}

func TestBatchKeepsBytesAndOrder(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	// Key order and extension attributes exactly as posted.
	line := []byte(`{"type":"session.started","aep":"0.1","id":"k1","time":"2026-07-03T10:00:00Z","source":"aep://t/a","agent":"a","session":"bk","seq":0,"xtra":"kept","data":{}}`)
	lines := [][]byte{line}
	for i := 1; i < 5; i++ {
		lines = append(lines, ev(t, "progress.status", "bk", int64(i)))
	}
	tr.mustPost(t, lines...)
	events, _ := tr.history(t, url.Values{"from": {"all"}})
	require.Len(t, events, 5)
	for i := range lines {
		assert.Equal(t, string(lines[i]), events[i], "event %d byte-identical", i)
	}
}
