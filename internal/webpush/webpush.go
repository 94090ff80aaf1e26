// Package webpush sends the operator's devices Web Push notifications
// (RFC 8030, encrypted per RFC 8291, signed with VAPID per RFC 8292)
// when a question arrives and none of their pages is in view, and
// replaces each when its card settles. The encryption and signing are
// github.com/SherClockHolmes/webpush-go's; this package decides what is
// pushed, to whom, when, and keeps its keys and subscriptions in the
// answer journal so every replica agrees on them.
package webpush

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	webpushgo "github.com/SherClockHolmes/webpush-go"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
)

// Store is what push keeps in the answer journal (both backends).
type Store interface {
	PushKeys(ctx context.Context, gen func() (store.PushKeys, error)) (store.PushKeys, error)
	PushSubscriptions(ctx context.Context) ([]store.PushSubscription, error)
	DeletePushSubscription(ctx context.Context, operator, endpoint string) (bool, error)
	PushFailed(ctx context.Context, endpoint, failure string, at time.Time) error
	ClaimPush(ctx context.Context, card, kind string, at time.Time) (bool, error)
	VisibleOperators(ctx context.Context, since time.Time) ([]string, error)
	PrunePushClaims(ctx context.Context, before time.Time) (int64, error)
}

// ClaimsKept is how long a card's push claims are kept: long after any
// card settles, so no replica pushes an old question again.
const ClaimsKept = store.PushClaimsKept

// ErrNoSubject and ErrBadSubject say why push is off.
var (
	ErrNoSubject  = errors.New("webpush: no --vapid-subject")
	ErrBadSubject = errors.New("webpush: --vapid-subject must be a mailto: or https: URI")
)

// CheckSubject accepts a VAPID subject push services take (RFC 8292
// §2.1): a mailto: address or an https: URL.
func CheckSubject(s string) error {
	if s == "" {
		return ErrNoSubject
	}
	u, err := url.Parse(s)
	if err != nil {
		return ErrBadSubject
	}
	switch {
	case u.Scheme == "mailto" && strings.Contains(u.Opaque, "@"):
	case u.Scheme == "https" && u.Host != "":
	default:
		return ErrBadSubject
	}
	return nil
}

