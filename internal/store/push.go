package store

import (
	"context"
	"sync"
	"time"
)

// PushKeys are the UI's VAPID key pair (RFC 8292), P-256, each
// base64url without padding: the private key's 32-byte scalar and the
// public key's 65-byte uncompressed point. They are made once, on first
// use, and kept so every replica and every restart signs with the same
// key the browsers subscribed with.
type PushKeys struct {
	Private string
	Public  string
	Created time.Time
}

// PushSubscription is one device's Web Push subscription for an
// operator (PushSubscription.toJSON() in the browser), keyed by its
// endpoint. An operator may have several devices.
type PushSubscription struct {
	Endpoint string
	// P256dh and Auth are the subscription's keys, base64url.
	P256dh, Auth string
	Operator     string
	// Session is the id hash of the sign-in that subscribed, so signing
	// out removes the device's subscription.
	Session string
	// Actions is true when the operator allowed answering from this
	// device's notifications.
	Actions bool
	Created time.Time
	// LastFailure is the last failed push in the operator's words ("" when
	// none, or after a later success); never the push service's body.
	LastFailure   string
	LastFailureAt time.Time
}

// PushClaimsKept is how long a card's push claims are kept: long after
// any card settles, so no replica sends an old question's push or
// message again. Web Push and the routing each prune them, so they are
// pruned with either on.
const PushClaimsKept = 7 * 24 * time.Hour

// PushClaimPruner prunes a journal's push claims older than
// PushClaimsKept, at most once per hour of the clock it is given: Web
// Push and the routing each hold one.
type PushClaimPruner struct {
	mu   sync.Mutex
	last time.Time // when claims were last pruned
}

// Prune prunes j's push claims kept past PushClaimsKept at now, unless
// it did less than an hour ago.
func (p *PushClaimPruner) Prune(ctx context.Context, j interface {
	PrunePushClaims(ctx context.Context, before time.Time) (int64, error)
}, now time.Time) error {
	p.mu.Lock()
	due := now.Sub(p.last) >= time.Hour
	if due {
		p.last = now
	}
	p.mu.Unlock()
	if !due {
		return nil
	}
	_, err := j.PrunePushClaims(ctx, now.Add(-PushClaimsKept))
	return err
}

// PushClaim kinds: what a claimed push was for.
const (
	ClaimNew     = "new"     // the card's request arrived
	ClaimSettled = "settled" // the card settled or expired: its notification replaced
	ClaimFirst   = "claimed" // the card's first "I’m on it", counted (time to first claim)
)

// PushClaim is one claimed push: its card, its kind and when it was
// claimed.
type PushClaim struct {
	Card, Kind string
	At         time.Time
}

// RoutingPrefix starts the kinds of the routing's push claims
// (internal/routing): routing:new:{team}, the one replica that posts a
// new question to its team's chat channel. Its history (the team, the
// reminders and escalations) is RoutingStep's.
const RoutingPrefix = "routing:"
