package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func fromJSON(t *testing.T, positions ...any) string {
	t.Helper()
	var ps []map[string]any
	for i := 0; i+2 < len(positions)+1; i += 3 {
		ps = append(ps, map[string]any{"session": positions[i], "epoch": positions[i+1], "seq": positions[i+2]})
	}
	b, err := json.Marshal(ps)
	require.NoError(t, err)
	return string(b)
}

func TestStreamLiveDeliveryFilterAndIDs(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	s := tr.stream(t, url.Values{"filter": {`{"session":"live-a"}`}}, nil)
	agentEv := ev(t, "agent.heartbeat", "", 0)
	tr.mustPost(t, ev(t, "session.started", "other", 0), ev(t, "session.started", "live-a", 0, withEpoch(2)), agentEv)
	tr.mustPost(t, ev(t, "progress.status", "live-a", 1, withEpoch(2)))

	it := s.nextEvent(t)
	assert.Equal(t, "session.started", it.Event)
	assert.Equal(t, "live-a:2:0", it.ID, "id is {session}:{epoch}:{seq}")
	assert.Equal(t, "live-a", decoded(t, []byte(it.Data)).Session())
	it = s.nextEvent(t)
	assert.Equal(t, "live-a:2:1", it.ID)

	all := tr.stream(t, nil, nil)
	tr.mustPost(t, agentEv)
	it = all.nextEvent(t)
	assert.Equal(t, "agent.heartbeat", it.Event)
	assert.Equal(t, "", it.ID, "agent-scoped events carry no id")
}

func TestStreamBadParameters(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.MaxFrom = 2
	tr := startRelay(t, c)
	for _, tc := range []struct {
		name string
		q    url.Values
		h    http.Header
		err  string
	}{
		{"filter not JSON", url.Values{"filter": {"{nope"}}, nil, "invalid-filter"},
		{"filter on data", url.Values{"filter": {`{"data":1}`}}, nil, "invalid-filter"},
		{"bare glob", url.Values{"filter": {`{"type":"*"}`}}, nil, "invalid-filter"},
		{"capture unknown", url.Values{"capture": {"secret"}}, nil, "invalid-capture"},
		{"from not JSON", url.Values{"from": {"[{"}}, nil, "invalid-from"},
		{"from an object", url.Values{"from": {`{"session":"a","seq":1}`}}, nil, "invalid-from"},
		{"from negative seq", url.Values{"from": {`[{"session":"a","seq":-1}]`}}, nil, "invalid-from"},
		{"from float seq", url.Values{"from": {`[{"session":"a","seq":1.5}]`}}, nil, "invalid-from"},
		{"from without session", url.Values{"from": {`[{"seq":1}]`}}, nil, "invalid-from"},
		{"from some other string", url.Values{"from": {"everything"}}, nil, "invalid-from"},
		{"from over the cap", url.Values{"from": {fromJSON(t, "a", 0, 0, "b", 0, 0, "c", 0, 0)}}, nil, "limit-exceeded"},
		{"live neither 0 nor 1", url.Values{"live": {"maybe"}}, nil, "invalid-live"},
		{"Last-Event-ID malformed", nil, http.Header{"Last-Event-Id": {"nocolons"}}, "invalid-last-event-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := tr.request(t, http.MethodGet, "/stream", tc.q, tc.h, nil)
			require.Equal(t, http.StatusBadRequest, status, "body %s", body)
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m))
			assert.Equal(t, tc.err, m["error"])
			assert.NotEmpty(t, m["detail"])
		})
	}
	// The relay still serves after all that.
	tr.mustPost(t, ev(t, "session.started", "after-bad", 0))
	events, _ := tr.history(t, url.Values{"from": {"all"}})
	assert.Len(t, events, 1)
}

