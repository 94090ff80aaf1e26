package web

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/sse"
)

// wait bounds every wait for something the server pushes.
const wait = 5 * time.Second

// pushStream is one browser reading the push stream.
type pushStream struct {
	t     *testing.T
	resp  *http.Response
	items chan sse.Item
	err   error // set before items is closed
}

// openPush connects to push?query (relative to the base path), with extra
// header pairs, and reads it in the background until the test ends.
func (h *harness) openPush(query string, header ...string) *pushStream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url("push"+query), nil)
	require.NoError(h.t, err)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, resp.StatusCode, "push status: got %d, want 200", resp.StatusCode)
	require.Equal(h.t, "text/event-stream", resp.Header.Get("Content-Type"))
	ps := &pushStream{t: h.t, resp: resp, items: make(chan sse.Item, 64)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ps.items)
		rd := sse.NewReader(resp.Body, 4<<20)
		for {
			it, err := rd.Next()
			if err != nil {
				ps.err = err
				return
			}
			select {
			case ps.items <- it:
			case <-ctx.Done():
				return
			}
		}
	}()
	h.t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		wg.Wait()
	})
	return ps
}

// next returns the next message, skipping comments.
func (ps *pushStream) next() sse.Message {
	ps.t.Helper()
	for {
		it := ps.item()
		if !it.IsComment {
			return it.Message
		}
	}
}

// nextBut returns the next message not of the events skip, skipping
// comments: a stream's batch summaries ("batches") follow its changes at
// most once per interval of the wall clock, so where one falls among the
// cards depends on how fast the machine is.
func (ps *pushStream) nextBut(skip ...string) sse.Message {
	ps.t.Helper()
	for {
		if m := ps.next(); !slices.Contains(skip, m.Event) {
			return m
		}
	}
}

// item returns the next comment or message.
func (ps *pushStream) item() sse.Item {
	ps.t.Helper()
	select {
	case it, ok := <-ps.items:
		if !ok {
			ps.t.Fatalf("push stream ended: %v", ps.err)
		}
		return it
	case <-time.After(wait):
		ps.t.Fatalf("nothing pushed within %s", wait)
	}
	return sse.Item{}
}

// ended waits for the server to end the stream.
func (ps *pushStream) ended() {
	ps.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case it, ok := <-ps.items:
			if !ok {
				assert.True(ps.t, errors.Is(ps.err, io.EOF) || ps.err != nil, "stream end: %v", ps.err)
				return
			}
			ps.t.Logf("after the end: %+v", it)
		case <-deadline:
			ps.t.Fatalf("the server did not end the push stream within %s", wait)
		}
	}
}

// cardMsg is a pushed card fragment, parsed.
func cardMsg(t *testing.T, m sse.Message) *goquery.Selection {
	t.Helper()
	require.Equal(t, "card", m.Event, "event: got %q (data %.200q), want card", m.Event, m.Data)
	d, err := goquery.NewDocumentFromReader(strings.NewReader(m.Data))
	require.NoError(t, err)
	art := d.Find("body > article[data-testid=card]")
	require.Equal(t, 1, art.Length(), "a card event holds one card: %.300q", m.Data)
	return art
}

// seqID is the SSE id of the inbox's latest change.
func seqID(in *inbox.Inbox) string { return pushID(in.Seq()) }

// testEpoch is the harness's push epoch (Config.PushEpoch).
const testEpoch = "e1"

// pushID is the harness's push event id of change seq.
func pushID(seq uint64) string { return testEpoch + "-" + strconv.FormatUint(seq, 10) }

