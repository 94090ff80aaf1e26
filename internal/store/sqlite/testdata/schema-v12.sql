-- The journal's schema at version 12, as that version's migrations wrote it
-- (one step after another): a sqlite database made by them, which every
-- later aepforms must open and migrate.
-- step 1
CREATE TABLE identity (
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
	CREATE INDEX submission_states_submission ON submission_states (submission, id);
-- step 2
ALTER TABLE submissions ADD COLUMN command BLOB NOT NULL DEFAULT x'';
-- step 3
CREATE TABLE sessions (
		id_hash    TEXT PRIMARY KEY, -- hex SHA-256 of the cookie's id
		operator   TEXT NOT NULL,
		secret     TEXT NOT NULL, -- fingerprint of the secret it was opened with
		user_agent TEXT NOT NULL,
		created_at INTEGER NOT NULL, -- unix nanoseconds
		last_seen  INTEGER NOT NULL  -- unix nanoseconds
	);
	CREATE INDEX sessions_operator ON sessions (operator);
-- step 4
ALTER TABLE submissions ADD COLUMN kind TEXT NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN options TEXT NOT NULL DEFAULT ''; -- JSON options of the request
	ALTER TABLE submissions ADD COLUMN capture TEXT NOT NULL DEFAULT ''; -- capture level name
	ALTER TABLE submissions ADD COLUMN recorded TEXT NOT NULL DEFAULT ''; -- JSON: what attention.answered recorded
	ALTER TABLE submissions ADD COLUMN recorded_at INTEGER NOT NULL DEFAULT 0; -- unix nanoseconds; 0 until recorded
	CREATE INDEX submissions_recorded ON submissions (posted_at, seq) WHERE recorded_at != 0;
-- step 5
INSERT INTO submission_states (submission, state, reason, detail, at)
		SELECT seq, 'superseded', '', '', CAST(strftime('%s', 'now') AS INTEGER) * 1000000000 FROM submissions o
		WHERE state IN ('queued', 'sending', 'accepted') AND EXISTS (SELECT 1 FROM submissions n
			WHERE n.source = o.source AND n.session = o.session AND n.request_id = o.request_id
			AND n.state IN ('queued', 'sending', 'accepted') AND n.seq > o.seq);
	UPDATE submissions SET state = 'superseded', reason = '', detail = '', settled_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000000000
		WHERE state IN ('queued', 'sending', 'accepted') AND EXISTS (SELECT 1 FROM submissions n
			WHERE n.source = submissions.source AND n.session = submissions.session AND n.request_id = submissions.request_id
			AND n.state IN ('queued', 'sending', 'accepted') AND n.seq > submissions.seq);
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted');
-- step 6
CREATE TABLE push_keys (
		id          INTEGER PRIMARY KEY CHECK (id = 1),
		private_key TEXT NOT NULL, -- base64url P-256 scalar
		public_key  TEXT NOT NULL, -- base64url uncompressed point
		created_at  INTEGER NOT NULL
	);
	CREATE TABLE push_subscriptions (
		endpoint        TEXT PRIMARY KEY,
		p256dh          TEXT NOT NULL,
		auth            TEXT NOT NULL,
		operator        TEXT NOT NULL,
		session         TEXT NOT NULL, -- id hash of the sign-in that subscribed
		actions         INTEGER NOT NULL, -- 1: answering from notifications allowed
		created_at      INTEGER NOT NULL,
		last_failure    TEXT NOT NULL,
		last_failure_at INTEGER NOT NULL
	);
	CREATE INDEX push_subscriptions_session ON push_subscriptions (session);
	CREATE TABLE push_claims (
		card_id    TEXT NOT NULL,
		kind       TEXT NOT NULL,
		claimed_at INTEGER NOT NULL,
		PRIMARY KEY (card_id, kind)
	);
	CREATE TABLE page_visibility (
		page_id    TEXT PRIMARY KEY,
		operator   TEXT NOT NULL,
		visible    INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
	CREATE INDEX page_visibility_operator ON page_visibility (operator, updated_at);
-- step 7
ALTER TABLE submissions ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0; -- unix nanoseconds
	CREATE INDEX submissions_token ON submissions (card_id, token);
-- step 8
ALTER TABLE submissions ADD COLUMN replaced INTEGER NOT NULL DEFAULT 0; -- 1: replaced by the operator's different answer
	DROP INDEX submissions_live;
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted') AND replaced = 0;
-- step 9
ALTER TABLE submissions ADD COLUMN search_version INTEGER NOT NULL DEFAULT 0;
-- step 10
CREATE TABLE rules (
		id         TEXT PRIMARY KEY,
		name       TEXT NOT NULL,
		match      TEXT NOT NULL, -- JSON store.RuleMatch
		answer     TEXT NOT NULL, -- JSON aep.Answer
		note       TEXT NOT NULL,
		maker      TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		state      TEXT NOT NULL, -- active, paused, deleted
		reason     TEXT NOT NULL, -- why paused, in the operator's words
		state_at   INTEGER NOT NULL
	);
	CREATE INDEX rules_state ON rules (state, created_at);
	CREATE TABLE rule_uses (
		rule_id    TEXT NOT NULL REFERENCES rules (id),
		card_id    TEXT NOT NULL,
		source     TEXT NOT NULL,
		session    TEXT NOT NULL,
		request_id TEXT NOT NULL,
		command_id TEXT NOT NULL,
		at         INTEGER NOT NULL,
		PRIMARY KEY (rule_id, source, session, request_id)
	);
	CREATE INDEX rule_uses_at ON rule_uses (rule_id, at);
-- step 11
ALTER TABLE rules ADD COLUMN card_id TEXT NOT NULL DEFAULT '';
	CREATE INDEX rules_card ON rules (card_id);
	UPDATE rules SET state = 'paused',
		reason = 'Made before rules were scoped to the question: review and resume.',
		state_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000000000
		WHERE state != 'deleted';
-- step 12
CREATE TABLE rule_looks (
		operator TEXT PRIMARY KEY, -- "" for an operator who gave no name
		seen_at  INTEGER NOT NULL  -- the last rule answer seen, posted_at
	);
