package relay

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/sse"
)

// streamRequest is a parsed GET /stream.
type streamRequest struct {
	filter  *aep.Filter
	ceiling aep.Capture
	from    resume
	live    bool
}

// parseStream reads filter, capture, from (or Last-Event-ID) and live. The
// error body says which parameter is wrong.
func (r *Relay) parseStream(q url.Values, h http.Header) (streamRequest, *errorBody) {
	sr := streamRequest{ceiling: aep.CaptureFull, live: true}
	if f := q.Get("filter"); f != "" {
		flt, err := aep.ParseFilter([]byte(f))
		if err != nil {
			return sr, &errorBody{Error: "invalid-filter", Detail: err.Error()}
		}
		sr.filter = flt
	}
	if c := q.Get("capture"); c != "" {
		ceiling, err := aep.ParseCapture(c)
		if err != nil {
			return sr, &errorBody{Error: "invalid-capture", Detail: err.Error()}
		}
		sr.ceiling = ceiling
	}
	switch q.Get("live") {
	case "", "1", "true":
	case "0", "false":
		sr.live = false
	default:
		return sr, &errorBody{Error: "invalid-live", Detail: "live must be 0 or 1"}
	}
	if q.Has("from") {
		f := q.Get("from")
		if f == "all" {
			sr.from = resume{all: true}
			return sr, nil
		}
		from, err := parseFrom([]byte(f), r.cfg.MaxFrom)
		if errors.Is(err, ErrFromLimit) {
			return sr, &errorBody{Error: "limit-exceeded", Detail: err.Error()}
		}
		if err != nil {
			return sr, &errorBody{Error: "invalid-from", Detail: err.Error()}
		}
		sr.from = from
		return sr, nil
	}
	if id := h.Get("Last-Event-ID"); id != "" {
		session, pos, err := aep.ParseSSEID(id)
		if err != nil {
			return sr, &errorBody{Error: "invalid-last-event-id", Detail: "Last-Event-ID must be {session}:{epoch}:{seq}"}
		}
		sr.from = resume{positions: []resumePos{{session: session, pos: pos}}}
	}
	return sr, nil
}

// handleStream serves GET /stream (AEP-0003 §3.3): the replay asked for,
// then (unless live=0) live events, a `: ping` every SSEPing, and `:
// shutting-down` when the relay drains. A slow reader is dropped (the
// stream ends) rather than ever holding up ingest or other subscribers.
func (r *Relay) handleStream(w http.ResponseWriter, req *http.Request) {
	sr, bad := r.parseStream(req.URL.Query(), req.Header)
	if bad != nil {
		writeJSON(w, http.StatusBadRequest, *bad)
		return
	}
	if !r.enter() {
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "shutting-down"})
		return
	}
	defer r.wg.Done()
	// Subscribe before the headers go out, so a client that has seen 200
	// misses nothing posted after it.
	sub := &subscriber{filter: sr.filter, ceiling: sr.ceiling, out: newOutboxWithin(r.cfg.Queue, r.cfg.QueueBytes)}
	if !sr.from.none() {
		r.catchUp(req.Context())
	}
	var rp *replay
	if sr.live {
		rp = r.attach(sub, sr.from)
		defer r.detach(sub)
	} else {
		rp = r.history(sub, sr.from)
	}
	sw, err := sse.NewWriter(w, r.cfg.WriteTimeout)
	if err != nil {
		r.log.Error("relay: start event stream", "err", err)
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: "internal"})
		return
	}
	s := &sseStream{r: r, sw: sw, sub: sub}
	if !sr.live {
		if !s.writeReplay(rp) {
			abort(w)
			return
		}
		sw.Done() // the chunked end is written under no stale deadline
		return
	}
	if !s.writeReplay(rp) || !s.loop(req) {
		abort(w)
		return
	}
	sw.Done()
}

// abort makes every later write to w fail at once, so the server closes a
// connection whose peer stopped reading instead of blocking on the
// response's final bytes.
func abort(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Unix(1, 0))
}

// sseStream writes one subscriber's deliveries to its event stream.
type sseStream struct {
	r   *Relay
	sw  *sse.Writer
	sub *subscriber
	buf []item
}

func (s *sseStream) writeReplay(rp *replay) bool {
	for _, m := range rp.marks {
		if s.sw.Comment(exhaustedComment(m)) != nil {
			return false
		}
	}
	for _, ev := range rp.events {
		out, err := downlevel(ev, s.sub.ceiling)
		if err != nil {
			s.r.log.Warn("relay: down-level for replay", "err", err)
			continue
		}
		if !s.write(out, string(out.Raw())) {
			return false
		}
	}
	return true
}

func exhaustedComment(m exhaustedMark) string {
	return "replay-exhausted " + m.session + " " + strconv.FormatInt(m.earliest.Epoch, 10) + ":" + strconv.FormatInt(m.earliest.Seq, 10)
}

// write sends one event; false when the stream is broken.
func (s *sseStream) write(ev *aep.Event, data string) bool {
	err := s.sw.Event(sse.Message{ID: sseID(ev), Event: ev.Type(), Data: data})
	if errors.Is(err, sse.ErrInvalidField) {
		s.r.log.Warn("relay: event type not writable as an SSE field; skipped")
		return true
	}
	return err == nil
}

// sseID is {session}:{epoch}:{seq} for a sequenced session event, "" for
// others and for a session name that cannot sit on an id line.
func sseID(ev *aep.Event) string {
	p, ok := ev.Position()
	if !ok || !ev.SessionScoped() || strings.ContainsAny(ev.Session(), "\r\n\x00") {
		return ""
	}
	return aep.FormatSSEID(ev.Session(), p)
}

// loop delivers live events until the client leaves (true), the relay
// drains (true, after `: shutting-down`), or the stream broke or
// overflowed (false).
func (s *sseStream) loop(req *http.Request) bool {
	ping := time.NewTicker(s.r.cfg.SSEPing)
	defer ping.Stop()
	for {
		select {
		case <-req.Context().Done():
			return true
		case <-s.r.closing:
			return s.drain() && s.sw.Comment("shutting-down") == nil
		case <-ping.C:
			if s.sw.Ping() != nil {
				return false
			}
		case <-s.sub.out.notify:
			if !s.drain() {
				return false
			}
		}
	}
}

// drain writes everything queued; false when the stream must end (a write
// failed, or the subscriber overflowed and must resume).
func (s *sseStream) drain() bool {
	var failed bool
	s.buf, failed = s.sub.out.take(s.buf)
	for i, it := range s.buf {
		s.buf[i] = item{}
		if it.kind != itemEvents {
			continue
		}
		for _, d := range it.batch.ds {
			if !s.sub.match(d.ev) {
				continue
			}
			ev, err := d.at(s.sub.ceiling)
			if err != nil {
				s.r.log.Warn("relay: down-level for delivery", "err", err)
				continue
			}
			if !s.write(ev, d.data(s.sub.ceiling, ev)) {
				return false
			}
		}
	}
	if failed {
		s.r.log.Warn("relay: SSE subscriber too slow; stream ended so it resumes", "queue", s.r.cfg.Queue)
		return false
	}
	return true
}
