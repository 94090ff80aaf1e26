package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/backoff"
)

// Webhooks posts messages to the teams' chat channels: a Slack- and
// Mattermost-compatible incoming webhook, {"text": ...}. Each post runs
// on its own, retried with backoff, so a slow or failing channel holds
// up nothing else; at most MaxInFlight run at once, the next ones wait
// their turn, and past MaxQueued more are dropped (logged). A webhook is
// logged by its origin only: its path holds its secret.
type Webhooks struct {
	client   *http.Client
	log      *slog.Logger
	attempts int
	policy   backoff.Policy

	ctx       context.Context
	wg        sync.WaitGroup
	sem       chan struct{}
	queued    atomic.Int64 // posts running or waiting for their turn
	maxQueued int64
}

// WebhookConfig configures Webhooks. Zero values are the defaults.
type WebhookConfig struct {
	// Timeout bounds one post, 10 s by default.
	Timeout time.Duration
	// Attempts is how many times a post is tried, 5 by default.
	Attempts int
	// Backoff is the wait between tries: from 1 s doubling to 1 min by
	// default.
	Backoff backoff.Policy
	// MaxInFlight bounds the posts running at once, 64 by default.
	MaxInFlight int
	// MaxQueued bounds the posts running or waiting for their turn,
	// 1024 by default (at least MaxInFlight): a chat service that hangs
	// through a burst of questions delays their messages, it does not
	// lose them.
	MaxQueued int
	Logger    *slog.Logger
}

// NewWebhooks returns the sender; its posts run until ctx ends (Wait
// waits for them).
func NewWebhooks(ctx context.Context, cfg WebhookConfig) *Webhooks {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 5
	}
	if cfg.Backoff.Min <= 0 {
		cfg.Backoff = backoff.Policy{Min: time.Second, Max: time.Minute}
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = 1024
	}
	cfg.MaxQueued = max(cfg.MaxQueued, cfg.MaxInFlight)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Webhooks{client: &http.Client{Timeout: cfg.Timeout}, log: cfg.Logger, attempts: cfg.Attempts, policy: cfg.Backoff,
		ctx: ctx, sem: make(chan struct{}, cfg.MaxInFlight), maxQueued: int64(cfg.MaxQueued)}
}

// Origin is a webhook URL as it may be logged: its scheme and host.
func Origin(hook string) string {
	u, err := url.Parse(hook)
	if err != nil || u.Host == "" {
		return "(a webhook that does not parse)"
	}
	return u.Scheme + "://" + u.Host
}

// Post posts text to hook in the background and returns at once; done,
// when set, is told whether it was delivered. A post past MaxInFlight
// waits for its turn. False when MaxQueued posts are running or waiting
// already (the post is dropped and logged).
func (w *Webhooks) Post(team, hook, text string, done func(delivered bool)) bool {
	if w.queued.Add(1) > w.maxQueued {
		w.queued.Add(-1)
		w.log.Warn("routing: too many webhook posts waiting; one is dropped", "team", team, "webhook", Origin(hook))
		return false
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.queued.Add(-1)
		ok := false
		select {
		case w.sem <- struct{}{}:
			ok = w.post(team, hook, text)
			<-w.sem
		case <-w.ctx.Done():
		}
		if done != nil {
			done(ok)
		}
	}()
	return true
}

// Wait waits for the posts running to end (their context ended, or they
// were delivered or gave up).
func (w *Webhooks) Wait() { w.wg.Wait() }

// post tries hook until it answers 2xx, a 4xx other than 408 and 429
// (which no retry changes), or the tries run out.
func (w *Webhooks) post(team, hook, text string) bool {
	body, _ := json.Marshal(struct {
		Text string `json:"text"`
	}{text})
	for n := range w.attempts {
		if n > 0 {
			t := time.NewTimer(w.policy.Delay(n - 1))
			select {
			case <-w.ctx.Done():
				t.Stop()
				return false
			case <-t.C:
			}
		}
		status, err := w.once1(hook, body)
		switch {
		case err == nil && status/100 == 2:
			w.log.Debug("routing: webhook delivered", "team", team, "webhook", Origin(hook))
			return true
		case err == nil && status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
			w.log.Error("routing: the webhook refused the post; not tried again", "team", team, "webhook", Origin(hook), "status", status)
			return false
		}
		why := fmt.Sprintf("status %d", status)
		if err != nil {
			why = err.Error()
		}
		w.log.Warn("routing: webhook post failed", "team", team, "webhook", Origin(hook), "try", n+1, "of", w.attempts, "why", why)
		if w.ctx.Err() != nil {
			return false
		}
	}
	w.log.Error("routing: webhook post given up", "team", team, "webhook", Origin(hook), "tries", w.attempts)
	return false
}

// once1 posts body to hook once. Its error never holds the URL (which
// net/http's errors quote).
func (w *Webhooks) once1(hook string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, hook, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("the webhook URL does not make a request")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return 0, fmt.Errorf("%s: %w", ue.Op, ue.Err)
		}
		return 0, errors.New("the post failed")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
