package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations are the journal's schema, one numbered step each: step i
// takes the schema from version i to i+1. Append only; never edit a step
// that has shipped.
var migrations = []string{
	// 1: identity, submissions, their state changes.
	`CREATE TABLE identity (
		id          INTEGER PRIMARY KEY CHECK (id = 1),
		instance_id TEXT NOT NULL,
		source      TEXT NOT NULL,
		host        TEXT NOT NULL,
		created_at  INTEGER NOT NULL -- unix nanoseconds
	);
	CREATE TABLE submissions (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT, -- insertion order
		command_id TEXT NOT NULL UNIQUE,
		card_id    TEXT NOT NULL,
		token      TEXT NOT NULL,
		source     TEXT NOT NULL, -- the request's emitter
		session    TEXT NOT NULL,
		request_id TEXT NOT NULL,
		agent      TEXT NOT NULL,
		question   TEXT NOT NULL,
		fields     TEXT NOT NULL, -- JSON field specs
		operator   TEXT NOT NULL,
		form       TEXT NOT NULL, -- JSON: the post as the operator made it
		answer     TEXT NOT NULL, -- JSON: option, text, values as sent
		search     TEXT NOT NULL, -- store.SearchText
		posted_at  INTEGER NOT NULL, -- unix nanoseconds
		state      TEXT NOT NULL, -- latest state
		reason     TEXT NOT NULL,
		detail     TEXT NOT NULL,
		settled_at INTEGER NOT NULL -- 0 while sending
	);
	CREATE INDEX submissions_posted ON submissions (posted_at, seq);
	CREATE INDEX submissions_agent ON submissions (agent, posted_at, seq);
	CREATE INDEX submissions_session ON submissions (session, posted_at, seq);
	CREATE INDEX submissions_operator ON submissions (operator, posted_at, seq);
	CREATE INDEX submissions_state ON submissions (state, posted_at, seq);
	CREATE TABLE submission_states (
		id         INTEGER PRIMARY KEY,
		submission INTEGER NOT NULL REFERENCES submissions (seq) ON DELETE CASCADE,
		state      TEXT NOT NULL,
		reason     TEXT NOT NULL,
		detail     TEXT NOT NULL,
		at         INTEGER NOT NULL -- unix nanoseconds
	);
	CREATE INDEX submission_states_submission ON submission_states (submission, id);`,
	// 2: the exact command bytes of each submission (empty for those
	// recorded before: they are not sent again after a restart).
	`ALTER TABLE submissions ADD COLUMN command BLOB NOT NULL DEFAULT x'';`,
	// 3: operator sessions (web's sign-ins), by the SHA-256 of their id.
	`CREATE TABLE sessions (
		id_hash    TEXT PRIMARY KEY, -- hex SHA-256 of the cookie's id
		operator   TEXT NOT NULL,
		secret     TEXT NOT NULL, -- fingerprint of the secret it was opened with
		user_agent TEXT NOT NULL,
		created_at INTEGER NOT NULL, -- unix nanoseconds
		last_seen  INTEGER NOT NULL  -- unix nanoseconds
	);
	CREATE INDEX sessions_operator ON sessions (operator);`,
	// 4: what the agent recorded for each answer (attention.answered),
	// which settles it for good, and what of its request shows the answer
	// by its labels and its card again after a restart: kind, options,
	// capture ('' for those recorded before).
	`ALTER TABLE submissions ADD COLUMN kind TEXT NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN options TEXT NOT NULL DEFAULT ''; -- JSON options of the request
	ALTER TABLE submissions ADD COLUMN capture TEXT NOT NULL DEFAULT ''; -- capture level name
	ALTER TABLE submissions ADD COLUMN recorded TEXT NOT NULL DEFAULT ''; -- JSON: what attention.answered recorded
	ALTER TABLE submissions ADD COLUMN recorded_at INTEGER NOT NULL DEFAULT 0; -- unix nanoseconds; 0 until recorded
	CREATE INDEX submissions_recorded ON submissions (posted_at, seq) WHERE recorded_at != 0;`,
	// 5 (issue 16; version 4 is another branch's step, merged before
	// this one): at most one live submission (queued, sending or accepted) per
	// request, enforced by the database as PostgreSQL's is, so a second
	// one is refused with store.ErrLive. A journal from before
	// one-answer-in-flight may hold two: all but the newest are
	// superseded first, the rule Inbox.Restore applies to them.
	`INSERT INTO submission_states (submission, state, reason, detail, at)
		SELECT seq, 'superseded', '', '', CAST(strftime('%s', 'now') AS INTEGER) * 1000000000 FROM submissions o
		WHERE state IN ('queued', 'sending', 'accepted') AND EXISTS (SELECT 1 FROM submissions n
			WHERE n.source = o.source AND n.session = o.session AND n.request_id = o.request_id
			AND n.state IN ('queued', 'sending', 'accepted') AND n.seq > o.seq);
	UPDATE submissions SET state = 'superseded', reason = '', detail = '', settled_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000000000
		WHERE state IN ('queued', 'sending', 'accepted') AND EXISTS (SELECT 1 FROM submissions n
			WHERE n.source = submissions.source AND n.session = submissions.session AND n.request_id = submissions.request_id
			AND n.state IN ('queued', 'sending', 'accepted') AND n.seq > submissions.seq);
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted');`,
	// 6 (issue 17): Web Push. The VAPID key pair, made on first use; each
	// operator's devices' subscriptions; one claim row per card and kind,
	// so of several replicas one sends each push; which pages are visible,
	// so no push goes to an operator who is looking.
	pushSchema("INTEGER", "INTEGER"),
	// 7 (issue 16, replicas): the replica holding each live
	// submission's resend lease and until when (Journal.Claim, Renew,
	// Lapsed), and a submission found by its form token (LookupToken),
	// for a post repeated on another replica. Older rows hold no lease
	// (lapsed): the next serve claims them as before.
	`ALTER TABLE submissions ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0; -- unix nanoseconds
	CREATE INDEX submissions_token ON submissions (card_id, token);`,
	// 8 (issue 27, "Answer differently"): an owed answer the operator
	// explicitly replaced by a different one (reason 'replaced') is
	// marked, and leaves the one-live-answer rule: its own late ack may
	// still settle it (accepted) beside the live replacement. Any other
	// second live answer is still refused.
	`ALTER TABLE submissions ADD COLUMN replaced INTEGER NOT NULL DEFAULT 0; -- 1: replaced by the operator's different answer
	DROP INDEX submissions_live;
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted') AND replaced = 0;`,
	// 9 (issue 25): which store.SearchVersion each row's search text was
	// written with; rows written before the labels were searched are 0,
	// and opening the journal writes their search text again
	// (sqldb.Answers.Reindex), so History finds them by their labels.
	`ALTER TABLE submissions ADD COLUMN search_version INTEGER NOT NULL DEFAULT 0;`,
	// 10 (issue 26): standing answers (PostgreSQL's step 7): each rule
	// and each request a rule answered (sqldb.RuleBook).
	rulesSchema("INTEGER"),
	// 11 (issue 32; PostgreSQL's step 8): rules are scoped to the
	// question (store.RuleMatch.Scope, in the match's JSON) and keep the
	// card they were made from. Every rule kept before answered any
	// question of its shape: each is paused, saying why
	// (store.ReasonUnscoped), for its operators to review and resume;
	// never kept answering wide, nor narrowed behind their backs.
	`ALTER TABLE rules ADD COLUMN card_id TEXT NOT NULL DEFAULT '';
	CREATE INDEX rules_card ON rules (card_id);
	UPDATE rules SET state = 'paused',
		reason = 'Made before rules were scoped to the question: review and resume.',
		state_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000000000
		WHERE state != 'deleted';`,
	// 12 (issue 32; PostgreSQL's step 9): when each operator last looked
	// at the answers rules sent (store.RuleLooks): the header counts
	// those after it.
	`CREATE TABLE rule_looks (
		operator TEXT PRIMARY KEY, -- "" for an operator who gave no name
		seen_at  INTEGER NOT NULL  -- the last rule answer seen, posted_at
	);`,
}

