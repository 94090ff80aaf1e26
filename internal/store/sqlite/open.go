// Package sqlite is the answer journal in one embedded SQLite file
// (modernc.org/sqlite, pure Go): the default, durable store behind
// inbox.Journal, with History and Prune for the history page and
// retention.
//
// The file is opened in WAL mode with synchronous=FULL, so a committed
// Record survives power loss; a busy timeout covers the short moments
// another connection of this process writes. Only one process uses a
// journal at a time: Open takes an exclusive lock (flock) on a lock file
// beside it. The journal, its -wal and -shm files and the lock file are
// the user's alone (0600) in a directory made 0700; a journal others can
// read is refused, and a damaged one is refused and left as it is, never
// replaced.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqldb"
)

// Sentinel errors of Open; its messages name the file and the way out.
var (
	// ErrLocked: another process holds the journal's lock.
	ErrLocked = errors.New("journal: in use by another process")
	// ErrExposed: the journal (or its -wal, -shm or lock file) may be
	// read or written by group or others.
	ErrExposed = errors.New("journal: readable by others")
	// ErrDamaged: the file is not a SQLite database, fails its integrity
	// check, or is not an aepforms journal.
	ErrDamaged = errors.New("journal: damaged or not an aepforms journal")
	// ErrTooNew: the journal was written by a newer aepforms.
	ErrTooNew = errors.New("journal: written by a newer aepforms")
	// ErrLinked: the journal's file has more than one name (hard links).
	ErrLinked = errors.New("journal: has more than one name")
	// ErrForeign: the file is empty (0 bytes) or a database that is not
	// an aepforms journal. aepforms never leaves either behind (a new
	// journal is made aside and renamed into place whole), so it was
	// truncated, replaced or named by mistake; a new journal in its
	// place would give the UI a new identity and lose its history.
	ErrForeign = errors.New("journal: empty or not an aepforms journal")
)

// Options configures Open. Zero values take the documented defaults.
type Options struct {
	// Now is the clock of the journal's own times (its identity's
	// creation, its migrations). Submission times come from the inbox,
	// prune cutoffs from the caller. Default time.Now.
	Now func() time.Time
	// Host is the host name written into the identity when the journal is
	// created; later opens keep the stored one. Default os.Hostname, else
	// "localhost".
	Host string
	// BusyTimeout is how long a statement waits for another connection's
	// write. Default 5s.
	BusyTimeout time.Duration
	// Replica is the name this process holds resend leases under
	// (inbox.Leases). Default: for SQLite, one serve per file, the
	// journal's instance id, so a restarted serve holds its own leases
	// again; for PostgreSQL a random one (store.NewReplica).
	Replica string
	// Lease is how long a resend lease lasts unrenewed. Default
	// store.DefaultLease.
	Lease time.Duration
	// MinFree is the free space, in bytes, under which the disk holding
	// the journal counts as full: Ping (/readyz) says so before a post
	// is refused for it. A small write can still succeed on a full disk
	// (SQLite reuses its log), so a write's success alone does not tell.
	// Default DefaultMinFree; negative: not checked.
	MinFree int64
	// CheckpointEvery is how many writes pass between two checkpoints of
	// the write-ahead log, which a goroutine of the journal makes beside
	// the writes (SQLite's own, in the commit that fills the log, would
	// hold up a post's Record). Default DefaultCheckpointEvery; negative:
	// never (tests; the log then grows until Close).
	CheckpointEvery int
}

// DefaultCheckpointEvery is Options.CheckpointEvery's default: about as
// many pages as SQLite's own automatic checkpoint waits for (1000).
const DefaultCheckpointEvery = 64

// DefaultMinFree is Options.MinFree's default: 1 MiB, room for some
// hundred answers and the log's checkpoint.
const DefaultMinFree = 1 << 20

