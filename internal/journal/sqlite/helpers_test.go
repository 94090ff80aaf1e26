package sqlite

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// t0 is the tests' epoch.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

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

// submission is a filled-in form post, command cmd, posted at.
func submission(cmd string, at time.Time) inbox.Submission {
	text := "ship it"
	return inbox.Submission{
		Card:      inbox.CardID("card-" + cmd),
		Key:       inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r-" + cmd},
		Fields:    []aep.FieldSpec{{ID: "name", Type: aep.FieldString, Label: "Name", Required: true}},
		Agent:     "builder",
		Question:  "Which release?",
		Token:     "tok-" + cmd,
		CommandID: cmd,
		Answer:    aep.Answer{Text: &text, Values: aep.Values{"name": "v1.2", "count": json.Number("3")}},
		Form:      url.Values{"f0": {"v1.2"}, "f1": {"3"}},
		By:        "alice",
		State:     inbox.SubmissionSending,
		At:        at,
	}
}

func cmdID(i int) string { return "cmd-" + strconv.Itoa(i) }

// undoMigration4 takes a journal's schema back from version 4 to 3 (its
// schema_migrations row is the caller's to delete).
const undoMigration4 = `DROP INDEX submissions_recorded;
	ALTER TABLE submissions DROP COLUMN kind;
	ALTER TABLE submissions DROP COLUMN options;
	ALTER TABLE submissions DROP COLUMN capture;
	ALTER TABLE submissions DROP COLUMN recorded;
	ALTER TABLE submissions DROP COLUMN recorded_at;
`
