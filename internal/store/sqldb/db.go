// Package sqldb is the store's queries, written once for database/sql
// and run on both backends (internal/store/sqlite, modernc.org/sqlite;
// internal/store/postgres, pgx's stdlib driver): the answers (the
// journal proper: Answers), the operators' sessions (Sessions) and the
// Web Push state (Push). A query is written with ? placeholders and
// rebound for the database (Dialect). The schema is written here once
// too, in each backend's types (Schema); each backend numbers its own
// migrations of it. What truly differs stays in the backends: how a
// process holds the database (SQLite's file lock, PostgreSQL's advisory
// lock), SQLite's group commit of Records and its unsynced connection,
// and how each driver's errors read (store.Health's classifier).
package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// Dialect is what the shared queries need to know of the database.
type Dialect struct {
	// Numbered: placeholders are $1, $2, … (PostgreSQL) rather than ?.
	Numbered bool
	// Instr is the function that finds a substring, (haystack, needle)
	// -> position or 0: "instr" (SQLite) or "strpos" (PostgreSQL).
	Instr string
	// IsLive reports the refusal of submissions_live, the unique index
	// that keeps one live submission per request.
	IsLive func(error) bool
	// LockRules, when set, is run first in the transaction that makes
	// or carries over a rule: it holds off every other maker, on every replica, until
	// that transaction ends (PostgreSQL: a transaction-level advisory
	// lock). "": the transaction alone serialises makers (SQLite's
	// BEGIN IMMEDIATE).
	LockRules string
}

// DB is one database as the shared queries use it. Its methods are safe
// for concurrent use.
type DB struct {
	// Synced is the connection pool whose commits wait for the disk.
	Synced *sql.DB
	// Lazy is the pool for writes a power loss may lose without harm
	// (Settle, KeepRecorded: they become durable with the next synced
	// commit, and a state lost only makes a restart send the same
	// command again, deduped by its id). SQLite: its synchronous=NORMAL
	// connections; PostgreSQL: Synced.
	Lazy *sql.DB
	// Dialect is the database's.
	Dialect Dialect
	// Timeout bounds each call made without a context (the inbox's:
	// Record, Settle, Unsettled, …): a database that stops answering
	// fails the call instead of holding the inbox. 0: no bound (SQLite,
	// whose busy timeout bounds a wait).
	Timeout time.Duration
	// WriteMu, when set, serialises this process's writes to the answers
	// (SQLite: they queue here rather than poll its busy handler, which
	// sleeps in steps of milliseconds). nil: none (PostgreSQL). Lock
	// order: Health's lock (Settle, KeepRecorded hold it while they
	// write) before WriteMu, never the other way: a method holding
	// WriteMu reports to Health only once it has let go of it.
	WriteMu *sync.Mutex
	// Wrote, when set, is called after each write WriteMu serialised,
	// once it is let go (SQLite counts them to checkpoint its log off the
	// writes' way). It must not block.
	Wrote func()
	// Health is the database's ability to write, as the writes find it.
	Health *store.Health

	// stmts are the answer path's statements, prepared on their pools
	// at open (Prepare).
	stmts map[stmtKey]*sql.Stmt

	// live reports a card this process still shows (Answers.KeepLiveCards).
	live atomic.Pointer[func(card string) bool]
}

// stmtKey names a statement prepared on a pool.
type stmtKey struct {
	pool  *sql.DB
	query string
}

// Prepare prepares the answer path's statements (a post's Record, the
// states after it) on the pools they run on, once, before any
// transaction holds a connection: a statement prepared on the pool from
// inside a transaction waits for a free connection, and when a burst of
// posts holds every one of the pool's connections (PostgreSQL's pool is
// bounded) none is ever let go. A backend calls it once its schema is
// in place, before the DB is used.
func (db *DB) Prepare(ctx context.Context) error {
	stmts := make(map[stmtKey]*sql.Stmt)
	for _, k := range []stmtKey{
		{db.Synced, insertSubmission}, {db.Synced, insertState},
		{db.Lazy, settleSubmission}, {db.Lazy, insertState},
	} {
		if stmts[k] != nil {
			continue // one pool for both (PostgreSQL)
		}
		st, err := k.pool.PrepareContext(ctx, db.Q(k.query))
		if err != nil {
			for _, st := range stmts {
				_ = st.Close()
			}
			return fmt.Errorf("journal: prepare: %w", err)
		}
		stmts[k] = st
	}
	db.stmts = stmts
	return nil
}

// prepared is query (rebound, Q) as a statement of tx, which runs on
// pool: the one Prepare made, which database/sql prepares on tx's own
// connection the first time that connection runs it, so a post's
// Record and the states after it do not parse their SQL each time. A
// query Prepare did not make is prepared on tx alone, never on the
// pool (whose connections tx may be waiting behind).
func (db *DB) prepared(ctx context.Context, tx *sql.Tx, pool *sql.DB, query string) (*sql.Stmt, error) {
	if st := db.stmts[stmtKey{pool, query}]; st != nil {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, db.Q(query))
}

// Q is query rebound for the dialect: each ? becomes $1, $2, … where
// placeholders are numbered. The queries here hold no ? in a literal.
func (db *DB) Q(query string) string {
	if !db.Dialect.Numbered || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ctx is the context of a call made without one, bounded by Timeout.
func (db *DB) ctx() (context.Context, context.CancelFunc) {
	if db.Timeout <= 0 {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), db.Timeout)
}

// bound is ctx bounded by Timeout too: a call whose caller gave a
// context without a deadline of its own still fails when the database
// stops answering.
func (db *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if db.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, db.Timeout)
}

// lockWrites takes WriteMu, if there is one, and returns its unlock.
func (db *DB) lockWrites() func() {
	if db.WriteMu == nil {
		return func() {}
	}
	db.WriteMu.Lock()
	return func() {
		db.WriteMu.Unlock()
		if db.Wrote != nil {
			db.Wrote()
		}
	}
}