// Config is push's settings. Zero values are the defaults.
type Config struct {
	// Subject is the VAPID subject (--vapid-subject).
	Subject string
	// AllowLoopback lets http: endpoints on loopback through (tests only:
	// AEPFORMS_PUSH_ALLOW_LOOPBACK=1).
	AllowLoopback bool
	// BasePath is the UI's base path; a notification opens {base}#card-{id}.
	BasePath string
	// HideText keeps the question's text off the notification (lock
	// screens): it says only what kind of request waits.
	HideText bool
	// Viewer is who this UI answers as: the verdict's input, whose
	// Tappable is false for a watch-only Viewer (no relay token), so a
	// notification offers no option to answer with.
	Viewer inbox.Viewer
	// Timeout bounds one push's request, 10 s by default.
	Timeout time.Duration
	// Coalesce is the least time between two pushes to one device, 10 s
	// by default; what arrives meanwhile goes out as one summary.
	Coalesce time.Duration
	// VisibleFor is how long a page's "visible" report counts, 2 min by
	// default (a visible page reports again every minute).
	VisibleFor time.Duration
	// TTL is how long a push service keeps a push with no deadline, 1 h
	// by default.
	TTL time.Duration
	// UrgentWithin marks a push Urgency: high when its deadline is this
	// close, 5 min by default.
	UrgentWithin time.Duration
	// Client sends the pushes; nil makes one that dials public addresses
	// only (loopback too with AllowLoopback).
	Client *http.Client
	// Now is the clock, time.Now by default.
	Now func() time.Time
	// Ruled, when set, reports whether a standing answer (a rule) is
	// answering the card: such a request is not announced.
	Ruled func(ctx context.Context, c inbox.Card) bool
	// Audience, when set, says who a question notifies: the operators
	// its returned func reports true for (the team a routes file sends
	// it to, or its assignee); a nil func is every operator, as is a nil
	// Audience.
	Audience func(c inbox.Card) func(operator string) bool
	// Delivered, when set, is told of each question handed to devices
	// (what emits attention.routed on the relay).
	Delivered func(c inbox.Card)
	// Logger receives push failures; nil discards.
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Coalesce <= 0 {
		c.Coalesce = 10 * time.Second
	}
	if c.VisibleFor <= 0 {
		c.VisibleFor = 2 * time.Minute
	}
	if c.TTL <= 0 {
		c.TTL = time.Hour
	}
	if c.UrgentWithin <= 0 {
		c.UrgentWithin = 5 * time.Minute
	}
	if c.BasePath == "" {
		c.BasePath = "/"
	}
	if c.Client == nil {
		c.Client = newClient(c.Timeout, c.AllowLoopback)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Counts are the pushes' outcomes, as /metrics reports them.
type Counts struct {
	Sent, Failed, Gone int64
}

// Pusher sends the pushes.
type Pusher struct {
	cfg   Config
	store Store

	keysOnce sync.Mutex
	keys     store.PushKeys

	sent, failed, gone atomic.Int64

	mu      sync.Mutex
	devices map[string]*device         // by endpoint
	shown   map[string]map[string]bool // card id -> endpoints its push went (or is going) to
	// decided are the open cards whose arrival was judged (pushed, or
	// not: someone was looking, no device, another replica's claim): a
	// question is pushed when it arrives, never on a later update.
	decided map[string]bool
	pruner  store.PushClaimPruner

	// live, once WatchSessions set it, reports whether a sign-in
	// session still counts.
	live atomic.Pointer[func(ctx context.Context, idHashes []string) (map[string]bool, error)]
}

// New returns a Pusher, or why push is off (CheckSubject's error).
func New(cfg Config, store Store) (*Pusher, error) {
	if err := CheckSubject(cfg.Subject); err != nil {
		return nil, err
	}
	cfg.defaults()
	return &Pusher{cfg: cfg, store: store, devices: map[string]*device{}, shown: map[string]map[string]bool{}, decided: map[string]bool{}}, nil
}

// GenerateKeys makes a new VAPID key pair.
func GenerateKeys() (store.PushKeys, error) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return store.PushKeys{}, err
	}
	return store.PushKeys{
		Private: base64.RawURLEncoding.EncodeToString(k.Bytes()),
		Public:  base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()),
	}, nil
}

// Keys returns the VAPID key pair, made and journaled on first use.
func (p *Pusher) Keys(ctx context.Context) (store.PushKeys, error) {
	p.keysOnce.Lock()
	defer p.keysOnce.Unlock()
	if p.keys.Public != "" {
		return p.keys, nil
	}
	k, err := p.store.PushKeys(ctx, func() (store.PushKeys, error) {
		k, err := GenerateKeys()
		k.Created = p.cfg.Now()
		return k, err
	})
	if err != nil {
		return store.PushKeys{}, err
	}
	p.keys = k
	return k, nil
}

// PublicKey is the applicationServerKey browsers subscribe with.
func (p *Pusher) PublicKey(ctx context.Context) (string, error) {
	k, err := p.Keys(ctx)
	return k.Public, err
}

// AllowLoopback reports whether loopback http: endpoints are accepted.
func (p *Pusher) AllowLoopback() bool { return p.cfg.AllowLoopback }

// Accept reports whether a push endpoint may be posted to (web.Notifier).
func (p *Pusher) Accept(endpoint string) error { return CheckEndpoint(endpoint, p.cfg.AllowLoopback) }

// PushCounts are the outcomes so far (web.Notifier).
func (p *Pusher) PushCounts() (sent, failed, gone int64) {
	c := p.Counts()
	return c.Sent, c.Failed, c.Gone
}

// Counts returns the outcomes so far.
func (p *Pusher) Counts() Counts {
	return Counts{Sent: p.sent.Load(), Failed: p.failed.Load(), Gone: p.gone.Load()}
}

// Message is a notification's payload, as the service worker reads it.
type Message struct {
	Tag   string `json:"tag"`
	Title string `json:"title"`
	Body  string `json:"body"`
	// URL is the page to open (under the base path).
	URL string `json:"url"`
	// Deadline is the request's expires_at (RFC 3339), when it has one.
	Deadline string `json:"deadline,omitempty"`
	// Renotify is true for a replacement the device should show again.
	Renotify bool `json:"renotify,omitempty"`
	// Closed is true when the card can no longer be answered.
	Closed bool `json:"closed,omitempty"`
	// Actions and Answer, on a device that allowed answering from
	// notifications, answer a permission request from the notification.
	Actions []Action `json:"actions,omitempty"`
	Answer  *Answer  `json:"answer,omitempty"`
}

