package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/aepforms/aepforms/internal/store/sqldb"
)

// migrations are the journal's schema, one numbered step each: step i
// takes the schema from version i to i+1. Append only; a shipped step
// may be written anew only if it makes the same schema (a journal at
// each version is migrated by the steps after it;
// TestOpensAJournalMadeByVersion12 holds version 12's as shipped). The
// parts are sqldb's, shared with PostgreSQL, whose steps are numbered
// for that backend alone.
var migrations = append([]string{
	// 1: identity, submissions, their state changes.
	dialect.Submissions(),
	// 2: the exact command bytes of each submission.
	dialect.Command(),
	// 3: operator sessions (web's sign-ins).
	dialect.Sessions(),
	// 4: what the agent recorded for each answer.
	dialect.Recorded(),
	// 5: at most one live submission per request, enforced by the
	// database as PostgreSQL's is. A journal from before
	// one-answer-in-flight may hold two: all but the newest are
	// superseded first, the rule Inbox.Restore applies to them.
	`INSERT INTO submission_states (submission, state, reason, detail, at)
		SELECT seq, 'superseded', '', '', ` + dialect.Now + ` FROM submissions o
		WHERE state IN ('queued', 'sending', 'accepted') AND EXISTS (SELECT 1 FROM submissions n
			WHERE n.source = o.source AND n.session = o.session AND n.request_id = o.request_id
			AND n.state IN ('queued', 'sending', 'accepted') AND n.seq > o.seq);
	UPDATE submissions SET state = 'superseded', reason = '', detail = '', settled_at = ` + dialect.Now + `
		WHERE state IN ('queued', 'sending', 'accepted') AND EXISTS (SELECT 1 FROM submissions n
			WHERE n.source = submissions.source AND n.session = submissions.session AND n.request_id = submissions.request_id
			AND n.state IN ('queued', 'sending', 'accepted') AND n.seq > submissions.seq);
	` + sqldb.Live,
	// 6 to 16: Web Push, the resend lease, "Answer differently", the
	// search text's version, rules, rules scoped to the question, when
	// operators last looked at what rules answered, claims and
	// assignments, who paused, resumed or deleted a rule, the questions'
	// routing history, and the people the identity provider signed in.
}, dialect.SharedSteps()...)

// dialect is the schema in SQLite's types.
var dialect = sqldb.SQLiteSchema

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// migrate applies the steps the journal lacks (sqldb.DB.Migrate).
func migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	return (&sqldb.DB{Synced: db}).Migrate(ctx, dialect, migrations, now, func(v, known int) error {
		return explain(ErrTooNew, nil, "it was written by a newer aepforms (schema version %d; this one knows up to %d). Run that aepforms, or use another file", v, known)
	})
}
