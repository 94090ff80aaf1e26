package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

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

// The step that makes one live submission per request a unique index
// (step 5) migrates a journal from before one-answer-in-flight that
// holds two live submissions for one request: the older is superseded
// (with its state change kept), the newer stays live, and from then on a
// second one is refused.
// liveStep is the migration that made one live submission per request
// the database's rule.
const liveStep = 5

func TestJournalMigratesToOneLivePerRequest(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	// Take the file back to the step before, as an earlier aepforms left
	// it, with two live answers to one request and one to another.
	_, err = j.db.Exec(`DROP INDEX submissions_live`)
	require.NoError(t, err)
	older, newer, other := submission("older", t0), submission("newer", t0.Add(time.Second)), submission("other", t0)
	newer.Key = older.Key
	for _, s := range []inbox.Submission{older, newer, other} {
		require.NoError(t, j.Record(s))
	}
	require.NoError(t, j.Settle("newer", inbox.SubmissionAccepted, "", "", t0.Add(2*time.Second)))
	// The steps after it (push, the resend lease) undone too.
	_, err = j.db.Exec(undoLease+undoMigration6+`DELETE FROM schema_migrations WHERE version >= ?`, liveStep)
	require.NoError(t, err)
	require.NoError(t, j.Close())

	j = openAt(t, path, Options{Host: "h"})
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
	got, err := j.Unsettled()
	require.NoError(t, err)
	var live []string
	for _, s := range got {
		live = append(live, s.CommandID)
	}
	assert.ElementsMatch(t, []string{"newer", "other"}, live, "the older of two is superseded")
	page, err := j.History(context.Background(), store.HistoryQuery{Outcome: inbox.SubmissionSuperseded})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, "older", page.Entries[0].CommandID)
	require.Len(t, page.Entries[0].Changes, 2, "posted, then superseded by the migration")
	assert.Equal(t, inbox.SubmissionSuperseded, page.Entries[0].Changes[1].State)

	third := submission("third", t0.Add(time.Minute))
	third.Key = older.Key
	assert.ErrorIs(t, j.Record(third), store.ErrLive, "the index holds from now on")
}