// Journal is an answer journal in one SQLite file. Its methods are safe
// for concurrent use.
type Journal struct {
	// The queries, shared with PostgreSQL (sqldb): the answers, the
	// operators' sessions, the Web Push state.
	sqldb.Answers
	sqldb.Sessions
	sqldb.Push
	sqldb.RuleBook

	db   *sql.DB
	path string
	lock *os.File
	now  func() time.Time
	id   store.Identity

	// lazy is the same file through connections whose commits do not
	// wait for the disk (synchronous=NORMAL): for the writes a power loss
	// may lose without harm (Settle, KeepRecorded): they become durable
	// with the next Record's sync, which covers the whole write-ahead log;
	// a state lost only makes the next start send the same command again,
	// which the agent dedupes by its id.
	lazy *sql.DB

	// writeMu serialises the answer writes (Record, Settle) in this
	// process, so they queue here rather than poll SQLite's busy handler,
	// which sleeps in steps of milliseconds.
	writeMu sync.Mutex
	// recordMu guards recordQueue: Records waiting for the next group
	// commit (Record).
	recordMu    sync.Mutex
	recordQueue []*recordRow

	// minFree is Options.MinFree.
	minFree int64
	// The checkpointer (checkpoint.go).
	ckpt checkpointer
	// health is the journal's ability to write, as its writes find it,
	// and the state changes a full disk refused (Ping, Settle).
	health store.Health
}

// Open opens the journal at path, creating it (and its directory, 0700)
// when it does not exist, applies the migrations it lacks, and creates
// its identity once. The caller must Close it.
func Open(path string, opts Options) (*Journal, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.Host == "" {
		opts.Host = hostname()
	}
	if opts.MinFree == 0 {
		opts.MinFree = DefaultMinFree
	}
	if path == "" {
		return nil, errors.New("journal: no file named")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("journal directory %s: %w", filepath.Dir(abs), err)
	}
	if path, err = resolve(abs); err != nil {
		return nil, err
	}
	if err := checkPrivate(path); err != nil {
		return nil, err
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	if err := checkOneName(path); err != nil {
		_ = unlockFile(lock)
		return nil, err
	}
	j := &Journal{path: path, lock: lock, now: opts.Now, minFree: opts.MinFree, health: store.Health{Classify: classify}}
	if err := j.create(opts); err != nil {
		_ = j.Close()
		return nil, err
	}
	if err := j.open(opts); err != nil {
		_ = j.Close()
		return nil, err
	}
	return j, nil
}

func (j *Journal) open(opts Options) error {
	st, err := os.Stat(j.path)
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if st.Size() == 0 {
		return explain(ErrForeign, nil, "answer journal %s is empty (0 bytes). aepforms never leaves a journal empty, so it was truncated or made by something else; a new journal in its place would give this UI a new identity and lose the answers' history. It was left as it is: restore it from a backup, or move it aside (mv %s %s.empty) to start a new journal", j.path, j.path, j.path)
	}
	ctx := context.Background()
	if err := j.inspect(ctx, opts.BusyTimeout); err != nil {
		return err
	}
	if j.db, err = sql.Open("sqlite", dsn(j.path, opts.BusyTimeout, "FULL")); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if j.lazy, err = sql.Open("sqlite", dsn(j.path, opts.BusyTimeout, "NORMAL")); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	j.Answers = sqldb.Answers{DB: &sqldb.DB{
		Synced: j.db, Lazy: j.lazy, WriteMu: &j.writeMu, Health: &j.health, Wrote: j.wrote,
		Dialect: sqldb.Dialect{Instr: "instr", IsLive: isUnique},
	}}
	j.Sessions, j.Push, j.RuleBook = sqldb.Sessions{DB: j.Answers.DB}, sqldb.Push{DB: j.Answers.DB}, sqldb.RuleBook{DB: j.Answers.DB}
	db := j.db
	if err := migrate(ctx, db, opts.Now); err != nil {
		return j.describe(err)
	}
	if err := j.Answers.Prepare(ctx); err != nil {
		return j.describe(err)
	}
	if j.id, err = sqldb.LoadIdentity(ctx, j.Answers.DB, opts.Host, opts.Now()); err != nil {
		return j.describe(err)
	}
	if _, err := j.Answers.Reindex(ctx); err != nil {
		return j.describe(err)
	}
	j.LeaseOwner, j.Lease = opts.Replica, opts.Lease
	if j.LeaseOwner == "" {
		j.LeaseOwner = j.id.InstanceID // one serve per file: a restart is the same replica
	}
	if j.Lease <= 0 {
		j.Lease = store.DefaultLease
	}
	j.startCheckpoints(opts.CheckpointEvery)
	// The files SQLite made follow the database file's mode; make sure.
	for _, p := range j.files() {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("journal %s: %w", p, err)
		}
	}
	return nil
}

