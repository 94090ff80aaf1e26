package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aepforms/aepforms/internal/store/sqldb"
)

// newSuffix names the file a new journal is made in before it is renamed
// to the journal's name.
const newSuffix = ".new"

// create makes the journal when its file does not exist: whole, aside
// (path.new: every migration, its identity, checkpointed into the one
// file), then renamed into place, so no crash leaves an empty or
// half-made journal under the journal's name, and a file there that is
// empty or not a journal can be refused (ErrForeign) instead of taken
// for a new one. What a crash left aside is removed first: the caller
// holds the lock, so nothing else is making it.
func (j *Journal) create(opts Options) error {
	tmp := j.path + newSuffix
	for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("answer journal %s: %w", p, err)
		}
	}
	if _, err := os.Lstat(j.path); !errors.Is(err, fs.ErrNotExist) {
		return nil // there is one (or it cannot be told): open checks it
	}
	// Create the file ourselves, 0600: SQLite gives its -wal and -shm
	// files the database file's mode.
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("answer journal %s: %w", tmp, err)
	}
	_ = f.Close()
	if err := build(tmp, opts); err != nil {
		return fmt.Errorf("answer journal %s: making a new one: %w", j.path, err)
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("answer journal %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("answer journal %s: %w", j.path, err)
	}
	if err := syncFile(filepath.Dir(j.path)); err != nil {
		return fmt.Errorf("answer journal directory %s: %w", filepath.Dir(j.path), err)
	}
	return nil
}

// build makes a whole journal in the empty file path: every migration
// and its identity, checkpointed into the file and closed.
func build(path string, opts Options) error {
	db, err := sql.Open("sqlite", dsn(path, opts.BusyTimeout, "FULL"))
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if err := migrate(ctx, db, opts.Now); err != nil {
		return err
	}
	if _, err := sqldb.LoadIdentity(ctx, &sqldb.DB{Synced: db}, opts.Host, opts.Now()); err != nil {
		return err
	}
	var busy, logged, done int
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil {
		return err
	}
	if busy != 0 {
		return errors.New("its log could not be checkpointed")
	}
	if err := db.Close(); err != nil {
		return err
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// syncFile flushes the file or directory at path to the disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
