package sse

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewWriterHeaders(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	_, err := NewWriter(rec, time.Second)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Equal(t, "no", rec.Header().Get("X-Accel-Buffering"))
	assert.True(t, rec.Flushed, "headers are flushed at once")
}

// plainWriter hides the recorder's Flush.
type plainWriter struct{ http.ResponseWriter }

// wrapped exposes the recorder only through Unwrap, as middleware does.
type wrapped struct{ inner http.ResponseWriter }

func (w wrapped) Header() http.Header         { return w.inner.Header() }
func (w wrapped) Write(b []byte) (int, error) { return w.inner.Write(b) }
func (w wrapped) WriteHeader(code int)        { w.inner.WriteHeader(code) }
func (w wrapped) Unwrap() http.ResponseWriter { return w.inner }

func TestNewWriterFlushable(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	_, err := NewWriter(plainWriter{rec}, 0)
	require.ErrorIs(t, err, ErrNotFlushable)
	assert.False(t, rec.Flushed, "nothing written when not flushable")
	assert.Empty(t, rec.Header().Get("Content-Type"))

	rec = httptest.NewRecorder()
	w, err := NewWriter(wrapped{rec}, 0)
	require.NoError(t, err, "a writer that unwraps to a flusher is accepted")
	require.NoError(t, w.Ping())
	assert.Equal(t, ": ping\n", rec.Body.String())
}

func TestWriterFraming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"all fields", Message{ID: "s:0:4", Event: "attention.requested", Data: `{"a":1}`, Retry: 1500 * time.Millisecond},
			"id: s:0:4\nevent: attention.requested\nretry: 1500\ndata: {\"a\":1}\n\n"},
		{"data only", Message{Data: "x"}, "data: x\n\n"},
		{"empty data still dispatches", Message{}, "data: \n\n"},
		{"multi-line data split at LF, CR and CRLF", Message{Data: "a\nb\rc\r\nd"}, "data: a\ndata: b\ndata: c\ndata: d\n\n"},
		{"trailing line break kept", Message{Data: "a\n"}, "data: a\ndata: \n\n"},
		{"leading space kept by the separator space", Message{ID: " i", Data: " d"}, "id:  i\ndata:  d\n\n"},
		{"sub-millisecond retry written as none", Message{Data: "x", Retry: time.Microsecond}, "data: x\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			w, err := NewWriter(rec, time.Second)
			require.NoError(t, err)
			require.NoError(t, w.Event(tc.m))
			assert.Equal(t, tc.want, rec.Body.String())
		})
	}
}

func TestWriterRefusesForgedFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    Message
	}{
		{"LF in id", Message{ID: "a\ndata: forged", Data: "x"}},
		{"CR in id", Message{ID: "a\rdata: forged", Data: "x"}},
		{"NUL in id", Message{ID: "a\x00b", Data: "x"}},
		{"LF in event", Message{Event: "a\n\ndata: forged", Data: "x"}},
		{"CR in event", Message{Event: "a\r", Data: "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			w, err := NewWriter(rec, 0)
			require.NoError(t, err)
			require.ErrorIs(t, w.Event(tc.m), ErrInvalidField)
			assert.Empty(t, rec.Body.String(), "nothing written")
		})
	}
}

func TestWriterComment(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	w, err := NewWriter(rec, 0)
	require.NoError(t, err)
	require.NoError(t, w.Comment("replay-exhausted s 0:5"))
	require.NoError(t, w.Comment("two\ndata: forged\r\n"))
	require.NoError(t, w.Ping())
	assert.Equal(t, ": replay-exhausted s 0:5\n: two\n: data: forged\n: \n: ping\n", rec.Body.String())

	got, err := readAll(NewReader(strings.NewReader(rec.Body.String()), 0))
	require.NoError(t, err)
	assert.Equal(t, []Item{comment("replay-exhausted s 0:5"), comment("two"), comment("data: forged"), comment(""), comment("ping")}, got,
		"a multi-line comment stays comments, no event is forged")
}

