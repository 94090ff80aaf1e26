// Package feed is aepforms' upstream: an SSE client of any AEP 0.1 relay's
// GET /stream (AEP-0003 §3.3) that hands each event, once, to a Sink.
//
// # Resuming, and the sessions that began while away
//
// A from=[{session,epoch,seq}...] resume covers only the sessions it names;
// sessions it does not name are live only (AEP-0003 §3.3), and a session
// that began while the feed was away is one the feed cannot name. A request
// asked in such a session during an outage would never be shown. The spec
// offers no position for an unknown session, so the client asks every
// connection, first and reconnect alike, with from=all (AEP-0003 §5,
// replay-all: every held session from its earliest position, then live)
// and drops what it already applied by the (source, id) dedupe, which is
// exact as long as DedupeWindow and MaxSessions cover what the relay holds
// (their defaults match the reference relay's buffer and session cap). The
// cost is that each reconnect replays the relay's filtered history.
//
// Replay-all never sends ": replay-exhausted" (AEP-0003 §5, rule 2), so the
// client infers it: on a reconnect, every known session's first event on
// the new stream either sits at or before the last position seen (the relay
// still holds that position, and replays from before it) or after it (the
// relay no longer holds it: evicted, or restarted without its history, and
// events in between may be lost). The latter is reported as
// Sink.ReplayExhausted(session, that event's position), as a relay would
// for a from=[...] resume. A ": replay-exhausted" comment from the relay is
// reported as it comes.
//
// A relay that refuses from=all (400; the value is optional) is asked from
// then on with from=[...] positions of every known session (or with no from
// on a first connect: live only), and its replay-exhausted comments report
// gaps.
package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Sink receives what the feed reads. Its methods are called from Run's
// goroutine, one at a time, and should return quickly: the stream is not
// read while they run.
type Sink interface {
	// Apply receives each event once per (source, id).
	Apply(*aep.Event)
	// FeedState reports the connection: (true, nil) once a stream is open,
	// (false, err) when a connection fails or ends, before the wait to
	// retry. When Run's context ends there is no report.
	FeedState(connected bool, err error)
	// ReplayExhausted reports that events of session before earliest may be
	// missing: the relay no longer held the position the feed resumed from.
	ReplayExhausted(session string, earliest aep.Position)
}

// Sentinel errors; FeedState receives them wrapped with detail.
var (
	ErrUnauthorized   = errors.New("feed: unauthorized")
	ErrSilent         = errors.New("feed: relay silent")
	ErrStreamEnded    = errors.New("feed: stream ended")
	ErrStatus         = errors.New("feed: unexpected response status")
	ErrNotEventStream = errors.New("feed: response is not an event stream")
	ErrConfig         = errors.New("feed: bad config")
)

// errFromAllRefused is the 400 answer to from=all that switches the
// client to from=[...] positions.
var errFromAllRefused = errors.New("feed: relay refused from=all")

// Client reads one relay's stream. Create it with New; Run may be called
// again after it returns (each Run starts afresh, with from=all).
type Client struct {
	cfg        Config
	reconnects atomic.Int64
	wake       chan struct{} // Wake: skip the reconnect wait (buffer 1)
}

// Reconnects counts the streams opened after the first (for /metrics).
func (c *Client) Reconnects() int64 { return c.reconnects.Load() }

// New returns a Client for cfg with its defaults applied.
func New(cfg Config) *Client {
	return &Client{cfg: cfg.withDefaults(), wake: make(chan struct{}, 1)}
}

// Wake ends the current reconnect wait at once, so the next attempt
// starts now: the app calls it when another path (the respond path's
// WebSocket) has reached the relay again, so the feed does not sit out a
// backoff that grew during a long outage (up to BackoffMax, 30 s by
// default). It never blocks; a wake that comes while the stream is open
// is dropped when the stream next opens, so it never cuts a later
// outage's backoff short.
func (c *Client) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run connects, feeds sink, and reconnects with capped, jittered
// exponential backoff until ctx ends; then it returns nil, with every
// goroutine it started ended. It returns an error at once only for a bad
// Config (ErrConfig) or a nil sink.
func (c *Client) Run(ctx context.Context, sink Sink) error {
	if sink == nil {
		return fmt.Errorf("%w: nil sink", ErrConfig)
	}
	streamURL, err := c.streamURL()
	if err != nil {
		return err
	}
	if !json.Valid(c.cfg.Filter) {
		return fmt.Errorf("%w: filter is not JSON", ErrConfig)
	}
	hc := c.cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		hc = &http.Client{Transport: tr}
	}
	r := &run{
		cfg:     c.cfg,
		sink:    sink,
		http:    hc,
		url:     streamURL,
		tracker: newTracker(c.cfg.DedupeWindow, c.cfg.MaxSessions),
		fromAll: true,
		client:  c,
		log:     c.cfg.Logger.With("relay", (&url.URL{Scheme: streamURL.Scheme, Host: streamURL.Host, Path: streamURL.Path}).String()),
	}
	return r.loop(ctx)
}

// streamURL is {RelayURL}/stream.
func (c *Client) streamURL() (*url.URL, error) {
	u, err := url.Parse(c.cfg.RelayURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: relay URL must be http(s)://host[/path]", ErrConfig)
	}
	u = u.JoinPath("stream")
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// run is the state of one Run call, owned by its goroutine.
type run struct {
	cfg        Config
	sink       Sink
	http       *http.Client
	url        *url.URL
	tracker    *tracker
	fromAll    bool // false once the relay refused from=all
	everOpened bool // a stream has been open: later connects are resumes
	client     *Client
	log        *slog.Logger
}

// loop connects until ctx ends.
func (r *run) loop(ctx context.Context) error {
	attempt := 0
	for {
		lived, err := r.connect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errFromAllRefused) {
			r.fromAll = false
			r.log.Warn("feed: relay refused from=all; resuming by positions, sessions begun while away are live only", "err", err)
		}
		if lived >= r.cfg.BackoffMax {
			attempt = 0
		}
		wait := r.cfg.backoff(attempt)
		attempt++
		r.sink.FeedState(false, err)
		r.log.Warn("feed: disconnected; retrying", "err", err, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-r.client.wake:
			t.Stop()
			r.log.Info("feed: reconnect wait cut short: the relay is reachable again")
		}
	}
}

// cleanError drops the request URL from an http.Client error (its query
// may hold an access_token the operator put in RelayURL).
func cleanError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// excerpt is a short, quoted piece of a response body for an error.
func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200]
	}
	return fmt.Sprintf("%q", s)
}
