package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/sse"
)

// connect makes one connection and reads it until it fails, ends or ctx
// ends. It returns how long the stream was open (0 if it never opened)
// and why it ended.
func (r *run) connect(ctx context.Context) (time.Duration, error) {
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var silent atomic.Bool
	watchdog := time.AfterFunc(r.cfg.SilenceTimeout, func() {
		silent.Store(true)
		cancel()
	})
	defer watchdog.Stop()
	fail := func(err error) error {
		if silent.Load() {
			return fmt.Errorf("%w: no byte for %v", ErrSilent, r.cfg.SilenceTimeout)
		}
		return err
	}

	req, err := r.request(connCtx)
	if err != nil {
		return 0, err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, fail(fmt.Errorf("feed: connect: %w", cleanError(err)))
	}
	defer resp.Body.Close()
	if err := r.checkResponse(resp); err != nil {
		return 0, fail(err)
	}

	opened := r.cfg.Now()
	if r.everOpened && r.fromAll {
		r.tracker.awaitReplay()
	}
	if r.everOpened {
		r.client.reconnects.Add(1)
	}
	r.everOpened = true
	// A wake meant for this outage must not cut the next one's wait short.
	select {
	case <-r.client.wake:
	default:
	}
	r.sink.FeedState(true, nil)
	r.log.Info("feed: connected")
	lived := func() time.Duration { return r.cfg.Now().Sub(opened) }

	rd := sse.NewReader(&activityReader{r: resp.Body, timer: watchdog, d: r.cfg.SilenceTimeout}, r.cfg.MaxEventBytes)
	for {
		it, err := rd.Next()
		switch {
		case errors.Is(err, sse.ErrEventTooLarge):
			r.log.Warn("feed: skipped an event over the size limit", "err", err, "max_bytes", r.cfg.MaxEventBytes)
			continue
		case errors.Is(err, io.EOF):
			return lived(), fail(ErrStreamEnded)
		case err != nil:
			return lived(), fail(fmt.Errorf("feed: read: %w", err))
		case it.IsComment:
			r.comment(it.Comment)
		default:
			r.message(it.Message)
		}
	}
}

// request builds GET {relay}/stream?filter=...&from=... with the token in
// the Authorization header.
func (r *run) request(ctx context.Context) (*http.Request, error) {
	q := r.url.Query()
	q.Set("filter", string(r.cfg.Filter))
	q.Del("from")
	switch {
	case r.fromAll:
		q.Set("from", "all")
	default:
		if ps := r.tracker.positions(); len(ps) > 0 {
			b, err := json.Marshal(ps)
			if err != nil {
				return nil, fmt.Errorf("feed: encode from: %w", err)
			}
			q.Set("from", string(b))
		}
	}
	u := *r.url
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("feed: request: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-store")
	if r.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	return req, nil
}

// checkResponse accepts a 200 text/event-stream and names anything else.
func (r *run) checkResponse(resp *http.Response) error {
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: relay answered %d; check the relay token", ErrUnauthorized, resp.StatusCode)
	case http.StatusBadRequest:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if r.fromAll {
			return fmt.Errorf("%w: %s", errFromAllRefused, excerpt(body))
		}
		return fmt.Errorf("%w: %d %s", ErrStatus, resp.StatusCode, excerpt(body))
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%w: %d %s", ErrStatus, resp.StatusCode, excerpt(body))
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "text/event-stream" {
		return fmt.Errorf("%w: Content-Type %q", ErrNotEventStream, resp.Header.Get("Content-Type"))
	}
	return nil
}

// message decodes one SSE message and applies its event unless seen.
// A malformed event is logged and skipped.
func (r *run) message(m sse.Message) {
	e, err := aep.Decode([]byte(m.Data))
	if err != nil {
		r.log.Warn("feed: skipped a malformed event", "err", err, "sse_id", m.ID)
		return
	}
	if e.ID() == "" || e.Source() == "" {
		r.log.Warn("feed: skipped an event without id or source", "type", e.Type(), "sse_id", m.ID)
		return
	}
	s := r.tracker.session(e.SessionKey())
	if p, ok := e.Position(); ok {
		if s.awaiting {
			s.awaiting = false
			if s.awaitPos.Less(p) {
				r.log.Warn("feed: relay no longer holds the session's last position; events may be missing",
					"session", e.Session(), "last", aep.FormatSSEID(e.Session(), s.awaitPos), "earliest", aep.FormatSSEID(e.Session(), p))
				r.sink.ReplayExhausted(e.Session(), p)
			}
		}
		s.advance(p)
	}
	if m.ID != "" {
		// The id persists across messages (WHATWG), so it is taken only
		// when it names this event's session.
		if name, p, err := aep.ParseSSEID(m.ID); err == nil && name == e.Session() {
			s.advance(p)
		}
	}
	if !s.add(e.ID(), r.cfg.DedupeWindow) {
		if r.cfg.OnRedelivery != nil {
			r.cfg.OnRedelivery(e)
		}
		return
	}
	r.sink.Apply(e)
	if r.cfg.OnEvent != nil {
		r.cfg.OnEvent(e)
	}
}

// comment handles an SSE comment: replay-exhausted is reported, the rest
// (ping, shutting-down) only keeps the connection alive.
func (r *run) comment(text string) {
	rest, ok := strings.CutPrefix(text, "replay-exhausted ")
	if !ok {
		r.log.Debug("feed: comment", "text", text)
		return
	}
	session, pos, err := parseReplayExhausted(rest)
	if err != nil {
		r.log.Warn("feed: skipped a malformed replay-exhausted comment", "err", err)
		return
	}
	r.tracker.stopAwaiting(session)
	r.log.Warn("feed: replay exhausted; events may be missing", "session", session, "earliest", aep.FormatSSEID(session, pos))
	r.sink.ReplayExhausted(session, pos)
}

// parseReplayExhausted reads "{session} {epoch}:{seq}" from the right:
// session names may hold spaces and colons.
func parseReplayExhausted(s string) (string, aep.Position, error) {
	i := strings.LastIndexByte(s, ' ')
	if i <= 0 {
		return "", aep.Position{}, fmt.Errorf("feed: replay-exhausted %q: want {session} {epoch}:{seq}", s)
	}
	ep, sq, ok := strings.Cut(s[i+1:], ":")
	e, err1 := strconv.ParseInt(ep, 10, 64)
	n, err2 := strconv.ParseInt(sq, 10, 64)
	if !ok || err1 != nil || err2 != nil || e < 0 || n < 0 {
		return "", aep.Position{}, fmt.Errorf("feed: replay-exhausted %q: bad position", s)
	}
	return s[:i], aep.Position{Epoch: e, Seq: n}, nil
}

// activityReader restarts the silence watchdog on every byte read.
type activityReader struct {
	r     io.Reader
	timer *time.Timer
	d     time.Duration
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.timer.Reset(a.d)
	}
	return n, err
}