// TestWriterReaderOverHTTP streams through a real server: what the Writer
// sends is what the Reader returns, comments included.
func TestWriterReaderOverHTTP(t *testing.T) {
	t.Parallel()
	sent := []Message{
		{ID: "s 1:0:0", Event: "session.started", Data: `{"a":"b"}`},
		{Event: "agent.heartbeat", Data: "{}"},
		{ID: "s 1:0:1", Event: "attention.requested", Data: "line1\nline2", Retry: 3 * time.Second},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := NewWriter(rw, time.Second)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		for _, m := range sent {
			if w.Event(m) != nil || w.Ping() != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	got, err := readAll(NewReader(resp.Body, 0))
	require.NoError(t, err)
	want := []Item{
		{Message: Message{ID: "s 1:0:0", Event: "session.started", Data: `{"a":"b"}`}}, comment("ping"),
		{Message: Message{ID: "s 1:0:0", Event: "agent.heartbeat", Data: "{}"}}, comment("ping"),
		{Message: Message{ID: "s 1:0:1", Event: "attention.requested", Data: "line1\nline2", Retry: 3 * time.Second}}, comment("ping"),
	}
	assert.Equal(t, want, got, "the id persists over the id-less agent event")
}

// TestWriterDeadline: a client that stops reading makes a write fail within
// the write timeout instead of blocking the handler forever.
func TestWriterDeadline(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := NewWriter(rw, 50*time.Millisecond)
		if err != nil {
			done <- err
			return
		}
		big := Message{Data: strings.Repeat("x", 1<<20)}
		for {
			if err := w.Event(big); err != nil {
				done <- err
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	// The client reads nothing: socket buffers fill, then the deadline fires.
	select {
	case err := <-done:
		require.Error(t, err)
		var ne net.Error
		assert.True(t, errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout"),
			"got %v, want a write timeout", err)
	case <-time.After(10 * time.Second):
		t.Fatal("write to a stalled client did not time out")
	}
}

// deadlines records the write deadlines set and, at each write, how long
// the deadline then in force left (-1: none).
type deadlines struct {
	now      func() time.Time
	deadline time.Time
	sets     int
	left     []time.Duration
}

func (d *deadlines) SetWriteDeadline(t time.Time) error {
	d.deadline = t
	d.sets++
	return nil
}

func (d *deadlines) wrote() {
	if d.deadline.IsZero() {
		d.left = append(d.left, -1)
	} else {
		d.left = append(d.left, d.deadline.Sub(d.now()))
	}
}

// deadlineRecorder is a response that records its write deadlines
// (http.ResponseController finds SetWriteDeadline).
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines
}

func (d *deadlineRecorder) Write(b []byte) (int, error) {
	d.wrote()
	return d.ResponseRecorder.Write(b)
}

// deadlineConn is a connection that records its write deadlines and
// drops what is written.
type deadlineConn struct {
	net.Conn
	deadlines
}

func (d *deadlineConn) SetWriteDeadline(t time.Time) error { return d.deadlines.SetWriteDeadline(t) }

func (d *deadlineConn) Write(b []byte) (int, error) {
	d.wrote()
	return len(b), nil
}

// TestConnWriterDeadlineRefreshedRarely: at fleet scale setting and
// clearing a deadline around every write was a tenth of serve's CPU. On a
// connection taken over from net/http the writer sets one and refreshes
// it only when less than half the timeout is left, so every write still
// runs under a deadline between half the timeout and the whole of it;
// Done lifts it.
func TestConnWriterDeadlineRefreshedRarely(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	clock := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	c := &deadlineConn{deadlines: deadlines{now: now}}
	w, err := newConnWriter(c, http.Header{}, timeout, now)
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, w.Event(Message{Event: "card", Data: "x"}))
	}
	assert.Equal(t, 1, c.sets, "one deadline for the head and a burst of 100 events")

	clock = clock.Add(4 * time.Second) // 6 s left: kept
	require.NoError(t, w.Frame([]byte("data: y\n\n")))
	assert.Equal(t, 1, c.sets, "6 s of 10 left: the deadline is kept")
	clock = clock.Add(2 * time.Second) // 4 s left: refreshed
	require.NoError(t, w.Ping())
	assert.Equal(t, 2, c.sets, "4 s of 10 left: refreshed")
	clock = clock.Add(time.Minute) // long past: refreshed
	require.NoError(t, w.Event(Message{Data: "z"}))
	assert.Equal(t, 3, c.sets)

	require.Len(t, c.left, 104) // the head and 103 writes
	for i, l := range c.left {
		assert.GreaterOrEqual(t, l, timeout/2, "write %d under a deadline with at least half the timeout left", i)
		assert.LessOrEqual(t, l, timeout, "write %d", i)
	}
	w.Done()
	assert.True(t, c.deadline.IsZero(), "Done lifts the deadline")
	assert.Equal(t, 4, c.sets)

	c = &deadlineConn{deadlines: deadlines{now: now}}
	w, err = newConnWriter(c, http.Header{}, 0, now)
	require.NoError(t, err)
	require.NoError(t, w.Ping())
	w.Done()
	assert.Zero(t, c.sets, "no timeout, no deadline")
}

// TestResponseWriterLiftsItsDeadlineAfterEachWrite: over HTTP/2 a
// response's write deadline resets the stream when it passes, even with
// no write pending, so a deadline left set between writes ended every idle
// push stream (and relay stream) one write timeout after its last write,
// over HTTPS: the page left Live and reconnected every few seconds. A
// writer on a response sets the deadline for each write and lifts it
// after, so an idle stream has none.
func TestResponseWriterLiftsItsDeadlineAfterEachWrite(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	clock := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder(), deadlines: deadlines{now: now}}
	w, err := newWriter(rec, timeout, now)
	require.NoError(t, err)
	assert.True(t, rec.deadline.IsZero(), "idle after the headers: no deadline")
	require.NoError(t, w.Event(Message{Event: "card", Data: "x"}))
	assert.True(t, rec.deadline.IsZero(), "idle after an event: no deadline")
	clock = clock.Add(time.Minute)
	require.NoError(t, w.Frame([]byte("data: y\n\n")))
	assert.True(t, rec.deadline.IsZero(), "idle after a frame: no deadline")
	require.NoError(t, w.Ping())
	assert.True(t, rec.deadline.IsZero(), "idle after a ping: no deadline")
	require.Len(t, rec.left, 3)
	for i, l := range rec.left {
		assert.Equal(t, timeout, l, "write %d under the whole timeout", i)
	}
}

