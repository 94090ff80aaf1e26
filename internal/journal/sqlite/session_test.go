package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/journal"
)

// session is a session of operator, opened at.
func session(hash, operator string, at time.Time) journal.Session {
	return journal.Session{IDHash: hash, Operator: operator, Secret: "fp-" + operator, UserAgent: "Firefox", Created: at, LastSeen: at}
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
	_, err = j.db.Exec(undoMigration4 + `DROP TABLE sessions; DELETE FROM schema_migrations WHERE version > 2`)
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

// Sessions survive a restart and are ended one, the others, or the
// expired at a time.
func TestSessionsOnFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	require.NoError(t, j.CreateSession(ctx, session("a1", "ann", t0)))
	require.NoError(t, j.CreateSession(ctx, session("a2", "ann", t0.Add(time.Hour))))
	require.NoError(t, j.CreateSession(ctx, session("a3", "ann", t0.Add(2*time.Hour))))
	require.NoError(t, j.CreateSession(ctx, session("b1", "bo", t0)))
	require.Error(t, j.CreateSession(ctx, session("a1", "ann", t0)), "an id hash is kept once")
	require.NoError(t, j.TouchSession(ctx, "a1", t0.Add(30*time.Minute)))
	require.NoError(t, j.Close())

	j = openAt(t, path, Options{Host: "h"})
	got, ok, err := j.LookupSession(ctx, "a1")
	require.NoError(t, err)
	require.True(t, ok, "a session survives a restart")
	assert.Equal(t, journal.Session{IDHash: "a1", Operator: "ann", Secret: "fp-ann", UserAgent: "Firefox",
		Created: t0, LastSeen: t0.Add(30 * time.Minute)}, normal(got))

	n, err := j.DeleteOtherSessions(ctx, "ann", "a1")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "ann's other sessions end")
	for hash, want := range map[string]bool{"a1": true, "a2": false, "a3": false, "b1": true} {
		_, ok, err := j.LookupSession(ctx, hash)
		require.NoError(t, err)
		assert.Equal(t, want, ok, "session %s: got kept=%v, want %v", hash, ok, want)
	}

	// a1 last seen t0+30m, b1 t0: idle before t0+10m ends b1 only.
	n, err = j.DeleteExpiredSessions(ctx, t0.Add(10*time.Minute), t0.Add(-time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	// created before t0+1s ends a1.
	n, err = j.DeleteExpiredSessions(ctx, t0.Add(-time.Hour), t0.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	require.NoError(t, j.CreateSession(ctx, session("c1", "cy", t0)))
	require.NoError(t, j.DeleteSession(ctx, "c1"))
	require.NoError(t, j.DeleteSession(ctx, "c1"), "ending a session that is gone is not an error")
	_, ok, err = j.LookupSession(ctx, "c1")
	require.NoError(t, err)
	assert.False(t, ok, "a deleted session is not found")
}

// normal makes a session's times comparable with ==.
func normal(s journal.Session) journal.Session {
	s.Created, s.LastSeen = s.Created.UTC(), s.LastSeen.UTC()
	return s
}
