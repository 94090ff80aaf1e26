package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
)

// session is a session of operator, opened at.
func session(hash, operator string, at time.Time) store.Session {
	return store.Session{IDHash: hash, Operator: operator, Secret: "fp-" + operator, UserAgent: "Firefox", Created: at, LastSeen: at}
}

// A journal written before sessions (schema version 2) gains the sessions
// table when opened, keeping its answers.
func TestMigrationFromVersion2AddsSessions(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	require.NoError(t, j.Record(submission("c1", t0)))
	// Take the file back to version 2, as an earlier aepforms left it.
	_, err = j.db.Exec(undoMigration6 + `DROP INDEX submissions_live; ` + undoMigration4 + `DROP TABLE sessions; DELETE FROM schema_migrations WHERE version > 2`)
	require.NoError(t, err)
	require.Equal(t, 2, appliedMigrations(t, j))
	require.NoError(t, j.Close())

	j = openAt(t, path, Options{Host: "h"})
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j), "migration 3 and those after it applied")
	got, err := j.Unsettled()
	require.NoError(t, err)
	assert.Len(t, got, 1, "the recorded submission is still there")
	ctx := context.Background()
	require.NoError(t, j.CreateSession(ctx, session("h1", "ann", t0)))
	_, ok, err := j.LookupSession(ctx, "h1")
	require.NoError(t, err)
	assert.True(t, ok, "a session kept after the migration is found")
}