func TestPushSendsChangedCardsAsFragments(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ps := h.openPush("")
	first := ps.next()
	assert.Equal(t, "status", first.Event, "on connect: the status fragment")
	assert.Empty(t, first.ID, "the status sent on connect is not a change: no id")

	id := h.ask("s1", "r1", nameForm())
	m := ps.next()
	art := cardMsg(t, m)
	assert.Equal(t, seqID(h.in), m.ID, "the message id is the inbox change seq")
	assert.Equal(t, domID(id), attr(art, "id"))
	assert.Equal(t, "true", attr(art, "data-open"))
	action, _ := art.Find(`form[data-testid="answer-form"]`).Attr("action")
	assert.Equal(t, "/cards/"+string(id)+"/answer", action, "the pushed card is the form that will be posted")
	assert.NotEmpty(t, attr(art.Find(`input[name="token"]`), "value"), "the pushed form carries its token")
	assert.Contains(t, art.Find(`[data-testid="question"]`).Text(), "What should the service be called?", "a one-line prompt is the heading")

	// A changed card arrives again, settled.
	h.lifecycle("s1", "r1", "attention.timeout", aep.Timeout{AfterMS: aep.Int64(1000)})
	m = ps.next()
	art = cardMsg(t, m)
	assert.Equal(t, seqID(h.in), m.ID)
	assert.Equal(t, "true", attr(art, "data-settled"), "the timed-out card is pushed as settled")
	assert.Zero(t, art.Find("form").Length(), "a settled card has no form")
}

func TestPushSendsStatusChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ps := h.openPush("")
	require.Equal(t, "status", ps.next().Event)

	h.in.FeedState(false, errors.New("relay closed the stream"))
	m := ps.next()
	require.Equal(t, "status", m.Event)
	assert.Equal(t, seqID(h.in), m.ID, "a status change carries its seq")
	d, err := goquery.NewDocumentFromReader(strings.NewReader(m.Data))
	require.NoError(t, err)
	assert.Equal(t, "lost", attr(d.Find("#banners"), "data-relay"))
	assert.Equal(t, 1, d.Find(`[data-testid="relay-lost"]`).Length(), "the relay-lost banner is pushed")

	h.in.FeedState(true, nil)
	m = ps.next()
	d, err = goquery.NewDocumentFromReader(strings.NewReader(m.Data))
	require.NoError(t, err)
	assert.Equal(t, "up", attr(d.Find("#banners"), "data-relay"))
	assert.Zero(t, d.Find(`[data-testid="relay-lost"]`).Length())
}

func TestPushReconnectGetsExactlyWhatItMissed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r1 := h.ask("s1", "r1", nameForm())
	ps := h.openPush("")
	require.Equal(t, "status", ps.next().Event)
	h.ask("s1", "r0", nameForm())
	last := ps.next()
	require.Equal(t, "card", last.Event)

	// While the browser is away: two new cards, one change, one status.
	r2 := h.ask("s1", "r2", nameForm())
	r3 := h.ask("s2", "r3", nameForm())
	h.lifecycle("s1", "r1", "attention.timeout", nil)
	h.in.FeedState(false, errors.New("relay gone"))

	again := h.openPush("?since="+pushID(1), "Last-Event-ID", last.ID) // Last-Event-ID wins over the page's since
	base, err := strconv.ParseUint(strings.TrimPrefix(last.ID, testEpoch+"-"), 10, 64)
	require.NoError(t, err)
	want := []struct {
		event string
		card  inbox.CardID
	}{{"card", r2}, {"card", r3}, {"card", r1}, {"status", ""}}
	for i, w := range want {
		m := again.next()
		assert.Equal(t, pushID(base+uint64(i)+1), m.ID, "missed change %d: id", i)
		require.Equal(t, w.event, m.Event, "missed change %d: event", i)
		if w.event == "card" {
			assert.Equal(t, domID(w.card), attr(cardMsg(t, m), "id"), "missed change %d: card", i)
		}
	}
	st := again.next()
	assert.Equal(t, "status", st.Event, "after the catch-up: the current status")
	assert.Equal(t, pushID(base+4), st.ID, "the current status sets no id: the last id stays the last change's")

	// Nothing else was queued: the next message is the next change.
	r4 := h.ask("s1", "r4", nameForm())
	m := again.next()
	assert.Equal(t, seqID(h.in), m.ID)
	assert.Equal(t, domID(r4), attr(cardMsg(t, m), "id"))
}

