package sqlite

import (
	"context"
	"fmt"
	"time"
)

// Prune removes the submissions posted before before, with their state
// changes, and returns how many it removed. secure_delete is on, so the
// removed text is overwritten in the file; the WAL is then checkpointed
// and truncated so no copy of it is left there either.
func (j *Journal) Prune(ctx context.Context, before time.Time) (int64, error) {
	res, err := j.db.ExecContext(ctx, `DELETE FROM submissions WHERE posted_at < ?`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("journal: prune: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("journal: prune: %w", err)
	}
	if n > 0 {
		if _, err := j.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return n, fmt.Errorf("journal: prune: checkpoint: %w", err)
		}
	}
	return n, nil
}