func TestStreamResume(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	var a, b [][]byte
	for i := range 4 {
		a = append(a, ev(t, "progress.status", "ra", int64(i)))
		b = append(b, ev(t, "progress.status", "rb", int64(i), withEpoch(1)))
	}
	tr.mustPost(t, append(append([][]byte{}, a...), b...)...)

	t.Run("from positions are exclusive; unnamed sessions are live only", func(t *testing.T) {
		events, comments := tr.history(t, url.Values{"from": {fromJSON(t, "ra", 0, 1, "rb", 1, 2)}})
		assert.Empty(t, comments)
		assert.Equal(t, []string{idOf(t, a[2]), idOf(t, a[3]), idOf(t, b[3])}, ids(t, events))
		events, _ = tr.history(t, url.Values{"from": {fromJSON(t, "rb", 0, 9)}})
		assert.Equal(t, []string{idOf(t, b[0]), idOf(t, b[1]), idOf(t, b[2]), idOf(t, b[3])}, ids(t, events), "epoch 1 is after epoch 0")
	})
	t.Run("from=all replays every held session", func(t *testing.T) {
		events, comments := tr.history(t, url.Values{"from": {"all"}})
		assert.Empty(t, comments, "no replay-exhausted under from=all")
		assert.Len(t, events, 8)
	})
	t.Run("Last-Event-ID resumes its session", func(t *testing.T) {
		q := url.Values{"live": {"0"}}
		got := tr.stream(t, q, http.Header{"Last-Event-Id": {"ra:0:2"}}).all(t)
		require.Len(t, got, 1)
		assert.Equal(t, idOf(t, a[3]), idOf(t, []byte(got[0].Data)))
		assert.Equal(t, "ra:0:3", got[0].ID)
	})
	t.Run("from wins over Last-Event-ID", func(t *testing.T) {
		q := url.Values{"live": {"0"}, "from": {fromJSON(t, "rb", 1, 2)}}
		got := tr.stream(t, q, http.Header{"Last-Event-Id": {"ra:0:0"}}).all(t)
		require.Len(t, got, 1)
		assert.Equal(t, "rb:1:3", got[0].ID)
	})
	t.Run("filter applies to replay", func(t *testing.T) {
		events, _ := tr.history(t, url.Values{"from": {"all"}, "filter": {`{"session":"rb"}`}})
		assert.Len(t, events, 4)
	})
	t.Run("session names with colons", func(t *testing.T) {
		tr.mustPost(t, ev(t, "session.started", "a:b c", 0), ev(t, "progress.status", "a:b c", 1))
		got := tr.stream(t, url.Values{"live": {"0"}}, http.Header{"Last-Event-Id": {"a:b c:0:0"}}).all(t)
		require.Len(t, got, 1)
		assert.Equal(t, "a:b c:0:1", got[0].ID)
	})
}

func TestStreamReplayExhaustedAfterEviction(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.Buffer = 4
	tr := startRelay(t, c)
	var evs [][]byte
	for i := range 10 {
		evs = append(evs, ev(t, "progress.status", "ev", int64(i), withEpoch(1)))
	}
	tr.mustPost(t, evs...)

	events, comments := tr.history(t, url.Values{"from": {fromJSON(t, "ev", 1, 0)}})
	assert.Equal(t, []string{"replay-exhausted ev 1:6"}, comments, "the earliest position still held")
	assert.Equal(t, ids(t, []string{string(evs[6]), string(evs[7]), string(evs[8]), string(evs[9])}), ids(t, events))

	got := tr.stream(t, url.Values{"live": {"0"}, "from": {fromJSON(t, "ev", 1, 0)}}, nil).all(t)
	require.True(t, got[0].IsComment, "the marker comes before any replayed event")

	events, comments = tr.history(t, url.Values{"from": {fromJSON(t, "ev", 1, 5)}})
	assert.Empty(t, comments, "nothing after 1:5 was evicted")
	assert.Len(t, events, 4)
}

func TestStreamDedupeBackfillAndArrivalOrder(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	live := tr.stream(t, url.Values{"filter": {`{"session":"dd"}`}}, nil)
	e0 := ev(t, "session.started", "dd", 0)
	e2 := ev(t, "progress.status", "dd", 2)
	routed := ev(t, "attention.routed", "dd", 0, withSubject("req"), withSource("aep://sink/agent/sink"), withData(map[string]any{"channel": "x"}))
	e1 := ev(t, "progress.status", "dd", 1)

	tr.mustPost(t, e0, e2)
	tr.mustPost(t, routed)
	status, res := tr.post(t, e0)
	require.Equal(t, http.StatusAccepted, status, "a redelivery is accepted, not refused")
	assert.Equal(t, 1.0, res["duplicates"])
	status, _ = tr.post(t, e1)
	require.Equal(t, http.StatusAccepted, status, "an event below the session's highest position is accepted")

	var got []string
	for range 5 {
		got = append(got, live.nextEvent(t).Data)
	}
	assert.Equal(t, ids(t, []string{string(e0), string(e2), string(routed), string(e0), string(e1)}), ids(t, got),
		"live fan-out forwards as received, the redelivery included")

	events, _ := tr.history(t, url.Values{"from": {"all"}})
	assert.Equal(t, ids(t, []string{string(e0), string(e1), string(e2), string(routed)}), ids(t, events),
		"history holds one copy, in (epoch, seq) order, the seq-less event after what preceded it")

	other := ev(t, "session.started", "dd", 0, withSource("aep://other/agent/o"), withID(idOf(t, e0)))
	tr.mustPost(t, other)
	events, _ = tr.history(t, url.Values{"from": {"all"}})
	assert.Len(t, events, 5, "dedupe is on (source, id), not bare id")
}