func TestPushFirstConnectCatchesUpFromThePage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.ask("s1", "r1", nameForm())
	push := attr(h.getPage(nil, "").doc(t).Find("body"), "data-push")
	require.True(t, strings.HasPrefix(push, "/push?"), "data-push: got %q", push)

	// A card asked between the page's render and the browser's connect.
	r2 := h.ask("s1", "r2", nameForm())
	ps := h.openPush(strings.TrimPrefix(push, "/push"))
	m := ps.next()
	assert.Equal(t, domID(r2), attr(cardMsg(t, m), "id"), "the card asked after the page was rendered")
	assert.Equal(t, "status", ps.next().Event)
}

func TestPushTooFarBehindReloads(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withInbox(func(o *inbox.Options) { o.History = 4 }))
	for i := range 10 {
		h.ask("s1", "r"+strconv.Itoa(i), nameForm())
	}
	cases := map[string][]string{
		"older than the history": {"?since=" + pushID(2)},
		"Last-Event-ID older":    {"", "Last-Event-ID", pushID(3)},
		"ahead":                  {"?since=" + pushID(999)},
		// Another replica's id, or an earlier process's, however its
		// seq compares with this inbox's: never caught up from it.
		"another epoch, seq within the history": {"?since=e2-" + strconv.FormatUint(h.in.Seq()-3, 10)},
		"Last-Event-ID of another epoch":        {"?since=" + pushID(h.in.Seq()-3), "Last-Event-ID", "e2-" + strconv.FormatUint(h.in.Seq()-1, 10)},
		"a bare seq (before epochs)":            {"?since=" + strconv.FormatUint(h.in.Seq()-3, 10)},
		"no seq":                                {"?since=" + testEpoch + "-x"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ps := h.openPush(c[0], c[1:]...)
			m := ps.next()
			assert.Equal(t, "reload", m.Event, "got %q, want reload", m.Event)
			ps.ended()
		})
	}
	// Within the history: caught up, no reload.
	ps := h.openPush("?since=" + pushID(h.in.Seq()-3))
	for range 3 {
		assert.Equal(t, "card", ps.next().Event)
	}
	assert.Equal(t, "status", ps.next().Event)
}

func TestPushFollowsTheFilter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mine := h.openPush("?session=s1")
	require.Equal(t, "status", mine.next().Event)

	other := h.ask("s2", "r1", nameForm())
	m := mine.next()
	assert.Equal(t, "remove", m.Event, "a card outside the filter is never sent: got %q", m.Event)
	assert.Equal(t, domID(other), m.Data)

	in := h.ask("s1", "r2", nameForm())
	assert.Equal(t, domID(in), attr(cardMsg(t, mine.next()), "id"))
}

func TestPushHeartbeat(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.Heartbeat = 20 * time.Millisecond }))
	ps := h.openPush("")
	for i := 0; i < 2; {
		it := ps.item()
		if it.IsComment {
			assert.Equal(t, "ping", it.Comment)
			i++
		}
	}
}

func TestPushNeverWritesAnEmptyID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	req := h.request(http.MethodGet, h.url("push"), nil, "Accept", "text/event-stream")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	require.NoError(t, err)
	defer resp.Body.Close()

	blocks := make(chan string, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(blocks)
		br := bufio.NewReader(resp.Body)
		var b strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\n" {
				blocks <- b.String()
				b.Reset()
				continue
			}
			b.WriteString(line)
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); wg.Wait() })

	// A stream with no position follows from when it starts: its first
	// block, the status, says it has (the headers may come before).
	var got []string
	select {
	case b, ok := <-blocks:
		require.True(t, ok, "stream ended")
		got = append(got, b)
	case <-time.After(wait):
		t.Fatal("no status on connect")
	}
	h.ask("s1", "r1", nameForm())
	h.in.FeedState(false, nil)
	for len(got) < 3 {
		select {
		case b, ok := <-blocks:
			require.True(t, ok, "stream ended")
			got = append(got, b)
		case <-time.After(wait):
			t.Fatalf("got %d blocks, want 3", len(got))
		}
	}
	for _, b := range got {
		for _, line := range strings.Split(strings.TrimSuffix(b, "\n"), "\n") {
			if strings.HasPrefix(line, "id") {
				assert.Regexp(t, `^id: `+testEpoch+`-[0-9]+$`, line, "an id line must carry an id (an empty one resets the browser's Last-Event-ID)")
			}
		}
	}
	assert.NotContains(t, got[0], "id:", "the status on connect has no id line")
	assert.Contains(t, got[1], "id: ", "a card change has an id")
	assert.Contains(t, got[2], "id: ", "a status change has an id")
}

