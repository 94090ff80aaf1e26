package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store/storetest"
)

// t0 is the tests' epoch.
var t0 = storetest.T0

// submission is a filled-in form post, command cmd, posted at.
var submission = storetest.Submission

// cmdID is the i-th test command id.
var cmdID = storetest.CmdID

// tempPath is a journal path in a directory that does not exist yet.
func tempPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state", "aepforms", "aepforms.db")
}

// openAt opens the journal at path and closes it when the test ends.
func openAt(t testing.TB, path string, opts Options) *Journal {
	t.Helper()
	if opts.Host == "" {
		opts.Host = "testhost"
	}
	j, err := Open(path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// The journal's behaviour, shared with every backend, on a file.
func TestJournalSuite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Store {
		path := tempPath(t)
		return storetest.Store{
			Open: func() storetest.Backend { return openAt(t, path, Options{}) },
			OpenAs: func(replica string, lease time.Duration) storetest.Backend {
				return openAt(t, path, Options{Replica: replica, Lease: lease})
			},
		}
	})
}

// undoMigration6 takes a journal's schema back from version 6 to 5 (its
// push tables dropped).
const undoMigration6 = `DROP TABLE push_keys; DROP TABLE push_subscriptions; DROP TABLE push_claims; DROP TABLE page_visibility; `

// undoMigration4 takes a journal's schema back from version 4 to 3, with
// the lease step after it (its
// schema_migrations row is the caller's to delete).
const undoMigration4 = undoLease + `DROP INDEX submissions_recorded;
	ALTER TABLE submissions DROP COLUMN kind;
	ALTER TABLE submissions DROP COLUMN options;
	ALTER TABLE submissions DROP COLUMN capture;
	ALTER TABLE submissions DROP COLUMN recorded;
	ALTER TABLE submissions DROP COLUMN recorded_at;
`

// undoLease takes back the resend lease step (7), and the replaced
// mark (8) and the search version (9) after it, the newest; submissions_live must be dropped first.
const undoLease = undoSearchVersion + `ALTER TABLE submissions DROP COLUMN replaced;
	DROP INDEX submissions_token;
	ALTER TABLE submissions DROP COLUMN lease_owner;
	ALTER TABLE submissions DROP COLUMN lease_until;
`

// undoSearchVersion takes back step 9: the search version, and the
// rules (10) after it.
const undoSearchVersion = undoRules + `ALTER TABLE submissions DROP COLUMN search_version;
`

// undoRules takes back step 10: the rules and their uses,
// and the operators' looks at what rules answered (12) after it.
const undoRules = undoRuleLooks + `DROP TABLE rule_uses; DROP TABLE rules;
`

// undoRuleLooks takes back step 12: the operators' looks at
// what rules answered, and the steps after it.
const undoRuleLooks = undoMarks + `DROP TABLE rule_looks;
`

// undoMarks takes back step 13: the questions' claims and assignments,
// and the rules' changes (14) and the routing history (15) after it.
const undoMarks = undoRuleChanges + `DROP TABLE card_marks;
`

// undoRuleChanges takes back step 14: who paused, resumed or deleted a
// rule, and the routing history (15) and the people (16) after it.
const undoRuleChanges = undoRoutingLog + `DROP TABLE rule_changes;
`

// undoRoutingLog takes back step 15: the questions' routing history,
// and the people (16) after it.
const undoRoutingLog = undoPeople + `DROP TABLE routing_steps;
`

// undoPeople takes back step 16: the people the identity provider
// signed in, and what their sessions keep of it.
const undoPeople = `DROP TABLE people;
	ALTER TABLE sessions DROP COLUMN subject;
	ALTER TABLE sessions DROP COLUMN refresh;
	ALTER TABLE sessions DROP COLUMN checked_at;
`
