package sse

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Writer frames events and comments onto an HTTP response. Each write is
// one Write call under a write deadline, then a flush. It is safe for
// concurrent use, so a heartbeat loop may call Ping beside the event loop.
//
// Write deadlines are real network deadlines and read the wall clock.
// On a connection taken over from net/http (NewConnWriter) one deadline
// serves many writes: it is set to the write timeout from now and
// refreshed only when less than half of it is left, so a write is cut
// after between half the timeout and the whole of it (setting and
// clearing a deadline around each write was a tenth of serve's CPU with
// 2000 browsers); a deadline that passes while the stream is idle does
// nothing there. On a response (NewWriter) the deadline is set before
// each write and lifted after it: over HTTP/2 a response's write deadline
// resets the stream when it passes, write pending or not, so a deadline
// left set would end every idle stream one timeout after its last write.
// Done lifts any deadline once the stream is over.
type Writer struct {
	mu      sync.Mutex
	w       sink
	timeout time.Duration
	now     func() time.Time
	until   time.Time // the deadline set, zero when none
	lift    bool      // lift the deadline after each write (a response, not a connection)
	buf     []byte
}

// NewWriter starts an event stream on w: it sets Content-Type
// text/event-stream, Cache-Control no-store and X-Accel-Buffering no (so a
// proxy does not buffer the stream), writes status 200 and flushes.
// writeTimeout bounds every write (0 = no deadline). It returns
// ErrNotFlushable, before writing anything, when w cannot flush.
func NewWriter(w http.ResponseWriter, writeTimeout time.Duration) (*Writer, error) {
	return newWriter(w, writeTimeout, time.Now)
}

func newWriter(w http.ResponseWriter, writeTimeout time.Duration, now func() time.Time) (*Writer, error) {
	if !canFlush(w) {
		return nil, ErrNotFlushable
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
	sw := &Writer{w: responseSink{w, http.NewResponseController(w)}, timeout: writeTimeout, now: now, lift: true}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.setDeadline()
	defer sw.written()
	w.WriteHeader(http.StatusOK)
	if err := sw.w.Flush(); err != nil {
		return nil, fmt.Errorf("sse: flush headers: %w", err)
	}
	return sw, nil
}

// NewConnWriter starts an event stream on c, an HTTP/1.1 connection
// taken over from net/http (http.ResponseController.Hijack): it writes
// the response head itself, status 200 with header and the fields
// NewWriter sets, and Connection: close (the stream ends with the
// connection; no chunking), then writes each event to c as it comes,
// with no buffer of its own. A long-lived stream so holds neither
// net/http's connection buffers nor its goroutine. writeTimeout bounds
// every write as NewWriter's does.
func NewConnWriter(c net.Conn, header http.Header, writeTimeout time.Duration) (*Writer, error) {
	return newConnWriter(c, header, writeTimeout, time.Now)
}

func newConnWriter(c net.Conn, header http.Header, writeTimeout time.Duration, now func() time.Time) (*Writer, error) {
	h := header.Clone()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "close")
	for _, k := range []string{"Content-Length", "Transfer-Encoding"} {
		h.Del(k)
	}
	sw := &Writer{w: connSink{c}, timeout: writeTimeout, now: now}
	var head []byte
	head = append(head, "HTTP/1.1 200 OK\r\n"...)
	var b strings.Builder
	if err := h.Write(&b); err != nil {
		return nil, fmt.Errorf("sse: response head: %w", err)
	}
	head = append(head, b.String()...)
	head = append(head, "\r\n"...)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if err := sw.write(head); err != nil {
		return nil, fmt.Errorf("sse: response head: %w", err)
	}
	return sw, nil
}

// sink is where a Writer's bytes go: a response, or a connection taken
// over from net/http.
type sink interface {
	Write(b []byte) (int, error)
	Flush() error
	SetWriteDeadline(t time.Time) error
}

// responseSink writes to a response, flushing through its controller.
type responseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s responseSink) Write(b []byte) (int, error)        { return s.w.Write(b) }
func (s responseSink) Flush() error                       { return s.rc.Flush() }
func (s responseSink) SetWriteDeadline(t time.Time) error { return s.rc.SetWriteDeadline(t) }

// connSink writes to a connection, unbuffered (Flush has nothing to do).
type connSink struct{ net.Conn }

func (connSink) Flush() error { return nil }