func TestSlowReaderIsDroppedWithoutDelayingOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) {
		c.PushBuffer = 2
		c.WriteTimeout = 300 * time.Millisecond
		c.PromptBytes = 1 << 20 // whole prompts: big cards
	}))
	// The slow browser connects and never reads its body.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slowReq := h.request(http.MethodGet, h.url("push"), nil, "Accept", "text/event-stream")
	slow, err := http.DefaultClient.Do(slowReq.WithContext(ctx))
	require.NoError(t, err)
	defer slow.Body.Close()

	fast := h.openPush("")
	require.Equal(t, "status", fast.next().Event)

	// Big cards fill the slow browser's socket buffers; the fast one gets
	// every change, each within the wait, until the slow one is dropped.
	big := nameForm()
	big.Prompt = strings.Repeat("A long prompt that fills socket buffers. ", 3000)
	const maxChanges = 300
	n := 0
	for ; n < maxChanges && h.metrics.PushDrops.Load() == 0; n++ {
		h.ask("s1", "r"+strconv.Itoa(n), big)
		start := time.Now()
		m := fast.next()
		require.Equal(t, seqID(h.in), m.ID, "the fast reader got change %d", n)
		require.Less(t, time.Since(start), 2*time.Second, "the fast reader was held up by the slow one")
	}
	require.Equal(t, int64(1), h.metrics.PushDrops.Load(), "the slow reader was not dropped after %d changes", n)
	t.Logf("slow reader dropped after %d changes", n)

	// The slow reader's stream was ended by the server; the fast one lives on.
	_, err = io.Copy(io.Discard, slow.Body)
	assert.NotErrorIs(t, err, context.Canceled, "the slow stream ends on the server's side")
	h.ask("s1", "after", nameForm())
	assert.Equal(t, seqID(h.in), fast.next().ID)

	r := h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil))
	assert.Contains(t, r.body, "aepforms_push_drops_total 1")
}

func TestPushEndsWhenTheBrowserLeaves(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	req := h.request(http.MethodGet, h.url("push"), nil, "Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	require.NoError(t, err)
	rd := sse.NewReader(resp.Body, 1<<20)
	_, err = rd.Next() // the status: the handler is streaming
	require.NoError(t, err)
	require.Equal(t, int64(1), h.metrics.Browsers.Load(), "browsers while connected")
	cancel()
	resp.Body.Close()
	// The stream (on a connection taken over from net/http: no handler
	// is left for httptest's Close to wait for) sees the browser leave
	// and ends; the gauge drops.
	untilTrue(t, "browsers after the browser left: 0", func() bool { return h.metrics.Browsers.Load() == 0 })
	assert.Equal(t, int64(0), h.metrics.PushDrops.Load(), "a browser that left is not a drop")
}

// untilTrue waits until cond holds, up to wait.
func untilTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", wait, what)
		}
		<-tick.C
	}
}

// The server's graceful shutdown ends the push streams (taken over from
// net/http, which neither waits for nor ends them): the browser sees its
// stream end, to reconnect to the next server.
func TestPushEndsAtTheServersShutdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ps := h.openPush("")
	require.Equal(t, "status", ps.next().Event)
	require.Equal(t, int64(1), h.metrics.Browsers.Load())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, h.srv.Config.Shutdown(ctx))
	select {
	case _, open := <-ps.items:
		assert.False(t, open, "nothing more is pushed")
	case <-time.After(wait):
		t.Fatal("the push stream outlived the server's shutdown")
	}
	untilTrue(t, "browsers after the shutdown: 0", func() bool { return h.metrics.Browsers.Load() == 0 })
}

