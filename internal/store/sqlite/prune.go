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
	n, err := j.Answers.Prune(ctx, before)
	if err != nil || n == 0 {
		return n, err
	}
	if _, err := j.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return n, fmt.Errorf("journal: prune: checkpoint: %w", err)
	}
	return n, nil
}
