package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/backoff"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Surfaces: the human surfaces a question is delivered to, attention.routed's to.
const (
	SurfaceWebPush = "webpush"
	SurfaceWebhook = "webhook"
)

// Via is attention.routed's via: this UI.
const Via = inbox.SurfaceVia

// Wire emits attention.routed on the relay for each delivery of a
// question to a human surface (AEP-0002 §7.3): its own source and agent
// (a foreign emitter), the request's session, subject and cause the
// request's id, no seq, capture metadata, data {to, via}. It posts to
// the relay's HTTP emit endpoint (AEP-0003 §3.2), which never makes this
// UI a session's owner; a failed post is tried again with the same id
// (the relay dedupes on source and id). Posts run on their own: a relay
// away holds up no delivery. At most 64 run at once; the next ones wait
// their turn, and past 1024 waiting more are dropped (logged).
type Wire struct {
	url, token    string
	source, agent string
	client        *http.Client
	log           *slog.Logger
	now           func() time.Time
	attempts      int
	policy        backoff.Policy
	ctx           context.Context
	wg            sync.WaitGroup
	sem           chan struct{}
	queued        atomic.Int64 // posts running or waiting for their turn
}

// wireQueued bounds the attention.routed posts running or waiting.
const wireQueued = 1024

// WireConfig configures a Wire.
type WireConfig struct {
	// RelayURL is the relay's base URL (http://127.0.0.1:8787); Token its
	// bearer token.
	RelayURL, Token string
	// Source and Agent are this UI's identity on the wire.
	Source, Agent string
	Now           func() time.Time
	Logger        *slog.Logger
	// Attempts (5) and Backoff (1 s doubling to 30 s) retry a post.
	Attempts int
	Backoff  backoff.Policy
}

// NewWire returns the emitter; its posts run until ctx ends.
func NewWire(ctx context.Context, cfg WireConfig) *Wire {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 5
	}
	if cfg.Backoff.Min <= 0 {
		cfg.Backoff = backoff.Policy{Min: time.Second, Max: 30 * time.Second}
	}
	return &Wire{url: strings.TrimSuffix(cfg.RelayURL, "/") + "/events", token: cfg.Token, source: cfg.Source, agent: cfg.Agent,
		client: &http.Client{Timeout: 10 * time.Second}, log: cfg.Logger, now: cfg.Now, attempts: cfg.Attempts, policy: cfg.Backoff,
		ctx: ctx, sem: make(chan struct{}, 64)}
}

// Event builds the attention.routed event of card c's delivery to
// surface to.
func (w *Wire) Event(c inbox.Card, to string) (*aep.Event, error) {
	return aep.Build(aep.Envelope{
		ID: ulid.Make().String(), Type: "attention.routed", Subject: c.Key.RequestID, Cause: c.EventID,
		Time: w.now().UTC().Format(time.RFC3339Nano), Source: w.source, Agent: w.agent, Session: c.Key.Session,
		Capture: aep.CaptureMetadata.String(), Data: aep.Routed{To: to, Via: Via},
	})
}

// Routed emits attention.routed for card c's delivery to surface to, in
// the background.
func (w *Wire) Routed(c inbox.Card, to string) {
	e, err := w.Event(c, to)
	if err != nil {
		w.log.Error("routing: attention.routed could not be built", "err", err)
		return
	}
	if w.queued.Add(1) > wireQueued {
		w.queued.Add(-1)
		w.log.Warn("routing: too many attention.routed posts waiting; one is dropped", "card", string(c.ID))
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.queued.Add(-1)
		select {
		case w.sem <- struct{}{}:
			w.emit(e)
			<-w.sem
		case <-w.ctx.Done():
		}
	}()
}

// Wait waits for the posts running.
func (w *Wire) Wait() { w.wg.Wait() }

func (w *Wire) emit(e *aep.Event) {
	for n := range w.attempts {
		if n > 0 {
			t := time.NewTimer(w.policy.Delay(n - 1))
			select {
			case <-w.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		err := w.post(e.Raw())
		if err == nil {
			return
		}
		w.log.Warn("routing: attention.routed not taken by the relay", "try", n+1, "of", w.attempts, "err", err)
		if errors.Is(err, errRefused) || w.ctx.Err() != nil {
			return
		}
	}
}

var errRefused = errors.New("refused")

func (w *Wire) post(body []byte) error {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("AEP-Version", aep.Version)
	if w.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.token)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	detail, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode/100 == 4:
		return fmt.Errorf("%w: status %d: %s", errRefused, resp.StatusCode, bytes.TrimSpace(detail))
	}
	return fmt.Errorf("status %d", resp.StatusCode)
}
