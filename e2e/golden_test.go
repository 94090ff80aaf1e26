package e2e

// Consumer conformance (NOTES §7): the golden corpus driven through the
// real ingest path, the feed client into the inbox, once from a test SSE
// endpoint serving the whole corpus (commands included, as a recorded
// stream would hold them) and once through the embedded relay with the
// production filter (commands cannot be posted: a relay routes them).

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/fixtures"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/feed"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/relay"
	"github.com/aepforms/aepforms/internal/sse"
)

const goldenWait = 10 * time.Second

// goldenMarker is an event after the corpus: once the sink has it, every
// corpus line before it was handled.
const goldenMarker = `{"aep":"0.1","id":"marker-1","type":"session.started","time":"2026-07-03T11:00:00Z","source":"aep://test/marker","agent":"test","session":"s_marker","seq":0,"data":{}}`

// goldenLines reads the vendored corpus, one event per line.
func goldenLines(t *testing.T) [][]byte {
	t.Helper()
	out := fixtures.GoldenLines(t)
	require.Len(t, out, 64, "the golden corpus has 64 events")
	return out
}

// goldenSink is the inbox as the feed's sink, counting what it applies
// and signalling the marker.
type goldenSink struct {
	*inbox.Inbox
	mu      sync.Mutex
	applied int
	marker  chan struct{}
}

func newGoldenSink() *goldenSink {
	now := func() time.Time { return time.Date(2026, 7, 3, 12, 0, 0, 0, time.UTC) }
	return &goldenSink{Inbox: inbox.New(inbox.Options{Now: now}), marker: make(chan struct{}, 1)}
}

func (s *goldenSink) Apply(e *aep.Event) {
	s.Inbox.Apply(e)
	s.mu.Lock()
	s.applied++
	s.mu.Unlock()
	if e.ID() == "marker-1" {
		s.marker <- struct{}{}
	}
}

