package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/store/sqldb"
)

// migrationLock is the advisory lock key every replica takes before it
// reads or changes the schema ("aepforms" in ASCII, as a bigint).
const migrationLock int64 = 0x6165_7066_6f72_6d73

// lockRules holds rule makers one at a time across replicas, so the
// cap's count and the insert are one step (sqldb.RuleBook.CreateRule);
// its key is "aeprules" in ASCII.
const lockRules = `SELECT pg_advisory_xact_lock(x'61657072756c6573'::bigint)`

// migrations are the journal's schema, one numbered step each: step i
// takes the schema from version i to i+1. Append only; a shipped step
// may be written anew only if it makes the same schema (a database at
// each version is migrated by the steps after it;
// TestOpensADatabaseMadeByVersion9 holds version 9's as shipped). The
// parts are sqldb's, shared with SQLite, whose steps are numbered for
// that backend alone.
var migrations = append([]string{
	// 1: identity, submissions with their command bytes, their state
	// changes, operator sessions (SQLite's steps 1 to 3), and at most one
	// live submission per request (its step 5).
	dialect.Submissions() + dialect.Command() + sqldb.Live + dialect.Sessions(),
	// 2: what the agent recorded for each answer (SQLite's step 4).
	dialect.Recorded(),
	// 3 to 13: SQLite's steps 6 to 16 (sqldb.Schema.SharedSteps).
}, dialect.SharedSteps()...)

// dialect is the schema in PostgreSQL's types, its migrations under
// migrationLock.
var dialect = func() sqldb.Schema {
	s := sqldb.PostgreSQLSchema
	s.Lock = fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, migrationLock)
	return s
}()

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// migrate applies the steps the database lacks (sqldb.DB.Migrate),
// each under the advisory lock.
func migrate(ctx context.Context, db *sqldb.DB, now func() time.Time) error {
	return db.Migrate(ctx, dialect, migrations, now, func(v, known int) error {
		return fmt.Errorf("%w: the database was migrated by a newer aepforms (schema version %d; this one knows up to %d). Run that aepforms, or use another database", ErrTooNew, v, known)
	})
}
