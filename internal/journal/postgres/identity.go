package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/journal"
)

// loadIdentity reads the journal's identity, creating it with host and
// now when no replica has. Of replicas racing to create it, the first
// insert wins (ON CONFLICT DO NOTHING) and every one reads that row: a
// stored identity is never replaced.
func loadIdentity(ctx context.Context, pool *pgxpool.Pool, host string, now time.Time) (journal.Identity, error) {
	u, err := ulid.New(ulid.Timestamp(now), rand.Reader)
	if err != nil {
		return journal.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO identity (id, instance_id, source, host, created_at) VALUES (1, $1, $2, $3, $4)
		ON CONFLICT (id) DO NOTHING`, u.String(), journal.NewSource(host, u.String()), host, now.UnixNano()); err != nil {
		return journal.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	var id journal.Identity
	var created int64
	if err := pool.QueryRow(ctx, `SELECT instance_id, source, host, created_at FROM identity WHERE id = 1`).
		Scan(&id.InstanceID, &id.Source, &id.Host, &created); err != nil {
		return journal.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	id.CreatedAt = time.Unix(0, created)
	return id, nil
}