func (s *goldenSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// goldenRunFeed runs the real feed client against relayURL into sink
// until the test ends.
func goldenRunFeed(t *testing.T, relayURL, token string, sink feed.Sink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	fc := feed.New(feed.Config{RelayURL: relayURL, Token: token, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	go func() { done <- fc.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func goldenAwaitMarker(t *testing.T, s *goldenSink) {
	t.Helper()
	select {
	case <-s.marker:
	case <-time.After(goldenWait):
		t.Fatalf("the feed did not deliver the corpus within %v (applied %d)", goldenWait, s.count())
	}
}

// goldenCardsBySubject indexes cards by their request event id.
func goldenCardsBySubject(in *inbox.Inbox) map[string]inbox.Card {
	out := map[string]inbox.Card{}
	for _, c := range in.Cards(inbox.Query{}) {
		out[c.Key.RequestID] = c
	}
	return out
}

const (
	goldenRmRf  = "01JX9YB4RQ000000000000GOLD"
	goldenForce = "01JX9YBQARQ20000000000GOLD"
	goldenForm  = "01JX9YBEFRQ0000000000GOLD3"
)

func TestGoldenCorpusThroughTheFeed(t *testing.T) {
	t.Parallel()
	lines := goldenLines(t)
	// The endpoint serves the whole corpus twice in one stream (a replay
	// after a redelivery), then the marker, then holds the stream open.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, err := sse.NewWriter(w, 5*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for pass := 0; pass < 2; pass++ {
			for _, l := range lines {
				ev, err := aep.Decode(l)
				if err != nil {
					return
				}
				m := sse.Message{Event: ev.Type(), Data: string(l)}
				if p, ok := ev.Position(); ok && ev.Session() != "" {
					m.ID = aep.FormatSSEID(ev.Session(), p)
				}
				if sw.Event(m) != nil {
					return
				}
			}
		}
		if sw.Event(sse.Message{Event: "session.started", Data: goldenMarker}) != nil {
			return
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)

	sink := newGoldenSink()
	goldenRunFeed(t, srv.URL, "", sink)
	goldenAwaitMarker(t, sink)

	assert.Equal(t, len(lines)+1, sink.count(), "every corpus event applies exactly once (the second pass is deduped on (source, id))")
	cards := goldenCardsBySubject(sink.Inbox)
	require.Len(t, cards, 3, "three requests in the corpus, three cards")

	rm := cards[goldenRmRf]
	assert.Equal(t, inbox.StateResolved, rm.State, "rm -rf permission: resolved")
	require.NotNil(t, rm.Recorded)
	assert.Equal(t, "allow", rm.Recorded.Answer.Option, "rm -rf permission: answered allow")
	assert.Equal(t, "control", rm.Recorded.Via)
	require.NotEmpty(t, rm.Routes, "the Telegram sink's attention.routed (another source) found the card by (session, subject)")
	assert.Equal(t, "aep://host-b/agent/telegram-sink", rm.Routes[0].Source)
	require.NotEmpty(t, rm.Responders, "the sink's command, seen on the feed, is recorded")
	assert.Equal(t, "01JX9YB6CMD00000000000GOLD", rm.Responders[0].CommandID)
	assert.Equal(t, inbox.SubmissionAccepted, rm.Responders[0].Ack, "the ack's cause edge resolves across the control boundary to the command")

	force := cards[goldenForce]
	assert.Equal(t, inbox.StateTimedOut, force.State, "push --force permission: timed out")
	require.NotNil(t, force.TimeoutMS)
	assert.EqualValues(t, 30000, *force.TimeoutMS)

	form := cards[goldenForm]
	assert.Equal(t, inbox.StateResolved, form.State, "s_form: resolved")
	assert.Equal(t, "answered", form.Resolution)
	require.NotNil(t, form.Recorded)
	assert.Equal(t, aep.CaptureRedacted, form.Recorded.Capture)
	v := form.Recorded.Answer.Values
	assert.Equal(t, "billing-api", v["name"])
	assert.Equal(t, true, v["staged"])
	assert.Equal(t, []any{"1", "3"}, v["regions"])
	assert.Equal(t, "MariaDB", v["db"], "the free-text other answer is kept")
}

func TestGoldenCorpusThroughTheRelay(t *testing.T) {
	t.Parallel()
	const token = "golden-token"
	rcfg := relay.DefaultConfig()
	rcfg.Token = token
	rl := relay.New(rcfg)
	srv := httptest.NewServer(rl.Handler())
	t.Cleanup(srv.Close)

	// Post every event but the commands (a relay routes commands over its
	// socket; it refuses them over HTTP) as one NDJSON batch, then the marker.
	var batch bytes.Buffer
	var commands int
	for _, l := range goldenLines(t) {
		ev, err := aep.Decode(l)
		require.NoError(t, err)
		if aep.IsCommand(ev.Type()) {
			commands++
			continue
		}
		batch.Write(l)
		batch.WriteByte('\n')
	}
	batch.WriteString(goldenMarker + "\n")
	require.Equal(t, 2, commands, "the corpus holds two commands (a respond and a cancel)")
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/events", &batch)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("AEP-Version", "0.1")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "the relay accepts the corpus")

	sink := newGoldenSink()
	goldenRunFeed(t, srv.URL, token, sink) // the production filter: feed.DefaultFilter
	goldenAwaitMarker(t, sink)

	cards := goldenCardsBySubject(sink.Inbox)
	require.Len(t, cards, 3)
	assert.Equal(t, inbox.StateResolved, cards[goldenRmRf].State)
	require.NotNil(t, cards[goldenRmRf].Recorded)
	assert.Equal(t, "allow", cards[goldenRmRf].Recorded.Answer.Option)
	assert.Equal(t, inbox.StateTimedOut, cards[goldenForce].State)
	assert.Equal(t, inbox.StateResolved, cards[goldenForm].State)
	require.NotNil(t, cards[goldenForm].Recorded)
	assert.Equal(t, "MariaDB", cards[goldenForm].Recorded.Answer.Values["db"])
}
