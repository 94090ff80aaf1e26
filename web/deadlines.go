package web

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// Deadlines on the connection, so a client that sends or reads slowly
// holds it only for a bounded time. They run on the real clock
// (time.Now), never Config.Now: the kernel's timers do not read a test's
// fake clock.

// responseDeadline gives every response a write deadline of
// Config.ResponseTimeout from the moment the request reaches the handler,
// so a client that stops reading cannot hold its connection. It wraps the
// whole UI (the base-path redirect and not-found included), because on a
// kept-alive connection a deadline set for one request would otherwise
// still be in force, long expired, for the next. The push stream, which
// lives for hours, opts out (optOutOfResponseDeadline) and bounds each of
// its writes instead. A write cut by the deadline counts as a slow client.
func (s *server) responseDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := &deadlineWriter{ResponseWriter: w, m: s.metrics, counted: true}
		// ErrNotSupported (a recorder in a test) leaves no deadline.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.ResponseTimeout))
		next.ServeHTTP(dw, r)
	})
}

// deadlineWriter counts a response write cut by its deadline as a slow
// client (once per response). Unwrap lets http.ResponseController and the
// push stream reach the connection's writer.
type deadlineWriter struct {
	http.ResponseWriter
	m       *Metrics
	counted bool // the deadline is ours: a cut write is a slow client
	cut     bool
}

func (dw *deadlineWriter) Write(b []byte) (int, error) {
	n, err := dw.ResponseWriter.Write(b)
	if err != nil && dw.counted && !dw.cut && errors.Is(err, os.ErrDeadlineExceeded) {
		dw.cut = true
		dw.m.SlowClients.Add(1)
	}
	return n, err
}

func (dw *deadlineWriter) Unwrap() http.ResponseWriter { return dw.ResponseWriter }

// optOutOfResponseDeadline lifts the response write deadline for a
// long-lived response (the push stream), which sets its own per write.
func optOutOfResponseDeadline(w http.ResponseWriter) {
	for u := w; u != nil; {
		if dw, ok := u.(*deadlineWriter); ok {
			dw.counted = false
		}
		uw, ok := u.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		u = uw.Unwrap()
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}

// readBody reads a request's whole body, at most Config.MaxBody bytes,
// within Config.BodyTimeout, before any route runs: it wraps the whole UI
// (NewServer), so a body trickled to any path (/healthz, /static/*, an
// unknown path, a PUT, a GET with a body) is bounded like an answer's. A
// client that trickles its body is cut at the deadline: 408 (written under
// a fresh write deadline of Config.WriteTimeout, since the response's own
// may have run out with the body's), the connection closed, counted as a
// slow client. A body over the limit reaches the handler as the
// *http.MaxBytesError its reading returns, so the handler can say what
// was too large. A request without a body passes untouched.
func (s *server) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		body, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.metrics.SlowClients.Add(1)
			s.cfg.Logger.Debug("web: cut a client that sent its body too slowly", "remote", r.RemoteAddr, "path", r.URL.Path, "after", s.cfg.BodyTimeout)
			_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			w.Header().Set("Connection", "close")
			http.Error(w, "The request took too long to arrive. Send it again.", http.StatusRequestTimeout)
			return
		case errors.As(err, &tooBig):
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		case err != nil:
			http.Error(w, "The request could not be read. Send it again.", http.StatusBadRequest)
			return
		default:
			// The body is in: lift the deadline, or the server's wait for
			// the connection's next request would fire it under a running
			// handler and cancel its context. The next request's header
			// timeout applies from there. (Kept on every other way out:
			// the server discards an unread rest of the body under it.)
			_ = rc.SetReadDeadline(time.Time{})
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// errReader returns err on every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
