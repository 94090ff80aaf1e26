package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/static"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	h.ready.feed.Store(false)
	r := h.do(nil, h.request(http.MethodGet, h.url("healthz"), nil))
	assert.Equal(t, http.StatusOK, r.StatusCode, "healthz is the process being up, whatever the relay")
	assert.JSONEq(t, `{"ok":true}`, r.body)
}

func TestReadyzReflectsFeedRespondPathAndDatabase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), func(s *setup) { s.cfg.ReadyTimeout = 10 * time.Millisecond })
	ready := func() (int, map[string]any) {
		t.Helper()
		r := h.do(nil, h.request(http.MethodGet, h.url("readyz"), nil))
		var body map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.body), &body), "readyz body %q", r.body)
		return r.StatusCode, body
	}
	steps := []struct {
		name                    string
		feed, respond, database bool
		status                  int
	}{
		{"all up", true, true, true, http.StatusOK},
		{"relay feed gone", false, true, true, http.StatusServiceUnavailable},
		{"both gone", false, false, true, http.StatusServiceUnavailable},
		{"feed back, respond path still down", true, false, true, http.StatusServiceUnavailable},
		{"both back", true, true, true, http.StatusOK},
		{"database not answering", true, true, false, http.StatusServiceUnavailable},
		{"database back", true, true, true, http.StatusOK},
	}
	for _, s := range steps {
		h.ready.feed.Store(s.feed)
		h.ready.respond.Store(s.respond)
		h.ready.dbDown.Store(!s.database)
		status, body := ready()
		assert.Equal(t, s.status, status, "%s: status", s.name)
		want := map[string]any{"ok": s.feed && s.respond && s.database, "feed": s.feed, "respond": s.respond, "database": s.database}
		if !s.database {
			want["reason"] = "The answer journal's database does not answer."
		}
		assert.Equal(t, want, body, "%s: body", s.name)
	}
}

// A journal on a full disk makes the replica unready, saying why in the
// operator's words; the file stays in the log.
func TestReadyzSaysTheDiskIsFull(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	h.ready.dbFull.Store(true)
	r := h.do(nil, h.request(http.MethodGet, h.url("readyz"), nil))
	assert.Equal(t, http.StatusServiceUnavailable, r.StatusCode)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &body), "readyz body %q", r.body)
	assert.Equal(t, false, body["database"])
	assert.Equal(t, fullDisk{}.Explain(), body["reason"])
	assert.NotContains(t, r.body, "aepforms.db", "no file name on an unauthenticated route")
}

