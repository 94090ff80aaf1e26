package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLock is the advisory lock key every replica takes before it
// reads or changes the schema ("aepforms" in ASCII, as a bigint).
const migrationLock int64 = 0x6165_7066_6f72_6d73

// lockRules holds rule makers one at a time across replicas, so the
// cap's count and the insert are one step (sqldb.RuleBook.CreateRule);
// its key is "aeprules" in ASCII.
const lockRules = `SELECT pg_advisory_xact_lock(x'61657072756c6573'::bigint)`

// migrations are the journal's schema, one numbered step each: step i
// takes the schema from version i to i+1. Append only; never edit a step
// that has shipped. They follow the SQLite journal's (times in unix
// nanoseconds, JSON as text), so the two backends read alike; the
// steps themselves are numbered for this backend alone.
var migrations = []string{
	// 1: identity, submissions, their state changes, the command bytes,
	// operator sessions (SQLite's steps 1 to 3), and at most one live
	// submission per request (its step 5).
	`CREATE TABLE identity (
		id          integer PRIMARY KEY CHECK (id = 1),
		instance_id text NOT NULL,
		source      text NOT NULL,
		host        text NOT NULL,
		created_at  bigint NOT NULL -- unix nanoseconds
	);
	CREATE TABLE submissions (
		seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
		command_id text NOT NULL UNIQUE,
		card_id    text NOT NULL,
		token      text NOT NULL,
		source     text NOT NULL, -- the request's emitter
		session    text NOT NULL,
		request_id text NOT NULL,
		agent      text NOT NULL,
		question   text NOT NULL,
		fields     text NOT NULL, -- JSON field specs
		operator   text NOT NULL,
		form       text NOT NULL, -- JSON: the post as the operator made it
		answer     text NOT NULL, -- JSON: option, text, values as sent
		search     text NOT NULL, -- store.SearchText
		posted_at  bigint NOT NULL, -- unix nanoseconds
		state      text NOT NULL, -- latest state
		reason     text NOT NULL,
		detail     text NOT NULL,
		settled_at bigint NOT NULL, -- 0 while sending
		command    bytea NOT NULL DEFAULT ''::bytea
	);
	CREATE INDEX submissions_posted ON submissions (posted_at, seq);
	CREATE INDEX submissions_agent ON submissions (agent, posted_at, seq);
	CREATE INDEX submissions_session ON submissions (session, posted_at, seq);
	CREATE INDEX submissions_operator ON submissions (operator, posted_at, seq);
	CREATE INDEX submissions_state ON submissions (state, posted_at, seq);
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted');
	CREATE TABLE submission_states (
		id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		submission bigint NOT NULL REFERENCES submissions (seq) ON DELETE CASCADE,
		state      text NOT NULL,
		reason     text NOT NULL,
		detail     text NOT NULL,
		at         bigint NOT NULL -- unix nanoseconds
	);
	CREATE INDEX submission_states_submission ON submission_states (submission, id);
	CREATE TABLE sessions (
		id_hash    text PRIMARY KEY, -- hex SHA-256 of the cookie's id
		operator   text NOT NULL,
		secret     text NOT NULL, -- fingerprint of the secret it was opened with
		user_agent text NOT NULL,
		created_at bigint NOT NULL, -- unix nanoseconds
		last_seen  bigint NOT NULL  -- unix nanoseconds
	);
	CREATE INDEX sessions_operator ON sessions (operator);`,
	// 2: what the agent recorded for each answer (attention.answered),
	// and the request's kind, options and capture level (SQLite's step 4).
	`ALTER TABLE submissions ADD COLUMN kind text NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN options text NOT NULL DEFAULT ''; -- JSON options of the request
	ALTER TABLE submissions ADD COLUMN capture text NOT NULL DEFAULT ''; -- capture level name
	ALTER TABLE submissions ADD COLUMN recorded text NOT NULL DEFAULT ''; -- JSON: what attention.answered recorded
	ALTER TABLE submissions ADD COLUMN recorded_at bigint NOT NULL DEFAULT 0; -- unix nanoseconds; 0 until recorded
	CREATE INDEX submissions_recorded ON submissions (posted_at, seq) WHERE recorded_at != 0;`,
	// 3: Web Push (SQLite's step 6): the VAPID key pair, the devices'
	// subscriptions, one claim per card and kind so one replica sends
	// each push, and which operators' pages are visible.
	`CREATE TABLE push_keys (
		id          integer PRIMARY KEY CHECK (id = 1),
		private_key text NOT NULL, -- base64url P-256 scalar
		public_key  text NOT NULL, -- base64url uncompressed point
		created_at  bigint NOT NULL
	);
	CREATE TABLE push_subscriptions (
		endpoint        text PRIMARY KEY,
		p256dh          text NOT NULL,
		auth            text NOT NULL,
		operator        text NOT NULL,
		session         text NOT NULL, -- id hash of the sign-in that subscribed
		actions         boolean NOT NULL, -- answering from notifications allowed
		created_at      bigint NOT NULL,
		last_failure    text NOT NULL,
		last_failure_at bigint NOT NULL
	);
	CREATE INDEX push_subscriptions_session ON push_subscriptions (session);
	CREATE TABLE push_claims (
		card_id    text NOT NULL,
		kind       text NOT NULL,
		claimed_at bigint NOT NULL,
		PRIMARY KEY (card_id, kind)
	);
	CREATE TABLE page_visibility (
		page_id    text PRIMARY KEY,
		operator   text NOT NULL,
		visible    boolean NOT NULL,
		updated_at bigint NOT NULL
	);
	CREATE INDEX page_visibility_operator ON page_visibility (operator, updated_at);`,
	// 4 (issue 16, replicas): the replica holding each live
	// submission's resend lease and until when (SQLite's step 7), and a
	// submission found by its form token.
	`ALTER TABLE submissions ADD COLUMN lease_owner text NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN lease_until bigint NOT NULL DEFAULT 0; -- unix nanoseconds
	CREATE INDEX submissions_token ON submissions (card_id, token);`,
	// 5 (issue 27, "Answer differently"; SQLite's step 8): an owed
	// answer the operator explicitly replaced (reason 'replaced') leaves
	// the one-live-answer rule, so its own late ack may still settle it.
	`ALTER TABLE submissions ADD COLUMN replaced integer NOT NULL DEFAULT 0; -- 1: replaced by the operator's different answer
	DROP INDEX submissions_live;
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted') AND replaced = 0;`,
	// 6 (issue 25; SQLite's step 9): which store.SearchVersion each row's
	// search text was written with; older rows are 0 and written again
	// on open (sqldb.Answers.Reindex), so History finds them by labels.
	`ALTER TABLE submissions ADD COLUMN search_version integer NOT NULL DEFAULT 0;`,
	// 7 (issue 26; SQLite's step 10): standing answers, each rule and
	// each request a rule answered (sqldb.RuleBook).
	`CREATE TABLE rules (
		id         text PRIMARY KEY,
		name       text NOT NULL,
		match      text NOT NULL, -- JSON store.RuleMatch
		answer     text NOT NULL, -- JSON aep.Answer
		note       text NOT NULL,
		maker      text NOT NULL,
		created_at bigint NOT NULL,
		expires_at bigint NOT NULL,
		state      text NOT NULL, -- active, paused, deleted
		reason     text NOT NULL, -- why paused, in the operator's words
		state_at   bigint NOT NULL
	);
	CREATE INDEX rules_state ON rules (state, created_at);
	CREATE TABLE rule_uses (
		rule_id    text NOT NULL REFERENCES rules (id),
		card_id    text NOT NULL,
		source     text NOT NULL,
		session    text NOT NULL,
		request_id text NOT NULL,
		command_id text NOT NULL,
		at         bigint NOT NULL,
		PRIMARY KEY (rule_id, source, session, request_id)
	);
	CREATE INDEX rule_uses_at ON rule_uses (rule_id, at);`,
	// 8 (issue 32; SQLite's step 11): rules are scoped to the question
	// (store.RuleMatch.Scope) and keep the card they were made from;
	// every rule kept before is paused, saying why (store.ReasonUnscoped),
	// never kept answering wide, nor narrowed behind its operators' backs.
	`ALTER TABLE rules ADD COLUMN card_id text NOT NULL DEFAULT '';
	CREATE INDEX rules_card ON rules (card_id);
	UPDATE rules SET state = 'paused',
		reason = 'Made before rules were scoped to the question: review and resume.',
		state_at = (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint
		WHERE state != 'deleted';`,
	// 9 (issue 32; SQLite's step 12): when each operator last looked at
	// the answers rules sent (store.RuleLooks): the header counts those
	// after it.
	`CREATE TABLE rule_looks (
		operator text PRIMARY KEY,
		seen_at  bigint NOT NULL
	);`,
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// migrate applies the steps the database lacks, each in its own
// transaction with its row in schema_migrations. Every step's
// transaction first takes the advisory lock, so replicas starting
// together apply each step once: the others wait, then find it done.
func migrate(ctx context.Context, pool *pgxpool.Pool, now func() time.Time) error {
	for {
		done, err := migrateOne(ctx, pool, now)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next step, or reports there is none.
func migrateOne(ctx context.Context, pool *pgxpool.Pool, now func() time.Time) (done bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		// Under the lock: CREATE TABLE IF NOT EXISTS is not safe against
		// a concurrent one by itself.
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at bigint NOT NULL
		)`); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("%w: the database was migrated by a newer aepforms (schema version %d; this one knows up to %d). Run that aepforms, or use another database", ErrTooNew, v, len(migrations))
		}
		if v == len(migrations) {
			done = true
			return nil
		}
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, v+1, now().UnixNano()); err != nil {
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
		return nil
	})
	return done, err
}
