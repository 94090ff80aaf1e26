package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A new journal is made private: its directory 0700, its files 0600,
// with every migration applied.
func TestOpenCreatesAPrivateJournal(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j := openAt(t, path, Options{})
	require.NoError(t, j.Record(submission("c1", t0)))

	st, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "the directory is the user's alone")
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		st, err := os.Stat(p)
		require.NoError(t, err, "%s exists while the journal is open", p)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "%s: got mode %v, want 0600", p, st.Mode().Perm())
	}
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
	var mode, sync string
	require.NoError(t, j.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.NoError(t, j.db.QueryRow(`PRAGMA synchronous`).Scan(&sync))
	assert.Equal(t, "wal", mode)
	assert.Equal(t, "2", sync, "synchronous=FULL")
}

// Re-opening applies nothing twice and keeps what was recorded.
func TestMigrationsAreAppliedOnce(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	require.NoError(t, j.Record(submission("c1", t0)))
	require.NoError(t, j.Close())

	for range 2 {
		j, err = Open(path, Options{Host: "h"})
		require.NoError(t, err)
		assert.Equal(t, SchemaVersion, appliedMigrations(t, j), "each step once")
		var rows int
		require.NoError(t, j.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&rows))
		assert.Equal(t, SchemaVersion, rows)
		got, err := j.Unsettled()
		require.NoError(t, err)
		assert.Len(t, got, 1, "the recorded submission is still there")
		require.NoError(t, j.Close())
	}
}

// An empty file (0 bytes) or a database that is not an aepforms journal
// is refused, named, with the way out, and left as it was: never taken
// for a new journal, which would give the UI a new identity and lose
// the answers' history.
func TestAnEmptyOrForeignFileIsRefusedAndLeftAlone(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		make func(t *testing.T, path string)
		says string
	}{
		"empty file": {func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, nil, 0o600))
		}, "is empty (0 bytes)"},
		"another program's database": {func(t *testing.T, path string) {
			foreignDB(t, path, `CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada')`)
		}, "holds tables contacts"},
		"an empty database": {func(t *testing.T, path string) {
			foreignDB(t, path, `PRAGMA user_version = 7`)
		}, "holds no tables at all"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := tempPath(t)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			tc.make(t, path)
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			_, err = Open(path, Options{Host: "h"})
			require.ErrorIs(t, err, ErrForeign)
			assert.Contains(t, err.Error(), path, "the file is named")
			assert.Contains(t, err.Error(), tc.says)
			assert.Contains(t, err.Error(), "move it aside", "the way out is named")
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(before, after), "the file is left as it was")
			_, err = Open(path, Options{Host: "h"})
			assert.ErrorIs(t, err, ErrForeign, "and it is refused again: nothing replaced it")
		})
	}
}

// foreignDB makes a SQLite database at path that is not a journal, by
// running statements.
func foreignDB(t *testing.T, path, statements string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec(statements + `; VACUUM`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, os.Chmod(path, 0o600))
}

// A new journal is made aside and renamed into place whole, so no crash
// can leave an empty journal under its name; what a crash left aside is
// removed at the next start.
func TestANewJournalIsMadeWholeAside(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path+newSuffix, nil, 0o600), "a crash's leftover")
	require.NoError(t, os.WriteFile(path+newSuffix+"-wal", []byte("junk"), 0o600))

	j := openAt(t, path, Options{})
	for _, p := range []string{path + newSuffix, path + newSuffix + "-wal"} {
		_, err := os.Stat(p)
		assert.ErrorIs(t, err, fs.ErrNotExist, "%s is removed", p)
	}
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
	assert.NotEmpty(t, j.Identity().InstanceID)
}

// A journal from a newer aepforms is refused, not downgraded.
func TestANewerJournalIsRefused(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)
	_, err = j.db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, SchemaVersion+1)
	require.NoError(t, err)
	require.NoError(t, j.Close())

	_, err = Open(path, Options{Host: "h"})
	require.ErrorIs(t, err, ErrTooNew)
	assert.Contains(t, err.Error(), path)
}