// rulesSchema is step 10, written once for both time column types so
// it reads as PostgreSQL's step 7. A deleted rule's row stays (state
// 'deleted'), so History can still name the rule that answered.
func rulesSchema(nanos string) string {
	return `CREATE TABLE rules (
		id         TEXT PRIMARY KEY,
		name       TEXT NOT NULL,
		match      TEXT NOT NULL, -- JSON store.RuleMatch
		answer     TEXT NOT NULL, -- JSON aep.Answer
		note       TEXT NOT NULL,
		maker      TEXT NOT NULL,
		created_at ` + nanos + ` NOT NULL,
		expires_at ` + nanos + ` NOT NULL,
		state      TEXT NOT NULL, -- active, paused, deleted
		reason     TEXT NOT NULL, -- why paused, in the operator's words
		state_at   ` + nanos + ` NOT NULL
	);
	CREATE INDEX rules_state ON rules (state, created_at);
	CREATE TABLE rule_uses (
		rule_id    TEXT NOT NULL REFERENCES rules (id),
		card_id    TEXT NOT NULL,
		source     TEXT NOT NULL,
		session    TEXT NOT NULL,
		request_id TEXT NOT NULL,
		command_id TEXT NOT NULL,
		at         ` + nanos + ` NOT NULL,
		PRIMARY KEY (rule_id, source, session, request_id)
	);
	CREATE INDEX rule_uses_at ON rule_uses (rule_id, at);`
}