// promSample is one line of the Prometheus text format.
var promSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)$`)

// scrape reads /metrics into sample -> value, checking the format.
func (h *harness) scrape(header ...string) map[string]float64 {
	h.t.Helper()
	r := h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, header...))
	require.Equal(h.t, http.StatusOK, r.StatusCode, "metrics: got %d", r.StatusCode)
	require.True(h.t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain; version=0.0.4"), "content type %q", r.Header.Get("Content-Type"))
	out := map[string]float64{}
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(r.body, "\n"), "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			require.Len(h.t, f, 4, "TYPE line %q", line)
			require.Contains(h.t, []string{"counter", "gauge", "histogram"}, f[3])
			typed[f[2]] = true
			if f[3] == "histogram" {
				typed[f[2]+"_bucket"], typed[f[2]+"_sum"], typed[f[2]+"_count"] = true, true, true
			}
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := promSample.FindStringSubmatch(line)
		require.NotNil(h.t, m, "not a Prometheus sample line: %q", line)
		require.True(h.t, typed[m[1]], "sample %q before its TYPE", m[1])
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(h.t, err)
		out[m[1]+m[2]] = v
	}
	return out
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	auth := []string{"Authorization", "Bearer " + secret}
	m := h.scrape(auth...)
	for _, name := range []string{"aepforms_pending_cards", "aepforms_feed_connected", "aepforms_respond_connected",
		"aepforms_feed_reconnects_total", "aepforms_browsers_connected", "aepforms_push_drops_total",
		"aepforms_slow_clients_total", "aepforms_wrong_secrets_total", "aepforms_guess_refusals_total", "aepforms_invalid_events_total",
		"aepforms_time_to_first_claim_seconds_count", `aepforms_time_to_first_claim_seconds_bucket{le="+Inf"}`} {
		_, ok := m[name]
		assert.True(t, ok, "metric %s missing: %v", name, m)
	}
	assert.Equal(t, 0.0, m["aepforms_pending_cards"])
	assert.Equal(t, 1.0, m["aepforms_feed_connected"])
	assert.Equal(t, 1.0, m["aepforms_respond_connected"])

	id := h.ask("s1", "r1", nameForm())
	h.ask("s1", "r2", nameForm())
	h.ask("s1", "r3", nameForm())
	h.lifecycle("s1", "r3", "attention.timeout", nil)
	assert.Equal(t, 2.0, h.scrape(auth...)["aepforms_pending_cards"], "open cards only")

	// Answers by outcome.
	c := h.client()
	h.signIn(c, "alice")
	action, token := answerForm(t, h.getPage(c, "").doc(t), id)
	require.Equal(t, http.StatusUnprocessableEntity, h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {""}}).StatusCode)
	require.Equal(t, http.StatusSeeOther, h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {"x"}}).StatusCode)
	h.ready.outcome(inbox.SubmissionAccepted) // counted by the respond path
	m = h.scrape(auth...)
	assert.Equal(t, 1.0, m[`aepforms_answers_total{outcome="sent"}`], "sent: %v", m)
	assert.Equal(t, 1.0, m[`aepforms_answers_total{outcome="not_sent"}`])
	assert.Equal(t, 1.0, m[`aepforms_answers_total{outcome="accepted"}`])

	// Browsers connected.
	ps := h.openPush("", auth...)
	require.Equal(t, "status", ps.next().Event)
	assert.Equal(t, 1.0, h.scrape(auth...)["aepforms_browsers_connected"])

	// The relay goes away and comes back.
	h.in.FeedState(false, errors.New("relay gone"))
	h.ready.respond.Store(false)
	m = h.scrape(auth...)
	assert.Equal(t, 0.0, m["aepforms_feed_connected"], "relay gone: feed")
	assert.Equal(t, 0.0, m["aepforms_respond_connected"], "relay gone: respond path")
	h.in.FeedState(true, nil)
	h.ready.respond.Store(true)
	h.ready.reconnects.Add(1) // counted by the feed
	m = h.scrape(auth...)
	assert.Equal(t, 1.0, m["aepforms_feed_connected"], "relay back: feed")
	assert.Equal(t, 1.0, m["aepforms_respond_connected"], "relay back: respond path")
	assert.Equal(t, 1.0, m["aepforms_feed_reconnects_total"])
}

func TestStaticAssets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := static.Hash()
	cases := []struct {
		path, ctype, cache string
	}{
		{"static/app.css?v=" + v, "text/css", "immutable"},
		{"static/app.js?v=" + v, "javascript", "immutable"},
		{"static/app.js?v=000000000000", "javascript", "no-cache"},
		{"static/app.js", "javascript", "no-cache"},
	}
	for _, tc := range cases {
		r := h.do(nil, h.request(http.MethodGet, h.url(tc.path), nil))
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", tc.path)
		assert.Contains(t, r.Header.Get("Content-Type"), tc.ctype, "%s content type", tc.path)
		assert.Contains(t, r.Header.Get("Cache-Control"), tc.cache, "%s cache", tc.path)
	}
	for _, p := range []string{"static/", "static/static.go", "static/missing.css"} {
		r := h.do(nil, h.request(http.MethodGet, h.url(p), nil))
		assert.Equal(t, http.StatusNotFound, r.StatusCode, "%s: got %d, want 404", p, r.StatusCode)
	}
}