// canFlush reports whether w, or a writer it wraps (Unwrap, as
// http.ResponseController follows), implements http.Flusher.
func canFlush(w http.ResponseWriter) bool {
	for w != nil {
		if _, ok := w.(http.Flusher); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}

// Event writes one message: id, event and retry fields when set, one data
// line per line of Data (at least one, so an empty Data still dispatches),
// then the blank line that dispatches it. An id or event name holding CR or
// LF, or an id holding NUL, is refused with ErrInvalidField and nothing is
// written: a producer-controlled string can never forge fields.
func (sw *Writer) Event(m Message) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	b, err := AppendFrame(sw.buf[:0], m)
	if err != nil {
		return err
	}
	return sw.write(b)
}

// Frame writes b, one or more messages as AppendFrame framed them, in one
// write: a producer sending one message to many streams frames it once.
func (sw *Writer) Frame(b []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.buf = sw.buf[:0] // b is the producer's, shared: never this stream's buffer
	return sw.send(b)
}

// AppendFrame appends m framed as Event writes it to b; it refuses the
// fields Event refuses (ErrInvalidField) and then appends nothing.
func AppendFrame(b []byte, m Message) ([]byte, error) {
	if strings.ContainsAny(m.ID, "\r\n\x00") || strings.ContainsAny(m.Event, "\r\n") {
		return b, ErrInvalidField
	}
	if m.ID != "" {
		b = append(b, "id: "...)
		b = append(b, m.ID...)
		b = append(b, '\n')
	}
	if m.Event != "" {
		b = append(b, "event: "...)
		b = append(b, m.Event...)
		b = append(b, '\n')
	}
	if ms := m.Retry.Milliseconds(); ms > 0 {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, ms, 10)
		b = append(b, '\n')
	}
	b = appendLines(b, "data: ", m.Data)
	return append(b, '\n'), nil
}

// Comment writes text as comment lines (": text"), one per line of text, so
// a multi-line text cannot end the comment and start a field. A reader
// ignores comments; this package's Reader surfaces them.
func (sw *Writer) Comment(text string) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.write(appendLines(sw.buf[:0], ": ", text))
}

// Ping writes the heartbeat comment ": ping". Callers run their own ticker
// loop (and stop it with their context).
func (sw *Writer) Ping() error { return sw.Comment("ping") }

// appendLines appends prefix+line+LF for every line of s, lines split at
// LF, CR and CRLF; s == "" is one empty line.
func appendLines(b []byte, prefix, s string) []byte {
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			b = append(b, prefix...)
			b = append(b, s...)
			return append(b, '\n')
		}
		b = append(b, prefix...)
		b = append(b, s[:i]...)
		b = append(b, '\n')
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

// write sends b in one Write under the deadline and flushes. sw.mu is held.
func (sw *Writer) write(b []byte) error {
	sw.buf = b[:0]
	if cap(sw.buf) > 64<<10 {
		sw.buf = nil // do not keep a large event's buffer for the stream's life
	}
	return sw.send(b)
}

// send writes b in one Write under the deadline and flushes. sw.mu is
// held.
func (sw *Writer) send(b []byte) error {
	sw.setDeadline()
	defer sw.written()
	if _, err := sw.w.Write(b); err != nil {
		return fmt.Errorf("sse: write: %w", err)
	}
	if err := sw.w.Flush(); err != nil {
		return fmt.Errorf("sse: flush: %w", err)
	}
	return nil
}

// setDeadline makes sure the next write has at least half the timeout:
// it sets the deadline to the timeout from now when there is none or
// less than half of it is left. sw.mu is held.
func (sw *Writer) setDeadline() {
	if sw.timeout <= 0 {
		return
	}
	now := sw.now()
	if !sw.until.IsZero() && sw.until.Sub(now) >= sw.timeout/2 {
		return
	}
	sw.until = now.Add(sw.timeout)
	sw.deadline(sw.until)
}

// written lifts a response's deadline after its write (see Writer).
// sw.mu is held.
func (sw *Writer) written() {
	if sw.lift && !sw.until.IsZero() {
		sw.until = time.Time{}
		sw.deadline(time.Time{})
	}
}

// Done lifts the write deadline once the stream's own writes are over, so
// an idle stream's connection is not left with a passed deadline for the
// server's final writes (a chunked response's end). Call it when the
// stream ends normally; a later write sets a deadline again.
func (sw *Writer) Done() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.timeout > 0 && !sw.until.IsZero() {
		sw.until = time.Time{}
		sw.deadline(time.Time{})
	}
}

// deadline sets the write deadline. Its error is ignored on purpose: a
// writer without deadline support (http.ErrNotSupported, such as
// httptest.ResponseRecorder) is written without one, and on a broken
// connection the Write that follows reports the failure.
func (sw *Writer) deadline(t time.Time) {
	_ = sw.w.SetWriteDeadline(t)
}
