package sqldb

import (
	"context"
	"fmt"

	"github.com/aepforms/aepforms/internal/store"
)

// reindexBatch is how many rows Reindex rewrites per transaction.
const reindexBatch = 500

// Reindex writes the search text (store.SearchText) again of every row
// written with an older store.SearchVersion, from what the row holds, so
// History finds answers journaled before a version by what the new one
// matches (their labels). It returns how many rows it rewrote. A row that
// no longer decodes keeps its search text and is marked done, so it is
// not read again on every open. Replicas may run it at once: each write
// is the same.
func (a *Answers) Reindex(ctx context.Context) (int, error) {
	n := 0
	for {
		done, err := a.reindexBatch(ctx)
		n += done
		if err != nil || done < reindexBatch {
			return n, err
		}
	}
}

func (a *Answers) reindexBatch(ctx context.Context) (int, error) {
	rows, err := a.Synced.QueryContext(ctx, a.Q(`SELECT `+submissionColumns+` FROM submissions WHERE search_version < ? ORDER BY seq LIMIT ?`),
		store.SearchVersion, reindexBatch)
	if err != nil {
		return 0, fmt.Errorf("journal: reindex: %w", err)
	}
	type update struct {
		seq    int64
		search string
		ok     bool
	}
	var ups []update
	for rows.Next() {
		s, seq, err := scanSubmission(rows)
		if seq == 0 {
			_ = rows.Close()
			return 0, fmt.Errorf("journal: reindex: %w", err)
		}
		ups = append(ups, update{seq: seq, search: store.SearchText(s), ok: err == nil})
	}
	if err := rows.Err(); err != nil {
		_ = rows.Close()
		return 0, fmt.Errorf("journal: reindex: %w", err)
	}
	_ = rows.Close()
	if len(ups) == 0 {
		return 0, nil
	}
	defer a.lockWrites()()
	tx, err := a.Synced.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("journal: reindex: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, u := range ups {
		q, args := `UPDATE submissions SET search = ?, search_version = ? WHERE seq = ?`, []any{u.search, store.SearchVersion, u.seq}
		if !u.ok {
			q, args = `UPDATE submissions SET search_version = ? WHERE seq = ?`, []any{store.SearchVersion, u.seq}
		}
		if _, err := tx.ExecContext(ctx, a.Q(q), args...); err != nil {
			return 0, fmt.Errorf("journal: reindex: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("journal: reindex: %w", err)
	}
	return len(ups), nil
}