func TestSessionCapEvictsLeastRecentlyWritten(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.MaxSessions = 2
	tr := startRelay(t, c)
	tr.mustPost(t, ev(t, "session.started", "s1", 0))
	tr.mustPost(t, ev(t, "session.started", "s2", 0), ev(t, "progress.status", "s2", 1), ev(t, "progress.status", "s2", 2))
	tr.mustPost(t, ev(t, "progress.status", "s1", 1))
	tr.mustPost(t, ev(t, "session.started", "s3", 0))
	assert.Equal(t, 2, tr.Stats().Sessions)
	events, _ := tr.history(t, url.Values{"from": {"all"}})
	var sessions []string
	for _, e := range events {
		sessions = append(sessions, decoded(t, []byte(e)).Session())
	}
	assert.Equal(t, []string{"s1", "s1", "s3"}, sessions, "s2 was the least recently written")

	// s2 comes back after its eviction: a resume from before its last
	// event learns that events were lost instead of meeting a silent gap.
	back := ev(t, "progress.status", "s2", 5)
	tr.mustPost(t, back)
	events, comments := tr.history(t, url.Values{"from": {fromJSON(t, "s2", 0, 0)}})
	assert.Equal(t, []string{"replay-exhausted s2 0:5"}, comments)
	assert.Equal(t, []string{string(back)}, events)
}

func TestStreamCaptureCeiling(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	canary := "CANARY do not deliver at metadata"
	e := ev(t, "run.started", "cap", 0, withCapture("redacted"), withData(map[string]any{"trigger": "user", "prompt": canary}),
		func(env *aep.Envelope) { env.Run = "r1" })
	live := tr.stream(t, url.Values{"capture": {"metadata"}}, nil)
	full := tr.stream(t, nil, nil)
	tr.mustPost(t, e)
	check := func(t *testing.T, data string) {
		t.Helper()
		assert.NotContains(t, data, "CANARY")
		got := decoded(t, []byte(data))
		assert.Equal(t, "metadata", got.Capture().String())
		var d map[string]any
		require.NoError(t, got.DecodeData(&d))
		assert.Equal(t, "user", d["trigger"], "metadata fields are kept")
	}
	check(t, live.nextEvent(t).Data)
	assert.Equal(t, string(e), full.nextEvent(t).Data, "no ceiling: as received")
	events, _ := tr.history(t, url.Values{"from": {"all"}, "capture": {"metadata"}})
	require.Len(t, events, 1)
	check(t, events[0])
	events, _ = tr.history(t, url.Values{"from": {"all"}, "capture": {"full"}})
	assert.Equal(t, []string{string(e)}, events, "a ceiling above the event never up-levels it")
}

func TestStreamPing(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.SSEPing = 20 * time.Millisecond
	tr := startRelay(t, c)
	s := tr.stream(t, nil, nil)
	it := s.next(t)
	assert.True(t, it.IsComment)
	assert.Equal(t, "ping", it.Comment)
}

func TestStreamShutdownDrains(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	s := tr.stream(t, nil, nil)
	tr.mustPost(t, ev(t, "session.started", "sd", 0))
	s.nextEvent(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, tr.Shutdown(ctx))
	it := s.next(t)
	assert.True(t, it.IsComment)
	assert.Equal(t, "shutting-down", it.Comment)
	select {
	case <-s.done:
	case <-time.After(wait):
		t.Fatal("stream did not end after shutting-down")
	}
	status, _, _ := tr.request(t, http.MethodGet, "/stream", nil, nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, status, "no new streams while draining")
}

// TestStreamSeamHasNoGapNorDuplicate subscribes with a resume position
// while another goroutine keeps posting to the same session: replay and
// live must meet exactly.
func TestStreamSeamHasNoGapNorDuplicate(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	const n = 300
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = ev(t, "progress.status", "seam", int64(i))
	}
	tr.mustPost(t, evs[:50]...)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 50; i < n; i += 10 {
			tr.mustPost(t, evs[i:i+10]...)
		}
	}()
	s := tr.stream(t, url.Values{"from": {fromJSON(t, "seam", 0, 9)}}, nil)
	var got []string
	for len(got) < n-10 {
		it := s.nextEvent(t)
		got = append(got, it.ID)
	}
	wg.Wait()
	want := make([]string, 0, n-10)
	for i := 10; i < n; i++ {
		want = append(want, fmt.Sprintf("seam:0:%d", i))
	}
	assert.Equal(t, want, got)
	select {
	case it := <-s.items:
		if !it.IsComment {
			t.Fatalf("an extra event after the last: %s", it.ID)
		}
	default:
	}
}

func TestStreamUnknownAndVendorTypesKept(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, cfg())
	vendor := ev(t, "x.acme.widget.spun", "vk", 0, withData(map[string]any{"rpm": 3}),
		func(env *aep.Envelope) {})
	tr.mustPost(t, vendor)
	events, _ := tr.history(t, url.Values{"from": {"all"}, "filter": {`{"type":"x.acme.*"}`}})
	assert.Equal(t, []string{string(vendor)}, events)
	assert.True(t, strings.HasPrefix(events[0], "{"))
}
