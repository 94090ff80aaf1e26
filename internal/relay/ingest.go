package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Errors of event admission.
var (
	// ErrInvalidEvent marks an event that fails decoding or envelope validation.
	ErrInvalidEvent = errors.New("relay: invalid event")
	// ErrCommandOverHTTP marks a control command posted over HTTP: control
	// flows only on the WebSocket binding (AEP-0003 §3.5, AEP-0004 §4.1).
	ErrCommandOverHTTP = errors.New("relay: control commands flow only on the WebSocket binding")
)

// decodeEvent decodes and validates one event's bytes. The event keeps
// them compacted to one line, otherwise as received.
func decodeEvent(b []byte) (*aep.Event, error) {
	ev, err := aep.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if err := aep.ValidateEnvelope(ev); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	return ev, nil
}

// versionOK reports whether an AEP-Version header names 0.1.
func versionOK(v string) bool {
	v = strings.TrimSpace(v)
	return v == aep.Version || v == aep.Version+".0"
}

type ingestResult struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// handleIngest serves POST /events: one event (application/json) or an
// NDJSON batch (application/x-ndjson), all-or-nothing: a batch with a bad
// line is refused whole, naming the first failing line.
func (r *Relay) handleIngest(w http.ResponseWriter, req *http.Request) {
	if !versionOK(req.Header.Get("AEP-Version")) {
		writeJSON(w, http.StatusUpgradeRequired, errorBody{Error: "version-unsupported",
			Detail: "send the header AEP-Version: 0.1", Versions: []string{aep.Version}})
		return
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	var batch bool
	switch mt {
	case "application/json":
	case "application/x-ndjson", "application/ndjson":
		batch = true
	default:
		writeJSON(w, http.StatusUnsupportedMediaType, errorBody{Error: "unsupported-media-type",
			Detail: "Content-Type must be application/json (one event) or application/x-ndjson (a batch)"})
		return
	}
	tooBig := errorBody{Error: "payload-too-large", Detail: fmt.Sprintf("the body limit (AEP_MAX_BODY) is %d bytes", r.cfg.MaxBody)}
	if req.ContentLength > r.cfg.MaxBody {
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusRequestEntityTooLarge, tooBig)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(r.cfg.ReadTimeout))
	size := req.ContentLength
	if size < 0 || size > r.cfg.MaxBody {
		size = 512
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, r.cfg.MaxBody))
	body := buf.Bytes()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, tooBig)
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			writeTimedOut(w, r.cfg.WriteTimeout)
			return
		}
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "unreadable-body", Detail: "the body could not be read"})
		return
	}
	var evs []*aep.Event
	if batch {
		var refusal *lineRefusal
		evs, refusal = r.decodeBatch(body)
		if refusal != nil {
			writeJSON(w, refusal.status, refusal.body)
			return
		}
	} else {
		ev, err := decodeEvent(body)
		if err == nil && aep.IsCommand(ev.Type()) {
			err = ErrCommandOverHTTP
		}
		if err != nil {
			status, body := refusalFor(err)
			writeJSON(w, status, body)
			return
		}
		evs = []*aep.Event{ev}
	}
	ctx, cancel := context.WithTimeout(req.Context(), r.cfg.NATS.Timeout)
	defer cancel()
	dups, err := r.ingest(ctx, evs, nil)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "unavailable", Detail: err.Error() + "; nothing in this request was acknowledged: send it again"})
		return
	}
	writeJSON(w, http.StatusAccepted, ingestResult{Accepted: len(evs), Duplicates: dups})
}

// lineRefusal refuses a whole batch because of one line.
type lineRefusal struct {
	status int
	body   errorBody
}

func refusalFor(err error) (int, errorBody) {
	if errors.Is(err, ErrCommandOverHTTP) {
		return http.StatusForbidden, errorBody{Error: "forbidden", Detail: err.Error()}
	}
	return http.StatusBadRequest, errorBody{Error: "invalid-event", Detail: err.Error()}
}

// eachLine calls f with every line of body (without its \n) and its
// 0-based index until f returns false.
func eachLine(body []byte, f func(i int, line []byte) bool) {
	for i := 0; len(body) > 0; i++ {
		line := body
		if j := bytes.IndexByte(body, '\n'); j >= 0 {
			line, body = body[:j], body[j+1:]
		} else {
			body = nil
		}
		if !f(i, line) {
			return
		}
	}
}

func blank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// decodeBatch splits an NDJSON body into events. Blank lines are skipped
// (they still count for line numbers); a trailing \r is dropped.
func (r *Relay) decodeBatch(body []byte) ([]*aep.Event, *lineRefusal) {
	n := 0
	eachLine(body, func(_ int, line []byte) bool {
		if !blank(line) {
			n++
		}
		return n <= r.cfg.MaxBatch
	})
	if n > r.cfg.MaxBatch {
		return nil, &lineRefusal{http.StatusRequestEntityTooLarge, errorBody{Error: "too-many-events",
			Detail: fmt.Sprintf("more than %d events; the batch limit (AEP_MAX_BATCH) is %d", r.cfg.MaxBatch, r.cfg.MaxBatch)}}
	}
	if n == 0 {
		return nil, &lineRefusal{http.StatusBadRequest, errorBody{Error: "invalid-event", Detail: "the batch holds no event"}}
	}
	evs := make([]*aep.Event, 0, n)
	var refusal *lineRefusal
	eachLine(body, func(i int, line []byte) bool {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if blank(line) {
			return true
		}
		ev, err := decodeEvent(line)
		if err == nil && aep.IsCommand(ev.Type()) {
			err = ErrCommandOverHTTP
		}
		if err != nil {
			status, b := refusalFor(err)
			idx := i
			b.Index, b.Line = &idx, i+1
			b.Detail = fmt.Sprintf("line %d: %s; nothing in this batch was ingested", i+1, b.Detail)
			refusal = &lineRefusal{status, b}
			return false
		}
		evs = append(evs, ev)
		return true
	})
	if refusal != nil {
		return nil, refusal
	}
	return evs, nil
}