// TestConnWriter: on a connection taken over from net/http the writer
// writes the response head itself (the header given, the event stream's
// fields, Connection: close, neither chunked nor sized) and each event
// as it comes; an HTTP client reads it as any event stream, to the
// connection's end.
func TestConnWriter(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	t.Cleanup(func() { client.Close() })
	hdr := http.Header{"X-Content-Type-Options": {"nosniff"}, "Transfer-Encoding": {"identity"}, "Content-Length": {"3"}}
	done := make(chan error, 1)
	go func() {
		w, err := NewConnWriter(server, hdr, time.Second)
		if err == nil {
			err = w.Event(Message{ID: "1", Event: "card", Data: "a\nb"})
		}
		if err == nil {
			err = w.Ping()
		}
		server.Close()
		done <- err
	}()
	resp, err := http.ReadResponse(bufio.NewReader(client), &http.Request{Method: http.MethodGet})
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "HTTP/1.1", resp.Proto)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "the header given is written")
	assert.True(t, resp.Close, "Connection: close")
	assert.Empty(t, resp.TransferEncoding, "not chunked")
	assert.Equal(t, int64(-1), resp.ContentLength, "read to the connection's end")
	assert.Equal(t, "3", hdr.Get("Content-Length"), "the caller's header is not changed")
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "id: 1\nevent: card\ndata: a\ndata: b\n\n: ping\n", string(got))
	require.NoError(t, <-done)
}
