package relay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/sse"
)

// stalledStream opens GET /stream over a raw TCP connection with a
// modest receive buffer (at least two loopback segments, so the window
// reopens at once when the test starts reading), reads the response headers and then nothing more. The
// returned body is read later, under the connection's read deadline.
func (tr *testRelay) stalledStream(t *testing.T, q url.Values) (net.Conn, io.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", tr.srv.Listener.Addr().String())
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(256<<10))
	t.Cleanup(func() { conn.Close() })
	if q == nil {
		q = url.Values{}
	}
	q.Set("access_token", tr.token)
	q.Set("stall", "1")
	req, err := http.NewRequest(http.MethodGet, "http://relay/stream?"+q.Encode(), nil)
	require.NoError(t, err)
	require.NoError(t, req.Write(conn))
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return conn, resp.Body
}

// stalledSocket subscribes over a WebSocket and then stops reading.
func (tr *testRelay) stalledSocket(t *testing.T) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(tr.url("/socket", url.Values{"access_token": {tr.token}, "stall": {"1"}}), "http"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(1 << 30)
	// (The client's own receive buffer is the OS default; the relay's send
	// buffer for this connection is the small one.)
	for _, f := range []any{hello("consumer"), map[string]any{"type": "subscribe", "id": "slow", "filter": map[string]any{}}} {
		b, _ := json.Marshal(f)
		require.NoError(t, c.Write(ctx, websocket.MessageText, b))
		_, _, err := c.Read(ctx)
		require.NoError(t, err)
	}
	return c
}

// flood builds n events of about size bytes each.
func flood(t *testing.T, session, severity string, n, size int) [][]byte {
	t.Helper()
	pad := strings.Repeat("p", size)
	out := make([][]byte, n)
	for i := range out {
		out[i] = ev(t, "progress.status", session, int64(i), withSeverity(severity), withData(map[string]any{"message": pad}))
	}
	return out
}

// TestSlowSubscribersNeverStallOthers: one SSE stream and one socket never
// read while notice events flood in; ingest and the readers that do read
// keep pace, and the stalled ones are disconnected (never silently fed a
// gap) so they resume.
func TestSlowSubscribersNeverStallOthers(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.Queue = 16
	c.WriteTimeout = 500 * time.Millisecond
	tr := startRelaySmallBuffers(t, c)
	slowConn, slowBR := tr.stalledStream(t, nil)
	slowWS := tr.stalledSocket(t)
	fast := tr.stream(t, nil, nil)
	fastWS := tr.consumer(t)
	fastWS.subscribe(t, "fast", nil)

	// 2.5 MiB, one event per POST: the stalled path holds about 560 KiB of
	// socket buffers plus two queues' worth (16 each), about 70 events.
	const n, size = 160, 16 << 10
	evs := flood(t, "bp", "notice", n, size)
	// Each event is posted once the readers have the previous one, so the
	// readers are never behind and the test shows each delivery on time
	// (within the wait) while the stalled subscribers fall ever further back.
	var slowest time.Duration
	for i := range n {
		start := time.Now()
		tr.mustPost(t, evs[i])
		assert.Equal(t, fmt.Sprintf("bp:0:%d", i), fast.nextEvent(t).ID, "the reading SSE subscriber gets everything, in order")
		_, b := fastWS.nextFrame(t)
		assert.Equal(t, string(evs[i]), string(b), "the reading socket gets everything")
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("slowest POST-to-both-readers round: %s, beside two stalled subscribers", slowest)

	// The stalled stream was ended: reading it now reaches EOF, and what it
	// did get is a gapless prefix.
	require.NoError(t, slowConn.SetReadDeadline(time.Now().Add(wait)))
	rd := sse.NewReader(slowBR, 0)
	got := 0
	for {
		it, err := rd.Next()
		if err != nil {
			assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the stream ended, it did not time out")
			break
		}
		if it.IsComment {
			continue
		}
		assert.Equal(t, fmt.Sprintf("bp:0:%d", got), it.ID, "no gap in what a disconnected subscriber received")
		got++
	}
	assert.Less(t, got, n, "the stalled stream was cut off, not fed everything")

	// The stalled socket was closed too.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	seen := 0
	for {
		_, b, err := slowWS.Read(ctx)
		if err != nil {
			require.NoError(t, ctx.Err(), "the stalled socket must be closed by the relay")
			break
		}
		var f map[string]any
		require.NoError(t, json.Unmarshal(b, &f))
		if f["type"] == "closing" {
			continue
		}
		assert.Equal(t, float64(seen), f["seq"], "no gap on the socket either")
		seen++
	}
	assert.Less(t, seen, n)
}

// TestSlowSubscriberLosesOnlyLowSeverity: toward a stalled subscriber info
// events may be dropped, but it stays connected and later events arrive.
func TestSlowSubscriberLosesOnlyLowSeverity(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.Queue = 16
	// The stalled reader holds out for as long as the posting takes (on
	// JetStream under the race detector, many seconds): its write
	// deadline is not what this test is about.
	c.WriteTimeout = time.Minute
	tr := startRelaySmallBuffers(t, c)
	conn, br := tr.stalledStream(t, nil)
	fast := tr.stream(t, nil, nil)

	const n = 192 // 3 MiB: the stalled path holds about 600 KiB plus the queue
	evs := flood(t, "lo", "info", n, 16<<10)
	for i := range n {
		tr.mustPost(t, evs[i])
		require.Equal(t, fmt.Sprintf("lo:0:%d", i), fast.nextEvent(t).ID)
	}
	last := ev(t, "progress.status", "lo", n, withSeverity("warning"))
	tr.mustPost(t, last)
	fast.nextEvent(t)

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	rd := sse.NewReader(br, 0)
	var mu sync.Mutex
	got := 0
	for {
		it, err := rd.Next()
		require.NoError(t, err, "the slow subscriber is still connected (after %d events)", got)
		if it.IsComment {
			continue
		}
		mu.Lock()
		got++
		mu.Unlock()
		if it.ID == fmt.Sprintf("lo:0:%d", n) {
			break
		}
	}
	assert.Less(t, got, n+1, "some info events were dropped toward the stalled subscriber")
}
