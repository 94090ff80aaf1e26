package postgres

import (
	"context"
	"fmt"
	"time"
)

// Prune removes the submissions posted before before, with their state
// changes (ON DELETE CASCADE), and returns how many it removed. Unlike
// SQLite's secure_delete, PostgreSQL leaves the removed rows' bytes in
// its pages until VACUUM (autovacuum) reuses them and in its WAL until
// the segment is recycled: the database's own retention rules those.
func (j *Journal) Prune(ctx context.Context, before time.Time) (int64, error) {
	tag, err := j.pool.Exec(ctx, `DELETE FROM submissions WHERE posted_at < $1`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("journal: prune: %w", err)
	}
	return tag.RowsAffected(), nil
}
