// Package postgres is the answer journal in a PostgreSQL database
// (github.com/jackc/pgx/v5): the backend several aepforms replicas share.
// It keeps what the embedded SQLite journal keeps, in the same schema,
// and behaves the same way (storetest holds both to it): inbox.Journal
// for the write-ahead path, History, Prune and the operators' sessions.
//
// Replicas start together: the migrations are applied once, each step
// in a transaction that first takes a transaction-level advisory lock,
// and the journal's identity (its instance id and command source) is
// created once, by whichever replica comes first, and read by every
// other, so all of them send from one source and the agent's (source,
// id) dedupe spans them. The database, not each process, holds the rule
// of one live submission per request (a partial unique index).
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqldb"
)

// ErrTooNew: the database was migrated by a newer aepforms.
var ErrTooNew = errors.New("journal: written by a newer aepforms")

// Options configures Open. Zero values take the documented defaults.
type Options struct {
	// Now is the clock of the journal's own times (its identity's
	// creation, its migrations). Default time.Now.
	Now func() time.Time
	// Host is the host name written into the identity when the journal is
	// created; later opens, by any replica, keep the stored one. Default
	// os.Hostname, else "localhost".
	Host string
	// ConnectTimeout bounds each connection attempt when the URL sets no
	// connect_timeout: an unreachable server is an error at start, not a
	// hang. Default 10s.
	ConnectTimeout time.Duration
	// WriteTimeout bounds Record, Settle and Unsettled, which the inbox
	// calls without a context (Record under its lock): a database that
	// stops answering fails a post instead of holding every card. Default
	// 10s.
	WriteTimeout time.Duration
	// Replica is the name this process holds resend leases under
	// (inbox.Leases). Default: for SQLite, one serve per file, the
	// journal's instance id, so a restarted serve holds its own leases
	// again; for PostgreSQL a random one (store.NewReplica).
	Replica string
	// Lease is how long a resend lease lasts unrenewed. Default
	// store.DefaultLease.
	Lease time.Duration
}

// Journal is an answer journal in a PostgreSQL database. Its methods are
// safe for concurrent use; several Journals (processes) may share one
// database.
type Journal struct {
	// The queries, shared with SQLite (sqldb): the answers, the
	// operators' sessions, the Web Push state.
	sqldb.Answers
	sqldb.Sessions
	sqldb.Push
	sqldb.RuleBook

	pool *pgxpool.Pool
	// sql is pool as a database/sql handle, for the shared queries.
	sql  *sql.DB
	name string // the URL without its password, for messages
	// write is Options.WriteTimeout.
	write time.Duration
	id    store.Identity
	// health is the database's ability to write, as the writes find it,
	// and the state changes it refused (Ping, Settle).
	health store.Health
}

// Open connects to the database at dbURL (postgres://…, or a libpq
// key=value connection string, IsConnString), applies the
// migrations it lacks and reads the journal's identity, creating it if
// no replica has. The caller must Close it.
func Open(ctx context.Context, dbURL string, opts Options) (*Journal, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Host == "" {
		opts.Host = hostname()
	}
	name := Redact(dbURL)
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		// pgx's message may quote the URL, password and all.
		return nil, fmt.Errorf("answer journal %s: not a PostgreSQL URL or connection string", name)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
		if cfg.ConnConfig.ConnectTimeout <= 0 {
			cfg.ConnConfig.ConnectTimeout = 10 * time.Second
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("answer journal %s: %w", name, err)
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.Replica == "" {
		opts.Replica = store.NewReplica()
	}
	if opts.Lease <= 0 {
		opts.Lease = store.DefaultLease
	}
	j := &Journal{pool: pool, sql: stdlib.OpenDBFromPool(pool), name: name, write: opts.WriteTimeout, health: store.Health{Classify: classify}}
	j.Answers = sqldb.Answers{DB: &sqldb.DB{
		Synced: j.sql, Lazy: j.sql, Timeout: opts.WriteTimeout, Health: &j.health,
		Dialect: sqldb.Dialect{Numbered: true, Instr: "strpos", IsLive: isLive, LockRules: lockRules},
	}, LeaseOwner: opts.Replica, Lease: opts.Lease}
	j.Sessions, j.Push, j.RuleBook = sqldb.Sessions{DB: j.Answers.DB}, sqldb.Push{DB: j.Answers.DB}, sqldb.RuleBook{DB: j.Answers.DB}
	if err := migrate(ctx, j.Answers.DB, opts.Now); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("answer journal %s: %w", name, err)
	}
	if err := j.Answers.Prepare(ctx); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("answer journal %s: %w", name, err)
	}
	if j.id, err = sqldb.LoadIdentity(ctx, j.Answers.DB, opts.Host, opts.Now()); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("answer journal %s: %w", name, err)
	}
	if _, err := j.Answers.Reindex(ctx); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("answer journal %s: %w", name, err)
	}
	return j, nil
}

// Name is the database's URL without its password.
func (j *Journal) Name() string { return j.name }

// Identity is the journal's identity, shared by every replica on the
// database.
func (j *Journal) Identity() store.Identity { return j.id }

// Ping reports whether the journal takes answers (for /readyz): the
// database answers and, when a write met a storage fault (the server
// down, its disk full), a small write succeeds again; then the state
// changes the fault refused are written. Its error is a *store.Fault.
func (j *Journal) Ping(ctx context.Context) error {
	if err := j.pool.Ping(ctx); err != nil {
		return j.health.Wrap("ping", err)
	}
	return j.health.Check(ctx, j.probe)
}

// Close writes the state changes a storage fault refused, if the
// database takes writes again, and closes the connections. It may be
// called more than once.
func (j *Journal) Close() error {
	if waiting, _ := j.health.Backlog(); waiting > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), j.write)
		_ = j.Ping(ctx)
		cancel()
	}
	_ = j.sql.Close()
	j.pool.Close()
	return nil
}

// Redact is dbURL with its passwords replaced by "xxxxx", for messages
// and logs: the userinfo's, and the password and sslpassword parameters
// libpq and pgx also take from the query, or from a key=value connection
// string.
func Redact(dbURL string) string {
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		if r, ok := redactKeywords(dbURL); ok {
			return r
		}
		return "(a PostgreSQL connection string that does not parse)"
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(a PostgreSQL URL that does not parse)"
	}
	q := u.Query()
	changed := false
	for k := range q {
		if k == "password" || k == "sslpassword" {
			q.Set(k, "xxxxx")
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

func hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}