// MaxPayload is the most a push's JSON may be: under 3 KB, so it stays
// within what the push services take (about 4 KB after encryption).
const MaxPayload = 3000

// Outcome is what became of one push.
type Outcome int

// Outcomes.
const (
	Sent Outcome = iota
	Failed
	Gone
)

// Send posts msg to one device now, with ttl and urgency, and counts
// and journals its outcome: a subscription the push service reports gone
// (404, 410) is deleted. The push service's response body is never read
// into anything shown.
func (p *Pusher) Send(ctx context.Context, sub store.PushSubscription, msg Message, ttl time.Duration, urgent bool) Outcome {
	out, failure := p.send(ctx, sub, msg, ttl, urgent)
	now := p.cfg.Now()
	switch out {
	case Sent:
		p.sent.Add(1)
		if sub.LastFailure != "" {
			_ = p.store.PushFailed(ctx, sub.Endpoint, "", now)
		}
	case Gone:
		p.gone.Add(1)
		if _, err := p.store.DeletePushSubscription(ctx, sub.Operator, sub.Endpoint); err != nil {
			p.cfg.Logger.Warn("push: removing a gone subscription", "endpoint", Origin(sub.Endpoint), "err", redactEndpoint(err, sub.Endpoint))
		}
		p.forget(sub.Endpoint)
	default:
		p.failed.Add(1)
		if err := p.store.PushFailed(ctx, sub.Endpoint, failure, now); err != nil {
			p.cfg.Logger.Warn("push: noting a failure", "endpoint", Origin(sub.Endpoint), "err", redactEndpoint(err, sub.Endpoint))
		}
	}
	return out
}

func (p *Pusher) send(ctx context.Context, sub store.PushSubscription, msg Message, ttl time.Duration, urgent bool) (Outcome, string) {
	if err := CheckEndpoint(sub.Endpoint, p.cfg.AllowLoopback); err != nil {
		return Gone, ""
	}
	body, err := json.Marshal(msg)
	if err != nil || len(body) > MaxPayload {
		p.cfg.Logger.Error("push: payload too large", "bytes", len(body), "err", err)
		return Failed, view.PushWord("failed-network")
	}
	keys, err := p.Keys(ctx)
	if err != nil {
		p.cfg.Logger.Warn("push: keys", "err", err)
		return Failed, view.PushWord("failed-network")
	}
	urgency := webpushgo.UrgencyNormal
	if urgent {
		urgency = webpushgo.UrgencyHigh
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	res, err := webpushgo.SendNotificationWithContext(ctx, body, &webpushgo.Subscription{
		Endpoint: sub.Endpoint,
		Keys:     webpushgo.Keys{P256dh: sub.P256dh, Auth: sub.Auth},
	}, &webpushgo.Options{
		HTTPClient: p.cfg.Client,
		// The library adds "mailto:" to anything not https:.
		Subscriber:      strings.TrimPrefix(p.cfg.Subject, "mailto:"),
		TTL:             max(0, int(ttl/time.Second)),
		Urgency:         urgency,
		Topic:           topic(msg.Tag),
		VAPIDPublicKey:  keys.Public,
		VAPIDPrivateKey: keys.Private,
	})
	if err != nil {
		p.cfg.Logger.Warn("push: not delivered", "endpoint", Origin(sub.Endpoint), "err", redactEndpoint(err, sub.Endpoint))
		return Failed, view.PushWord("failed-network")
	}
	// Drain a little so the connection is reused; never keep it.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	_ = res.Body.Close()
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return Sent, ""
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		return Gone, ""
	default:
		p.cfg.Logger.Warn("push: refused", "endpoint", Origin(sub.Endpoint), "status", res.StatusCode)
		return Failed, view.PushWord("failed-status", res.StatusCode)
	}
}

// topic is a push's Topic header (RFC 8030 §5.4): a pending push for the
// same card is replaced at the push service too. At most 32 base64url
// characters.
func topic(tag string) string {
	t := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return -1
	}, tag)
	if len(t) > 32 {
		t = t[:32]
	}
	return t
}

func (p *Pusher) forget(endpoint string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.devices, endpoint)
}