// dsn is the database/sql name of the SQLite file at path, with the
// journal's settings and synchronous mode sync (FULL or NORMAL).
func dsn(path string, busy time.Duration, sync string) string {
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", busy.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(" + sync + ")",
		"_pragma=foreign_keys(ON)",
		"_pragma=secure_delete(ON)",
		// No commit checkpoints the log (a Record would wait for it);
		// the journal's checkpointer does, off the writes' way.
		"_pragma=wal_autocheckpoint(0)",
		"_txlock=immediate",
	}
	return "file:" + uriPath(path) + "?" + strings.Join(q, "&")
}

// inspect checks the file before the journal's settings are applied
// (which would turn a foreign database to WAL mode, changing it): it
// reads it through one query-only connection, which runs SQLite's
// integrity check (check) and looks for the journal's tables (ours).
func (j *Journal) inspect(ctx context.Context, busy time.Duration) error {
	db, err := sql.Open("sqlite", "file:"+uriPath(j.path)+fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=query_only(1)", busy.Milliseconds()))
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	if err := j.check(ctx, db); err != nil {
		return err
	}
	return j.ours(ctx, db)
}

// ours refuses a database that is not an aepforms journal: one without
// the schema_migrations table every journal has from its creation on
// (the file of another program, or an empty database), which migrating
// would change.
func (j *Journal) ours(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return j.describe(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return j.describe(err)
		}
		if name == "schema_migrations" {
			return nil
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		return j.describe(err)
	}
	holds := "no tables at all"
	if len(tables) > 0 {
		if len(tables) > 5 {
			tables = append(tables[:5], "…")
		}
		holds = "tables " + strings.Join(tables, ", ")
	}
	return explain(ErrForeign, nil, "%s is a SQLite database but not an aepforms journal (it holds %s and no schema_migrations). It was left as it is: name the journal's own file with --db, or move it aside (mv %s %s.foreign) to start a new journal", j.path, holds, j.path, j.path)
}

// check opens a connection (reading the header and, in WAL mode, the
// log) and runs SQLite's quick integrity check.
func (j *Journal) check(ctx context.Context, db *sql.DB) error {
	var res string
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return j.describe(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		if err := rows.Scan(&res); err != nil {
			return j.describe(err)
		}
		if res != "ok" && len(problems) < 3 {
			problems = append(problems, res)
		}
	}
	if err := rows.Err(); err != nil {
		return j.describe(err)
	}
	if len(problems) > 0 {
		return explain(ErrDamaged, nil, "answer journal %s is damaged: its integrity check found %s. It was left as it is: move it aside (mv %s %s.damaged, with its -wal file if there is one) to start an empty journal, or use another file", j.path, strings.Join(problems, "; "), j.path, j.path)
	}
	return nil
}

// describe turns an error met while opening into one that names the file
// and the way out.
func (j *Journal) describe(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return explain(ErrDamaged, err, "answer journal %s is damaged or is not an aepforms journal (%v). It was left as it is: move it aside (mv %s %s.damaged, with its -wal file if there is one) to start an empty journal, or use another file", j.path, se, j.path, j.path)
		}
	}
	return fmt.Errorf("answer journal %s: %w", j.path, err)
}

