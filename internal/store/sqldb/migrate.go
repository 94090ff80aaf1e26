package sqldb

import (
	"context"
	"fmt"
	"time"
)

// Migrate applies the steps of the schema the database lacks (steps[i]
// takes it from version i to i+1), each in its own transaction with its
// row in schema_migrations, so a crash leaves a whole number of steps
// applied. Each transaction first runs schema.Lock, when set: replicas
// starting together then apply each step once (the others wait, then
// find it done). A database at a version past len(steps) is refused
// with tooNew(its version, len(steps)).
func (db *DB) Migrate(ctx context.Context, schema Schema, steps []string, now func() time.Time, tooNew func(v, known int) error) error {
	for {
		done, err := db.migrateOne(ctx, schema, steps, now, tooNew)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next step, or reports there is none.
func (db *DB) migrateOne(ctx context.Context, schema Schema, steps []string, now func() time.Time, tooNew func(v, known int) error) (done bool, err error) {
	tx, err := db.Synced.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if schema.Lock != "" {
		if _, err := tx.ExecContext(ctx, schema.Lock); err != nil {
			return false, err
		}
	}
	// Under the lock: CREATE TABLE IF NOT EXISTS is not safe against a
	// concurrent one by itself.
	if _, err := tx.ExecContext(ctx, schema.sql(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at {int64} NOT NULL
	)`)); err != nil {
		return false, err
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return false, err
	}
	if v > len(steps) {
		return false, tooNew(v, len(steps))
	}
	if v == len(steps) {
		return true, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, steps[v]); err != nil {
		return false, fmt.Errorf("migration %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, db.Q(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), v+1, now().UnixNano()); err != nil {
		return false, fmt.Errorf("migration %d: %w", v+1, err)
	}
	return false, tx.Commit()
}
