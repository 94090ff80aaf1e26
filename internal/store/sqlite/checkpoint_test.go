package sqlite

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walFrames is the number of frames in the journal's write-ahead log, as
// a PASSIVE checkpoint on a connection of its own reports it.
func walFrames(t *testing.T, path string) (frames, copied int) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, time.Second, "NORMAL"))
	require.NoError(t, err)
	defer db.Close()
	var busy int
	require.NoError(t, db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied))
	return frames, copied
}

// A post's Record never checkpoints the log (SQLite's own checkpoint, in
// the commit that fills the log past 1000 pages, would hold up the 303):
// with the journal's checkpointer off, the log keeps every Record's pages,
// far past SQLite's limit.
func TestRecordNeverCheckpoints(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j := openAt(t, path, Options{CheckpointEvery: -1})
	for i := range 300 {
		require.NoError(t, j.Record(submission(cmdID(i), t0)))
	}
	frames, _ := walFrames(t, path)
	assert.Greater(t, frames, 1000, "the log was checkpointed and started over during the Records")
}

// The journal's checkpointer copies the log into the database every
// CheckpointEvery writes, beside them.
func TestCheckpointsAreMadeBesideTheWrites(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j := openAt(t, path, Options{CheckpointEvery: 10})
	for i := range 50 {
		require.NoError(t, j.Record(submission(cmdID(i), t0)))
	}
	select {
	case <-j.ckpt.first:
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint made after 50 writes")
	}
	assert.LessOrEqual(t, j.ckpt.made.Load(), int64(5), "one per 10 writes at most")
}
