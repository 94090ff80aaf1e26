package relay

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// bodyDeadline bounds the reading of every request's body by
// Config.ReadTimeout, on every route: POST /events reads its own (and
// answers 408 when cut, see handleIngest); any other route takes no body,
// so one sent to it (a POST to /healthz, a GET with a body, an unknown
// path) is read and dropped here first, at most Config.MaxBody bytes. A
// client that trickles it is cut at the deadline with 408 and its
// connection closed, instead of holding the connection for as long as it
// likes (the server discards an unread body without a deadline). The
// kernel's timers run on the real clock, never Config.Now.
func (r *Relay) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil || req.Body == http.NoBody || (req.Method == http.MethodPost && req.URL.Path == "/events") {
			next.ServeHTTP(w, req)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(r.cfg.ReadTimeout))
		_, err := io.Copy(io.Discard, http.MaxBytesReader(w, req.Body, r.cfg.MaxBody))
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			writeTimedOut(w, r.cfg.WriteTimeout)
			return
		case errors.As(err, &tooBig):
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "payload-too-large", Detail: "this route takes no body"})
			return
		case err != nil:
			writeJSON(w, http.StatusBadRequest, errorBody{Error: "unreadable-body", Detail: "the body could not be read"})
			return
		}
		// The body is in: lift the deadline, or it would fire under a
		// long-lived handler (a stream) and cancel its context.
		_ = rc.SetReadDeadline(time.Time{})
		req.Body = http.NoBody
		next.ServeHTTP(w, req)
	})
}

// writeTimedOut answers a request whose body did not arrive in time:
// 408, the connection closed. It is written under a fresh write deadline
// (writeTimeout from now), so a deadline that ran out with the body's
// does not swallow it.
func writeTimedOut(w http.ResponseWriter, writeTimeout time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusRequestTimeout, errorBody{Error: "request-timeout", Detail: "the body took too long to arrive; send it again"})
}