// Over HTTP/2 (which cannot be taken over) the stream goes through the
// response, and works as over HTTP/1.1.
func TestPushOverHTTP2(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ts := httptest.NewUnstartedServer(h.srv.Config.Handler)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/push", nil)
	require.NoError(t, err)
	req.Host = "127.0.0.1" // the open UI's host check
	req.Header.Set("Accept", "text/event-stream")
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	rd := sse.NewReader(resp.Body, 4<<20)
	next := func() sse.Message {
		for {
			it, err := rd.Next()
			require.NoError(t, err)
			if !it.IsComment {
				return it.Message
			}
		}
	}
	require.Equal(t, "status", next().Event)
	id := h.ask("s1", "r1", nameForm())
	m := next()
	require.Equal(t, "card", m.Event)
	assert.Equal(t, domID(id), attr(cardMsg(t, m), "id"))
}

// Changes waiting for a browser that name one card more than once (a
// card asked and then answered while the browser reconnected; accepted
// and answered at once) go out as that card once, as it now is, under
// the last change's id: the card is drawn once, not once per change. A
// card first added among them still counts as new (sent even when it
// sorts outside the browser's page).
func TestPushSendsACardChangedTwiceWhileWaitingOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.ask("s1", "r1", nameForm())
	ps := h.openPush("")
	require.Equal(t, "status", ps.next().Event)
	h.ask("s1", "r0", nameForm())
	last := ps.next()
	require.Equal(t, "card", last.Event)
	base, err := strconv.ParseUint(strings.TrimPrefix(last.ID, testEpoch+"-"), 10, 64)
	require.NoError(t, err)

	// While the browser is away: a new card, then its timeout.
	r2 := h.ask("s1", "r2", nameForm())
	h.lifecycle("s1", "r2", "attention.timeout", nil)
	require.Equal(t, base+2, h.in.Seq(), "two changes while away")

	again := h.openPush("", "Last-Event-ID", last.ID)
	m := again.next()
	require.Equal(t, "card", m.Event)
	assert.Equal(t, pushID(base+2), m.ID, "under the last change's id")
	c := cardMsg(t, m)
	assert.Equal(t, domID(r2), attr(c, "id"))
	assert.Equal(t, "timed-out", attr(c, "data-state"), "the card as it now is")
	st := again.next()
	assert.Equal(t, "status", st.Event, "then the current status: the card was sent once")
}

// The stream's subscription is taken before its response head is
// written: a client (a test suite driving the UI over plain HTTP) that has
// the head has every change made after it, without first waiting for the
// status.
func TestAPushStreamHasEveryChangeAfterItsHead(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 100 {
		ps := h.openPush("")
		id := h.ask("s1", "r"+strconv.Itoa(i), nameForm())
		require.Equal(t, "status", ps.next().Event)
		m := ps.next()
		require.Equal(t, "card", m.Event, "connection %d: the card asked right after the head", i)
		assert.Contains(t, m.Data, string(id), "connection %d", i)
	}
}

// A browser sends nothing on its event stream after the request: a client
// that does (a flood, one read system call per byte for the server) ends
// its stream.
func TestPushEndsWhenTheClientSendsOnIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = conn.Write([]byte("GET /push HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"))
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	head, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200 OK\r\n", head)
	untilTrue(t, "one browser", func() bool { return h.metrics.Browsers.Load() == 1 })
	go func() { _, _ = conn.Write(bytes.Repeat([]byte("x"), 1<<20)) }()
	untilTrue(t, "the stream ended", func() bool { return h.metrics.Browsers.Load() == 0 })
}

// net/http's Shutdown neither ends nor waits for a stream taken over from
// it: Shutdown ends them and Streams.Wait, after it, returns once they
// are over, so serve closes nothing a stream still uses.
func TestStreamsWaitOwnsTheTakenOverStreams(t *testing.T) {
	t.Parallel()
	streams := &Streams{}
	h := newHarness(t, func(s *setup) { s.deps.Streams = streams })
	var pss []*pushStream
	for range 3 {
		ps := h.openPush("")
		require.Equal(t, "status", ps.next().Event)
		pss = append(pss, ps)
	}
	require.Equal(t, int64(3), h.metrics.Browsers.Load())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, h.srv.Config.Shutdown(ctx))
	require.NoError(t, streams.Wait(ctx), "the streams end at the shutdown")
	assert.Equal(t, int64(0), h.metrics.Browsers.Load(), "no stream is left once Wait returns")
	for _, ps := range pss {
		ps.ended()
	}
}