// explained is an error whose message says it all: it matches kind and
// cause with errors.Is without repeating their text.
type explained struct {
	msg         string
	kind, cause error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.kind, e.cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// explain is an explained error of kind (may be nil) caused by cause
// (may be nil), reading format.
func explain(kind, cause error, format string, args ...any) error {
	return &explained{msg: fmt.Sprintf(format, args...), kind: kind, cause: cause}
}

// Path is the journal's file, absolute.
func (j *Journal) Path() string { return j.path }

// Identity is the journal's identity, as created when the journal was.
func (j *Journal) Identity() store.Identity { return j.id }

// Ping reports whether the journal takes answers (for /readyz): the
// database answers, its disk has Options.MinFree left and, when a write
// met a storage fault, a small write succeeds again; then the state
// changes the fault refused are written. Its error is a *store.Fault.
func (j *Journal) Ping(ctx context.Context) error {
	if err := j.db.PingContext(ctx); err != nil {
		return j.health.Wrap("ping", err)
	}
	if err := j.roomLeft(); err != nil {
		return err
	}
	return j.health.Check(ctx, j.probe)
}

// Close writes the state changes a storage fault refused, if the
// journal takes writes again, closes the database and releases the lock.
func (j *Journal) Close() error {
	var err error
	if waiting, _ := j.health.Backlog(); waiting > 0 && j.db != nil {
		_ = j.health.Check(context.Background(), j.probe)
	}
	j.stopCheckpoints()
	if j.lazy != nil {
		_ = j.lazy.Close()
		j.lazy = nil
	}
	if j.db != nil {
		err = j.db.Close()
		j.db = nil
	}
	if j.lock != nil {
		_ = unlockFile(j.lock)
		j.lock = nil
	}
	return err
}

// files are the journal's files that hold its data.
func (j *Journal) files() []string {
	return []string{j.path, j.path + "-wal", j.path + "-shm", j.path + ".lock"}
}

// resolve is the file the journal at abs is, its symbolic links
// followed (the directory's and the file's own), so that the lock, the
// -wal and -shm files and every check are the file's whatever name it
// was reached by.
func resolve(abs string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("journal directory %s: %w", filepath.Dir(abs), err)
	}
	path := filepath.Join(dir, filepath.Base(abs))
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil // none yet, or the file itself
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("answer journal %s is a symbolic link to a file that cannot be reached: %w", abs, err)
	}
	return target, nil
}

// checkOneName refuses a journal file with more than one name (hard
// links): SQLite names the -wal file after the name it was opened by,
// so each name would have its own log and lock, and a serve on one name
// would neither see nor stop another's writes, which corrupts it.
func checkOneName(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("answer journal %s: %w", path, err)
	}
	if n := links(fi); n > 1 {
		return explain(ErrLinked, nil, "answer journal %s has %d names (hard links): each name would get its own -wal file and lock, so two aepforms could write it at once and corrupt it. Remove the other names (find / -xdev -samefile %s), or give this aepforms its own copy with --db", path, n, path)
	}
	return nil
}

// checkPrivate refuses a journal whose files group or others may read or
// write, or whose directory group or others may write (they could put
// their own file in its place).
func checkPrivate(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("answer journal directory %s: %w", dir, err)
	}
	if st.Mode().Perm()&0o022 != 0 {
		if st.Mode()&fs.ModeSticky != 0 {
			// A shared directory such as /tmp: others need it open, so the
			// fix is a directory of the operator's own, never a chmod.
			return explain(ErrExposed, nil, "answer journal directory %s is shared (mode %v): others may put files where the journal's go. Make a directory of your own (mkdir -m 700 %s) and give --db a file in it", dir, st.Mode(), filepath.Join(dir, "aepforms"))
		}
		return explain(ErrExposed, nil, "answer journal directory %s has mode %v, so others may replace the journal's files: chmod 700 %s, or choose another place with --db", dir, st.Mode().Perm(), dir)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("answer journal %s: %w", p, err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return explain(ErrExposed, nil, "answer journal file %s has mode %v, so others may read the answers: chmod 600 %s (and the journal's -wal, -shm and .lock files beside it), or move it aside", p, st.Mode().Perm(), p)
		}
	}
	return nil
}

// uriPath escapes an absolute path for a file: URI.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

func hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}
