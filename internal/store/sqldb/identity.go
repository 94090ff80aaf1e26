package sqldb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/store"
)

// LoadIdentity reads the journal's identity, creating it with host and
// now when there is none. Of processes racing to create it (replicas),
// the first insert wins (ON CONFLICT DO NOTHING) and every one reads
// that row: a stored identity is never replaced.
func LoadIdentity(ctx context.Context, db *DB, host string, now time.Time) (store.Identity, error) {
	if id, err := readIdentity(ctx, db); !errors.Is(err, sql.ErrNoRows) {
		return id, err
	}
	u, err := ulid.New(ulid.Timestamp(now), rand.Reader)
	if err != nil {
		return store.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	if _, err := db.Synced.ExecContext(ctx, db.Q(`INSERT INTO identity (id, instance_id, source, host, created_at) VALUES (1, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`), u.String(), store.NewSource(host, u.String()), host, now.UnixNano()); err != nil {
		return store.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	id, err := readIdentity(ctx, db)
	if err != nil {
		return store.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	return id, nil
}

// readIdentity reads the stored identity (sql.ErrNoRows: none yet).
func readIdentity(ctx context.Context, db *DB) (store.Identity, error) {
	var id store.Identity
	var created int64
	err := db.Synced.QueryRowContext(ctx, `SELECT instance_id, source, host, created_at FROM identity WHERE id = 1`).
		Scan(&id.InstanceID, &id.Source, &id.Host, &created)
	id.CreatedAt = time.Unix(0, created)
	return id, err
}
