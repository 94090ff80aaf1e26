package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// PushKeys returns the UI's VAPID key pair, made by gen and kept on
// first use; later calls (and other processes) read the kept pair.
func (p *Push) PushKeys(ctx context.Context, gen func() (store.PushKeys, error)) (store.PushKeys, error) {
	var k store.PushKeys
	var created int64
	err := p.Synced.QueryRowContext(ctx, p.Q(`SELECT private_key, public_key, created_at FROM push_keys WHERE id = 1`)).Scan(&k.Private, &k.Public, &created)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return store.PushKeys{}, fmt.Errorf("journal: push keys: %w", err)
	}
	if err == nil {
		k.Created = store.FromNanos(created)
		return k, nil
	}
	fresh, err := gen()
	if err != nil {
		return store.PushKeys{}, err
	}
	if _, err := p.Synced.ExecContext(ctx, p.Q(`INSERT INTO push_keys (id, private_key, public_key, created_at) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		fresh.Private, fresh.Public, store.Nanos(fresh.Created)); err != nil {
		return store.PushKeys{}, fmt.Errorf("journal: push keys: %w", err)
	}
	if err := p.Synced.QueryRowContext(ctx, p.Q(`SELECT private_key, public_key, created_at FROM push_keys WHERE id = 1`)).Scan(&k.Private, &k.Public, &created); err != nil {
		return store.PushKeys{}, fmt.Errorf("journal: push keys: %w", err)
	}
	k.Created = store.FromNanos(created)
	return k, nil
}

// SavePushSubscription keeps a device's subscription, replacing the one
// with the same endpoint (a device subscribing again, or another
// operator signing in on it).
func (p *Push) SavePushSubscription(ctx context.Context, s store.PushSubscription) error {
	if _, err := p.Synced.ExecContext(ctx, p.Q(`INSERT INTO push_subscriptions (endpoint, p256dh, auth, operator, session, actions, created_at, last_failure, last_failure_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, '', 0)
		ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, operator = excluded.operator,
			session = excluded.session, actions = excluded.actions, created_at = excluded.created_at, last_failure = '', last_failure_at = 0`),
		s.Endpoint, s.P256dh, s.Auth, s.Operator, s.Session, s.Actions, store.Nanos(s.Created)); err != nil {
		return fmt.Errorf("journal: save push subscription: %w", err)
	}
	return nil
}

// DeletePushSubscription removes operator's subscription at endpoint and
// reports whether there was one.
func (p *Push) DeletePushSubscription(ctx context.Context, operator, endpoint string) (bool, error) {
	res, err := p.Synced.ExecContext(ctx, p.Q(`DELETE FROM push_subscriptions WHERE operator = ? AND endpoint = ?`), operator, endpoint)
	if err != nil {
		return false, fmt.Errorf("journal: delete push subscription: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteSessionPushSubscriptions removes the subscriptions made by the
// sign-in session idHash (its sign-out).
func (p *Push) DeleteSessionPushSubscriptions(ctx context.Context, idHash string) error {
	if _, err := p.Synced.ExecContext(ctx, p.Q(`DELETE FROM push_subscriptions WHERE session = ?`), idHash); err != nil {
		return fmt.Errorf("journal: delete push subscriptions: %w", err)
	}
	return nil
}

// PushSubscriptions lists every device's subscription, by operator and
// then oldest first.
func (p *Push) PushSubscriptions(ctx context.Context) ([]store.PushSubscription, error) {
	rows, err := p.Synced.QueryContext(ctx, p.Q(`SELECT endpoint, p256dh, auth, operator, session, actions, created_at, last_failure, last_failure_at
		FROM push_subscriptions ORDER BY operator, created_at, endpoint`))
	if err != nil {
		return nil, fmt.Errorf("journal: push subscriptions: %w", err)
	}
	defer rows.Close()
	var out []store.PushSubscription
	for rows.Next() {
		var s store.PushSubscription
		var created, failed int64
		if err := rows.Scan(&s.Endpoint, &s.P256dh, &s.Auth, &s.Operator, &s.Session, &s.Actions, &created, &s.LastFailure, &failed); err != nil {
			return nil, fmt.Errorf("journal: push subscriptions: %w", err)
		}
		s.Created = store.FromNanos(created)
		if failed != 0 {
			s.LastFailureAt = store.FromNanos(failed)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// PushFailed notes the last failure of the push to endpoint; failure ""
// clears it (a later push succeeded).
func (p *Push) PushFailed(ctx context.Context, endpoint, failure string, at time.Time) error {
	n := int64(0)
	if failure != "" {
		n = store.Nanos(at)
	}
	if _, err := p.Synced.ExecContext(ctx, p.Q(`UPDATE push_subscriptions SET last_failure = ?, last_failure_at = ? WHERE endpoint = ?`), failure, n, endpoint); err != nil {
		return fmt.Errorf("journal: push failure: %w", err)
	}
	return nil
}

// ClaimPush claims the push of kind for card: true for the one caller
// (of every replica sharing the journal) that claimed it first.
func (p *Push) ClaimPush(ctx context.Context, card, kind string, at time.Time) (bool, error) {
	res, err := p.Synced.ExecContext(ctx, p.Q(`INSERT INTO push_claims (card_id, kind, claimed_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`), card, kind, store.Nanos(at))
	if err != nil {
		return false, fmt.Errorf("journal: claim push: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PushClaimsOf lists the push claims whose kind starts with prefix,
// oldest first: what was sent, by any replica, before a restart.
func (p *Push) PushClaimsOf(ctx context.Context, prefix string) ([]store.PushClaim, error) {
	rows, err := p.Synced.QueryContext(ctx, p.Q(`SELECT card_id, kind, claimed_at FROM push_claims WHERE substr(kind, 1, ?) = ? ORDER BY claimed_at, card_id, kind`), len(prefix), prefix)
	if err != nil {
		return nil, fmt.Errorf("journal: push claims: %w", err)
	}
	defer rows.Close()
	var out []store.PushClaim
	for rows.Next() {
		var c store.PushClaim
		var at int64
		if err := rows.Scan(&c.Card, &c.Kind, &at); err != nil {
			return nil, fmt.Errorf("journal: push claims: %w", err)
		}
		c.At = store.FromNanos(at)
		out = append(out, c)
	}
	return out, rows.Err()
}

// SetPageVisible keeps whether the operator's page page is visible now.
func (p *Push) SetPageVisible(ctx context.Context, page, operator string, visible bool, at time.Time) error {
	if _, err := p.Synced.ExecContext(ctx, p.Q(`INSERT INTO page_visibility (page_id, operator, visible, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (page_id) DO UPDATE SET operator = excluded.operator, visible = excluded.visible, updated_at = excluded.updated_at`),
		page, operator, visible, store.Nanos(at)); err != nil {
		return fmt.Errorf("journal: page visibility: %w", err)
	}
	return nil
}

// VisibleOperators lists the operators with a page reported visible at
// or after since (a page that closed without saying so stops counting),
// and forgets the reports older than since.
func (p *Push) VisibleOperators(ctx context.Context, since time.Time) ([]string, error) {
	if _, err := p.Synced.ExecContext(ctx, p.Q(`DELETE FROM page_visibility WHERE updated_at < ?`), store.Nanos(since)); err != nil {
		return nil, fmt.Errorf("journal: page visibility: %w", err)
	}
	rows, err := p.Synced.QueryContext(ctx, p.Q(`SELECT DISTINCT operator FROM page_visibility WHERE visible AND updated_at >= ? ORDER BY operator`), store.Nanos(since))
	if err != nil {
		return nil, fmt.Errorf("journal: page visibility: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var op string
		if err := rows.Scan(&op); err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	return out, rows.Err()
}

// PrunePushClaims forgets the push claims made before before (their
// cards are long settled or gone), and returns how many.
func (p *Push) PrunePushClaims(ctx context.Context, before time.Time) (int64, error) {
	res, err := p.Synced.ExecContext(ctx, p.Q(`DELETE FROM push_claims WHERE claimed_at < ?`), store.Nanos(before))
	if err != nil {
		return 0, fmt.Errorf("journal: prune push claims: %w", err)
	}
	return res.RowsAffected()
}

// Push is the Web Push state: the VAPID key pair, each device's
// subscription, which replica sends each push (claims), and which
// operators are looking at a page.
type Push struct{ *DB }