// pushSchema is step 6, written once for both column types of a time
// and a flag so it reads as PostgreSQL's step 3.
func pushSchema(nanos, flag string) string {
	return `CREATE TABLE push_keys (
		id          INTEGER PRIMARY KEY CHECK (id = 1),
		private_key TEXT NOT NULL, -- base64url P-256 scalar
		public_key  TEXT NOT NULL, -- base64url uncompressed point
		created_at  ` + nanos + ` NOT NULL
	);
	CREATE TABLE push_subscriptions (
		endpoint        TEXT PRIMARY KEY,
		p256dh          TEXT NOT NULL,
		auth            TEXT NOT NULL,
		operator        TEXT NOT NULL,
		session         TEXT NOT NULL, -- id hash of the sign-in that subscribed
		actions         ` + flag + ` NOT NULL, -- 1: answering from notifications allowed
		created_at      ` + nanos + ` NOT NULL,
		last_failure    TEXT NOT NULL,
		last_failure_at ` + nanos + ` NOT NULL
	);
	CREATE INDEX push_subscriptions_session ON push_subscriptions (session);
	CREATE TABLE push_claims (
		card_id    TEXT NOT NULL,
		kind       TEXT NOT NULL,
		claimed_at ` + nanos + ` NOT NULL,
		PRIMARY KEY (card_id, kind)
	);
	CREATE TABLE page_visibility (
		page_id    TEXT PRIMARY KEY,
		operator   TEXT NOT NULL,
		visible    ` + flag + ` NOT NULL,
		updated_at ` + nanos + ` NOT NULL
	);
	CREATE INDEX page_visibility_operator ON page_visibility (operator, updated_at);`
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// migrate applies the steps the journal lacks, each in its own
// transaction with its row in schema_migrations, so a crash leaves a
// whole number of steps applied.
func migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return err
	}
	for {
		done, err := migrateOne(ctx, db, now)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next step, or reports there is none.
func migrateOne(ctx context.Context, db *sql.DB, now func() time.Time) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return false, err
	}
	if v > len(migrations) {
		return false, explain(ErrTooNew, nil, "it was written by a newer aepforms (schema version %d; this one knows up to %d). Run that aepforms, or use another file", v, len(migrations))
	}
	if v == len(migrations) {
		return true, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("migration %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v+1, now().UnixNano()); err != nil {
		return false, fmt.Errorf("migration %d: %w", v+1, err)
	}
	return false, tx.Commit()
}
