package sqldb

import (
	"fmt"
	"strings"
)

// The journal's schema, written once for both backends: each backend's
// migrations are its own numbered steps (a database records how many it
// has applied), made of these parts in that backend's types. Times are
// unix nanoseconds and JSON is text on both, so the two read alike.

// Schema is what the schema writes differently on each backend: its
// types.
type Schema struct {
	// Int64 is the type of a time (unix nanoseconds) or a row number.
	Int64 string
	// Flag is the type of a yes/no column.
	Flag string
	// Bytes is the type of a byte string column, EmptyBytes its empty
	// value.
	Bytes, EmptyBytes string
	// Seq is an insertion-ordered key the database numbers and never
	// hands out again; ID one it numbers.
	Seq, ID string
	// Now is an expression for the current time in unix nanoseconds.
	Now string
	// Lock, when set, is run first in each migration step's
	// transaction: it holds off every other replica's migration until
	// that transaction ends (PostgreSQL's advisory lock). "": the
	// transaction alone (SQLite, whose file one process holds).
	Lock string
}

// SQLiteSchema is the schema in SQLite's types.
var SQLiteSchema = Schema{Int64: "INTEGER", Flag: "INTEGER", Bytes: "BLOB", EmptyBytes: "x''",
	Seq: "INTEGER PRIMARY KEY AUTOINCREMENT", ID: "INTEGER PRIMARY KEY",
	Now: "CAST(strftime('%s', 'now') AS INTEGER) * 1000000000"}

