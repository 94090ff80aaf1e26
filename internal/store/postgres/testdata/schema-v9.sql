-- The journal's schema at version 9, as that version's migrations wrote it
-- (one step after another): a postgres database made by them, which every
-- later aepforms must open and migrate.
-- step 1
CREATE TABLE identity (
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
	CREATE INDEX sessions_operator ON sessions (operator);
-- step 2
ALTER TABLE submissions ADD COLUMN kind text NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN options text NOT NULL DEFAULT ''; -- JSON options of the request
	ALTER TABLE submissions ADD COLUMN capture text NOT NULL DEFAULT ''; -- capture level name
	ALTER TABLE submissions ADD COLUMN recorded text NOT NULL DEFAULT ''; -- JSON: what attention.answered recorded
	ALTER TABLE submissions ADD COLUMN recorded_at bigint NOT NULL DEFAULT 0; -- unix nanoseconds; 0 until recorded
	CREATE INDEX submissions_recorded ON submissions (posted_at, seq) WHERE recorded_at != 0;
-- step 3
CREATE TABLE push_keys (
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
	CREATE INDEX page_visibility_operator ON page_visibility (operator, updated_at);
-- step 4
ALTER TABLE submissions ADD COLUMN lease_owner text NOT NULL DEFAULT '';
	ALTER TABLE submissions ADD COLUMN lease_until bigint NOT NULL DEFAULT 0; -- unix nanoseconds
	CREATE INDEX submissions_token ON submissions (card_id, token);
-- step 5
ALTER TABLE submissions ADD COLUMN replaced integer NOT NULL DEFAULT 0; -- 1: replaced by the operator's different answer
	DROP INDEX submissions_live;
	CREATE UNIQUE INDEX submissions_live ON submissions (source, session, request_id) WHERE state IN ('queued', 'sending', 'accepted') AND replaced = 0;
-- step 6
ALTER TABLE submissions ADD COLUMN search_version integer NOT NULL DEFAULT 0;
-- step 7
CREATE TABLE rules (
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
	CREATE INDEX rule_uses_at ON rule_uses (rule_id, at);
-- step 8
ALTER TABLE rules ADD COLUMN card_id text NOT NULL DEFAULT '';
	CREATE INDEX rules_card ON rules (card_id);
	UPDATE rules SET state = 'paused',
		reason = 'Made before rules were scoped to the question: review and resume.',
		state_at = (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint
		WHERE state != 'deleted';
-- step 9
CREATE TABLE rule_looks (
		operator text PRIMARY KEY,
		seen_at  bigint NOT NULL
	);