// The identity is made once: the host name at creation stays in the
// source when the host name changes, and two journals never share one.
func TestIdentityIsCreatedOnceAndKept(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j, err := Open(path, Options{Host: "alpha", Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	first := j.Identity()
	require.NoError(t, j.Close())
	assert.NotEmpty(t, first.InstanceID)
	assert.Equal(t, "aep://alpha/ui/aepforms/"+first.InstanceID, first.Source)
	assert.Equal(t, "alpha", first.Host)
	assert.True(t, first.CreatedAt.Equal(t0), "created at %v, want %v", first.CreatedAt, t0)

	again := openAt(t, path, Options{Host: "beta"})
	assert.Equal(t, first, again.Identity(), "a new host name changes nothing")

	other := openAt(t, tempPath(t), Options{Host: "alpha"})
	assert.NotEqual(t, first.InstanceID, other.Identity().InstanceID, "each journal is its own")
	assert.NotEqual(t, first.Source, other.Identity().Source, "two UIs on one host send from two sources")
}

// A journal whose files group or others can read is refused, naming the
// file and the fix.
func TestAJournalReadableByOthersIsRefused(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"", "-wal"} {
		t.Run("file"+suffix, func(t *testing.T) {
			t.Parallel()
			path := tempPath(t)
			j, err := Open(path, Options{Host: "h"})
			require.NoError(t, err)
			require.NoError(t, j.Close())
			f := path + suffix
			require.NoError(t, os.WriteFile(f, nil, 0o600))
			require.NoError(t, os.Chmod(f, 0o644))

			_, err = Open(path, Options{Host: "h"})
			require.ErrorIs(t, err, ErrExposed)
			assert.Contains(t, err.Error(), f, "the file is named")
			assert.Contains(t, err.Error(), "chmod 600", "the fix is named")
		})
	}
}

// One process at a time: a second Open of an open journal fails at once,
// naming it; once the first is closed it opens.
func TestASecondOpenOfTheSameJournalIsRefused(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	first, err := Open(path, Options{Host: "h"})
	require.NoError(t, err)

	_, err = Open(path, Options{Host: "h"})
	require.ErrorIs(t, err, ErrLocked)
	assert.Contains(t, err.Error(), path, "the journal is named")
	assert.Contains(t, err.Error(), "in use by another aepforms")

	require.NoError(t, first.Close())
	openAt(t, path, Options{Host: "h"})
}

// A damaged journal is refused, named, with the way out, and left as it
// was: never replaced by a new one.
func TestADamagedJournalIsRefusedAndLeftAlone(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(t *testing.T, path string){
		"not a database": func(t *testing.T, path string) {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("not a database "), 512), 0o600))
		},
		"pages overwritten": func(t *testing.T, path string) {
			j, err := Open(path, Options{Host: "h"})
			require.NoError(t, err)
			for i := range 200 {
				require.NoError(t, j.Record(submission(cmdID(i), t0)))
			}
			require.NoError(t, j.Close())
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Greater(t, len(b), 8192)
			for i := 4096; i < len(b); i++ { // keep the header page, spoil the rest
				b[i] = 0xA5
			}
			require.NoError(t, os.WriteFile(path, b, 0o600))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := tempPath(t)
			damage(t, path)
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			_, err = Open(path, Options{Host: "h"})
			require.ErrorIs(t, err, ErrDamaged)
			assert.Contains(t, err.Error(), path, "the file is named")
			assert.Contains(t, err.Error(), "move it aside", "the way out is named")

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(before, after), "the damaged file is left as it was")
			_, err = Open(path, Options{Host: "h"})
			assert.ErrorIs(t, err, ErrDamaged, "and it is refused again: nothing replaced it")
		})
	}
}

// appliedMigrations is the journal's schema version.
func appliedMigrations(t *testing.T, j *Journal) int {
	t.Helper()
	var v int
	require.NoError(t, j.db.QueryRowContext(context.Background(), `SELECT max(version) FROM schema_migrations`).Scan(&v))
	return v
}

// One lock per file, whatever name it is reached by: a second Open
// through a symbolic link to a journal in use (or to its directory) is
// refused as in use; through a hard link, the file's second name, it is
// refused for having two names (each would get its own -wal file).
func TestAJournalInUseCannotBeOpenedByAnotherName(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	first := openAt(t, path, Options{})
	require.NoError(t, first.Record(submission("c1", t0)))
	other := t.TempDir()

	fileLink := filepath.Join(other, "link.db")
	require.NoError(t, os.Symlink(path, fileLink))
	_, err := Open(fileLink, Options{Host: "h"})
	require.ErrorIs(t, err, ErrLocked, "a symbolic link to the file")
	assert.Contains(t, err.Error(), path, "the file itself is named")

	dirLink := filepath.Join(other, "dir")
	require.NoError(t, os.Symlink(filepath.Dir(path), dirLink))
	_, err = Open(filepath.Join(dirLink, filepath.Base(path)), Options{Host: "h"})
	require.ErrorIs(t, err, ErrLocked, "a symbolic link to its directory")

	hard := filepath.Join(filepath.Dir(path), "second-name.db")
	require.NoError(t, os.Link(path, hard))
	_, err = Open(hard, Options{Host: "h"})
	require.ErrorIs(t, err, ErrLinked, "a hard link")
	assert.Contains(t, err.Error(), "2 names")
	_, err = os.Stat(hard + "-wal")
	assert.ErrorIs(t, err, fs.ErrNotExist, "no second log was made")

	require.NoError(t, os.Remove(hard))
	require.NoError(t, first.Close())
	again := openAt(t, fileLink, Options{})
	assert.Equal(t, path, again.Path(), "opened by its link, it is the file")
	got, err := again.Unsettled()
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

// A journal directory others may write is refused, as a file others may
// read is: they could put their own file in the journal's place.
func TestAJournalDirectoryOthersCanWriteIsRefused(t *testing.T) {
	t.Parallel()
	for _, mode := range []os.FileMode{0o777, 0o770, 0o777 | os.ModeSticky} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			path := tempPath(t)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.Chmod(filepath.Dir(path), mode))
			_, err := Open(path, Options{Host: "h"})
			require.ErrorIs(t, err, ErrExposed)
			assert.Contains(t, err.Error(), filepath.Dir(path), "the directory is named")
			if mode&os.ModeSticky != 0 {
				// A shared directory such as /tmp: closing it to others
				// would break them, so the fix is a directory of one's own.
				assert.NotContains(t, err.Error(), "chmod 700", "a shared directory is not the operator's to close")
				assert.Contains(t, err.Error(), "mkdir -m 700", "the fix is named")
			} else {
				assert.Contains(t, err.Error(), "chmod 700", "the fix is named")
			}
			_, err = os.Stat(path)
			assert.ErrorIs(t, err, fs.ErrNotExist, "nothing was made there")
		})
	}
}
