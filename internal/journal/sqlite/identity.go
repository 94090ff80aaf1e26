package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/journal"
)

// loadIdentity reads the journal's identity, creating it on first use
// with host and now. A stored identity is never recomputed.
func loadIdentity(ctx context.Context, db *sql.DB, host string, now time.Time) (journal.Identity, error) {
	id, err := readIdentity(ctx, db)
	if !errors.Is(err, sql.ErrNoRows) {
		return id, err
	}
	u, err := ulid.New(ulid.Timestamp(now), rand.Reader)
	if err != nil {
		return journal.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	// INSERT OR IGNORE: the lock makes this the only writer, but a second
	// run of this code must never replace the first identity.
	if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO identity (id, instance_id, source, host, created_at) VALUES (1, ?, ?, ?, ?)`,
		u.String(), journal.NewSource(host, u.String()), host, now.UnixNano()); err != nil {
		return journal.Identity{}, fmt.Errorf("journal identity: %w", err)
	}
	return readIdentity(ctx, db)
}

func readIdentity(ctx context.Context, db *sql.DB) (journal.Identity, error) {
	var id journal.Identity
	var created int64
	err := db.QueryRowContext(ctx, `SELECT instance_id, source, host, created_at FROM identity WHERE id = 1`).
		Scan(&id.InstanceID, &id.Source, &id.Host, &created)
	id.CreatedAt = time.Unix(0, created)
	return id, err
}
