package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/aepforms/aepforms/internal/store"
)

// classify reads a SQLite error as the operator can act on it: the disk
// full (SQLITE_FULL, ENOSPC, EDQUOT), the file read-only, or the file
// gone or unreadable (an I/O error: the disk is failing or was removed).
func classify(err error) store.FaultKind {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return store.FaultFull
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
			return store.FaultReadOnly
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN:
			return store.FaultUnavailable
		}
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return store.FaultFull
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return store.FaultReadOnly
	case errors.Is(err, context.DeadlineExceeded):
		return store.FaultUnavailable
	}
	return store.FaultOther
}

// probe is the small write Ping makes while a write has met a storage
// fault, to see whether the journal takes writes again: it rewrites the
// identity's row unchanged, which writes a page to the log as an answer
// does.
func (j *Journal) probe(ctx context.Context) error {
	if err := j.roomLeft(); err != nil {
		return err
	}
	_, err := j.db.ExecContext(ctx, `UPDATE identity SET host = host WHERE id = 1`)
	return err
}

// errNoRoom is roomLeft's cause: less than Options.MinFree is free.
var errNoRoom = errors.New("less free space than the journal's minimum")

// roomLeft is a FaultFull when the journal's disk has less than
// Options.MinFree free.
func (j *Journal) roomLeft() error {
	if j.minFree < 0 {
		return nil
	}
	free, ok := freeBytes(filepath.Dir(j.path))
	if !ok || free >= uint64(j.minFree) {
		return nil
	}
	return &store.Fault{Kind: store.FaultFull, Op: "ping", Err: fmt.Errorf("%w: %d bytes free on %s, %d wanted", errNoRoom, free, filepath.Dir(j.path), j.minFree)}
}
