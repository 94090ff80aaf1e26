package sqlite

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The exact command bytes recorded come back from Unsettled, after a
// reopen; a submission without them comes back without them.
func TestJournalKeepsCommandBytes(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	with := submission(cmdID(1), t0)
	with.Command = []byte(`{"aep":"0.1","id":"cmd-1","type":"control.attention.respond"}`)
	require.NoError(t, j.Record(with))
	require.NoError(t, j.Record(submission(cmdID(2), t0.Add(1))))
	require.NoError(t, j.Close())

	j = openAt(t, path, Options{Host: "h"})
	got, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, string(with.Command), string(got[0].Command), "command bytes: got, want")
	assert.Nil(t, got[1].Command, "no bytes recorded: none come back")
}

// A journal at schema version 1 (before the command bytes) is migrated
// and keeps its submissions, which come back without bytes.
func TestJournalMigratesFromVersion1(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`)
	require.NoError(t, err)
	_, err = db.Exec(migrations[0])
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (1, 0)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO identity (id, instance_id, source, host, created_at) VALUES (1, 'i1', 'aep://h/ui/aepforms/i1', 'h', 1)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO submissions (command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at)
		VALUES ('old', 'c', 't', 'aep://a', 's1', 'r1', 'builder', 'q', '[]', 'alice', '{}', '{"option":"yes"}', 'q', 5, 'sending', '', '', 0)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			require.NoError(t, os.Chmod(f, 0o600))
		}
	}

	j := openAt(t, path, Options{Host: "h"})
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
	got, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "old", got[0].CommandID)
	assert.Nil(t, got[0].Command)
}