// PostgreSQLSchema is the schema in PostgreSQL's types.
var PostgreSQLSchema = Schema{Int64: "BIGINT", Flag: "BOOLEAN", Bytes: "BYTEA", EmptyBytes: "''::bytea",
	Seq: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", ID: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	Now: "(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint"}

// sql writes s in d's types.
func (d Schema) sql(s string) string {
	return strings.NewReplacer("{int64}", d.Int64, "{flag}", d.Flag, "{bytes}", d.Bytes, "{empty_bytes}", d.EmptyBytes,
		"{seq}", d.Seq, "{id}", d.ID, "{now}", d.Now).Replace(s)
}

// SharedSteps are the migration steps both backends take, in this
// order, after their own first ones: SQLite's steps 6 to 16,
// PostgreSQL's 3 to 13. A step for both is appended here.
func (d Schema) SharedSteps() []string {
	return []string{
		d.Push(),
		d.Lease(),
		Replaced,
		SearchVersion,
		d.Rules(),
		d.ScopedRules(),
		d.RuleLooks(),
		d.Marks(),
		d.RuleChanges(),
		d.RoutingLog(),
		d.People(),
	}
}

// Submissions is the journal's first tables: its identity, the answers
// (submissions) and their state changes.
func (d Schema) Submissions() string {
	return d.sql(`CREATE TABLE identity (
		id          INTEGER PRIMARY KEY CHECK (id = 1),
		instance_id TEXT NOT NULL,
		source      TEXT NOT NULL,
		host        TEXT NOT NULL,
		created_at  {int64} NOT NULL -- unix nanoseconds
	);
	CREATE TABLE submissions (
		seq        {seq}, -- insertion order
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
		posted_at  {int64} NOT NULL, -- unix nanoseconds
		state      TEXT NOT NULL, -- latest state
		reason     TEXT NOT NULL,
		detail     TEXT NOT NULL,
		settled_at {int64} NOT NULL -- 0 while sending
	);
	CREATE INDEX submissions_posted ON submissions (posted_at, seq);
	CREATE INDEX submissions_agent ON submissions (agent, posted_at, seq);
	CREATE INDEX submissions_session ON submissions (session, posted_at, seq);
	CREATE INDEX submissions_operator ON submissions (operator, posted_at, seq);
	CREATE INDEX submissions_state ON submissions (state, posted_at, seq);
	CREATE TABLE submission_states (
		id         {id},
		submission {int64} NOT NULL REFERENCES submissions (seq) ON DELETE CASCADE,
		state      TEXT NOT NULL,
		reason     TEXT NOT NULL,
		detail     TEXT NOT NULL,
		at         {int64} NOT NULL -- unix nanoseconds
	);
	CREATE INDEX submission_states_submission ON submission_states (submission, id);`)
}

// Command keeps the exact command bytes of each submission (empty for
// those recorded before: they are not sent again after a restart).
func (d Schema) Command() string {
	return d.sql(`ALTER TABLE submissions ADD COLUMN command {bytes} NOT NULL DEFAULT {empty_bytes};`)
}

// Sessions keeps the operators' sign-ins, by the SHA-256 of their id.
func (d Schema) Sessions() string {
	return d.sql(`CREATE TABLE sessions (
		id_hash    TEXT PRIMARY KEY, -- hex SHA-256 of the cookie's id
		operator   TEXT NOT NULL,
		secret     TEXT NOT NULL, -- fingerprint of the secret it was opened with
		user_agent TEXT NOT NULL,
		created_at {int64} NOT NULL, -- unix nanoseconds
		last_seen  {int64} NOT NULL  -- unix nanoseconds
	);
	CREATE INDEX sessions_operator ON sessions (operator);`)
}

// Recorded keeps what the agent recorded for each answer
// (attention.answered), which settles it for good, and what of its
// request shows the answer by its labels and its card again after a
// restart: kind, options, capture (” for those recorded before).
func (d Schema) Recorded() string {
	return d.sql(`ALTER TABLE submissions ADD COLUMN kind TEXT NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN options TEXT NOT NULL DEFAULT ''; -- JSON options of the request
	ALTER TABLE submissions ADD COLUMN capture TEXT NOT NULL DEFAULT ''; -- capture level name
	ALTER TABLE submissions ADD COLUMN recorded TEXT NOT NULL DEFAULT ''; -- JSON: what attention.answered recorded
	ALTER TABLE submissions ADD COLUMN recorded_at {int64} NOT NULL DEFAULT 0; -- unix nanoseconds; 0 until recorded
	CREATE INDEX submissions_recorded ON submissions (posted_at, seq) WHERE recorded_at != 0;`)
}

// Live holds at most one live submission (queued, sending or accepted)
// per request: a second one is refused with store.ErrLive.
const Live = `CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted');`

// Push is Web Push's: the VAPID key pair, made on first use; each
// operator's devices' subscriptions; one claim row per card and kind, so
// of several replicas one sends each push; which pages are visible, so
// no push goes to an operator who is looking.
func (d Schema) Push() string {
	return d.sql(`CREATE TABLE push_keys (
		id          INTEGER PRIMARY KEY CHECK (id = 1),
		private_key TEXT NOT NULL, -- base64url P-256 scalar
		public_key  TEXT NOT NULL, -- base64url uncompressed point
		created_at  {int64} NOT NULL
	);
	CREATE TABLE push_subscriptions (
		endpoint        TEXT PRIMARY KEY,
		p256dh          TEXT NOT NULL,
		auth            TEXT NOT NULL,
		operator        TEXT NOT NULL,
		session         TEXT NOT NULL, -- id hash of the sign-in that subscribed
		actions         {flag} NOT NULL, -- answering from notifications allowed
		created_at      {int64} NOT NULL,
		last_failure    TEXT NOT NULL,
		last_failure_at {int64} NOT NULL
	);
	CREATE INDEX push_subscriptions_session ON push_subscriptions (session);
	CREATE TABLE push_claims (
		card_id    TEXT NOT NULL,
		kind       TEXT NOT NULL,
		claimed_at {int64} NOT NULL,
		PRIMARY KEY (card_id, kind)
	);
	CREATE TABLE page_visibility (
		page_id    TEXT PRIMARY KEY,
		operator   TEXT NOT NULL,
		visible    {flag} NOT NULL,
		updated_at {int64} NOT NULL
	);
	CREATE INDEX page_visibility_operator ON page_visibility (operator, updated_at);`)
}

// Lease keeps the replica holding each live submission's resend lease
// and until when (Answers.Claim, Renew, Lapsed), and finds a submission
// by its form token (LookupToken), for a post repeated on another
// replica. Older rows hold no lease (lapsed): the next serve claims them.
func (d Schema) Lease() string {
	return d.sql(`ALTER TABLE submissions ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN lease_until {int64} NOT NULL DEFAULT 0; -- unix nanoseconds
	CREATE INDEX submissions_token ON submissions (card_id, token);`)
}

// Replaced marks an owed answer the operator explicitly replaced by a
// different one (reason 'replaced'): it leaves the one-live-answer rule,
// so its own late ack may still settle it (accepted) beside the live
// replacement. Any other second live answer is still refused.
const Replaced = `ALTER TABLE submissions ADD COLUMN replaced INTEGER NOT NULL DEFAULT 0; -- 1: replaced by the operator's different answer
	DROP INDEX submissions_live;
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted') AND replaced = 0;`

// SearchVersion keeps which store.SearchVersion each row's search text
// was written with; rows written before the labels were searched are 0,
// and opening the journal writes their search text again
// (Answers.Reindex), so History finds them by their labels.
const SearchVersion = `ALTER TABLE submissions ADD COLUMN search_version INTEGER NOT NULL DEFAULT 0;`

// Rules keeps standing answers: each rule and each request a rule
// answered (RuleBook). A deleted rule's row stays (state 'deleted'), so
// History can still name the rule that answered.
func (d Schema) Rules() string {
	return d.sql(`CREATE TABLE rules (
		id         TEXT PRIMARY KEY,
		name       TEXT NOT NULL,
		match      TEXT NOT NULL, -- JSON store.RuleMatch
		answer     TEXT NOT NULL, -- JSON aep.Answer
		note       TEXT NOT NULL,
		maker      TEXT NOT NULL,
		created_at {int64} NOT NULL,
		expires_at {int64} NOT NULL,
		state      TEXT NOT NULL, -- active, paused, deleted
		reason     TEXT NOT NULL, -- why paused, in the operator's words
		state_at   {int64} NOT NULL
	);
	CREATE INDEX rules_state ON rules (state, created_at);
	CREATE TABLE rule_uses (
		rule_id    TEXT NOT NULL REFERENCES rules (id),
		card_id    TEXT NOT NULL,
		source     TEXT NOT NULL,
		session    TEXT NOT NULL,
		request_id TEXT NOT NULL,
		command_id TEXT NOT NULL,
		at         {int64} NOT NULL,
		PRIMARY KEY (rule_id, source, session, request_id)
	);
	CREATE INDEX rule_uses_at ON rule_uses (rule_id, at);`)
}

// ScopedRules scopes rules to the question (store.RuleMatch.Scope, in
// the match's JSON) and keeps the card each was made from. Every rule
// kept before answered any question of its shape: each is paused, saying
// why (store.ReasonUnscoped), for its operators to review and resume;
// never kept answering wide, nor narrowed behind their backs.
func (d Schema) ScopedRules() string {
	return d.sql(`ALTER TABLE rules ADD COLUMN card_id TEXT NOT NULL DEFAULT '';
	CREATE INDEX rules_card ON rules (card_id);
	UPDATE rules SET state = 'paused',
		reason = 'Made before rules were scoped to the question: review and resume.',
		state_at = {now}
		WHERE state != 'deleted';`)
}

// RuleLooks keeps when each operator last looked at the answers rules
// sent (store.RuleLooks): the header counts those after it.
func (d Schema) RuleLooks() string {
	return d.sql(`CREATE TABLE rule_looks (
		operator TEXT PRIMARY KEY, -- "" for an operator who gave no name
		seen_at  {int64} NOT NULL  -- the last rule answer seen, posted_at
	);`)
}

// Marks keeps each question's claim ("I’m on it": who, since when, until
// when without their activity) and assignment (to whom, a person or a
// team, by whom, when), each with the order of its latest write (rev,
// unix nanoseconds): of replicas writing one card's, the latest wins.
func (d Schema) Marks() string {
	return d.sql(`CREATE TABLE card_marks (
		card_id       TEXT PRIMARY KEY,
		claimant      TEXT NOT NULL, -- "" when nobody is on it
		claimed_at    {int64} NOT NULL,
		claim_until   {int64} NOT NULL, -- lapses then without activity
		claim_rev     {int64} NOT NULL,
		assignee      TEXT NOT NULL, -- "" when not assigned
		assignee_kind TEXT NOT NULL, -- person or team
		assigned_by   TEXT NOT NULL,
		assigned_at   {int64} NOT NULL,
		assign_rev    {int64} NOT NULL
	);
	CREATE INDEX card_marks_claim ON card_marks (claim_until);`)
}

// RuleChanges keeps who paused, resumed or deleted each rule, and when
// (store.RuleChange): the Rules page and History say it. Changes made
// before are not known: a rule's row keeps only its latest state.
func (d Schema) RuleChanges() string {
	return d.sql(`CREATE TABLE rule_changes (
		id       {id},
		rule_id  TEXT NOT NULL REFERENCES rules (id),
		change   TEXT NOT NULL, -- paused, resumed, deleted
		operator TEXT NOT NULL, -- who; "" for aepforms itself
		reason   TEXT NOT NULL,
		at       {int64} NOT NULL -- unix nanoseconds
	);
	CREATE INDEX rule_changes_rule ON rule_changes (rule_id, id);`)
}

// RoutingLog keeps each question's routing history: the team a routes
// file sent it to (kind 'team') and each reminder and escalation sent
// (store.RoutingStep), kept as long as its card's answers are
// (Answers.Prune), so History shows them and filters by them. A row is
// also the claim of its step: of the replicas sharing the database, the
// one whose insert lands sends it. The routing's push claims kept before
// (push_claims, kinds routing:{team|reminded|escalated}:{team}) are
// carried over; those of its chat messages (routing:new:{team}) stay
// push claims, short-lived for their job.
func (d Schema) RoutingLog() string {
	move := func(prefix, kind string) string {
		n := len(prefix)
		return fmt.Sprintf(`INSERT INTO routing_steps (card_id, kind, team, at)
		SELECT card_id, '%s', substr(kind, %d), claimed_at FROM push_claims WHERE substr(kind, 1, %d) = '%s' AND length(kind) > %d;
	DELETE FROM push_claims WHERE substr(kind, 1, %d) = '%s';
	`, kind, n+1, n, prefix, n, n, prefix)
	}
	return d.sql(`CREATE TABLE routing_steps (
		card_id TEXT NOT NULL,
		kind    TEXT NOT NULL, -- team, reminded, escalated
		team    TEXT NOT NULL,
		at      {int64} NOT NULL, -- unix nanoseconds
		PRIMARY KEY (card_id, kind, team)
	);
	CREATE INDEX routing_steps_team ON routing_steps (kind, team);
	CREATE INDEX routing_steps_at ON routing_steps (at);
	` + move("routing:team:", "team") + move("routing:reminded:", "reminded") + move("routing:escalated:", "escalated"))
}

// People keeps the people the identity provider signed in (store.Person:
// their name, role and teams from their groups, when last seen), so
// team routing, the assign list and the admin's page know them between
// their sign-ins; and, on each sign-in there, its subject, its refresh
// token sealed, and when its role and teams were last read from the
// provider (a session of a secret keeps none of these).
func (d Schema) People() string {
	return d.sql(`CREATE TABLE people (
		name      TEXT PRIMARY KEY, -- as the UI shows it
		subject   TEXT NOT NULL, -- the provider's id of the account the name is
		role      TEXT NOT NULL,
		teams     TEXT NOT NULL, -- comma-separated
		last_seen {int64} NOT NULL -- unix nanoseconds
	);
	CREATE INDEX people_seen ON people (last_seen);
	ALTER TABLE sessions ADD COLUMN subject TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN refresh {bytes} NOT NULL DEFAULT {empty_bytes}; -- sealed, never the token itself
	ALTER TABLE sessions ADD COLUMN checked_at {int64} NOT NULL DEFAULT 0;`)
}
