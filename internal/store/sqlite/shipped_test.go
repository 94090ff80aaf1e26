package sqlite

import (
	"context"
	"database/sql"
	_ "embed"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/storetest"
)

// shippedV12 is the schema version 12's migrations wrote, as shipped:
// the journals in use today were made by it.
//
//go:embed testdata/schema-v12.sql
var shippedV12 string

// A journal made by version 12's migrations as they shipped (not by this
// build's steps) opens, is migrated to this build's version, and keeps
// its answers and rules; and this build's first 12 steps make the same
// schema, table for table and index for index.
func TestOpensAJournalMadeByVersion12(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	shipped := journalAt(t, path, shippedV12, 12)
	built := journalAt(t, filepath.Join(t.TempDir(), "built.db"), strings.Join(migrations[:12], "\n"), 12)
	assert.Equal(t, schemaOf(t, shipped), schemaOf(t, built), "this build's steps 1 to 12 make version 12's schema")

	_, err := shipped.Exec(`INSERT INTO identity (id, instance_id, source, host, created_at) VALUES (1, 'i1', 'aep://h/ui/aepforms/i1', 'h', 1)`)
	require.NoError(t, err)
	_, err = shipped.Exec(`INSERT INTO submissions (command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at, command, kind, options, capture)
		VALUES ('old', 'c', 't', 'aep://a', 's1', 'r1', 'builder', 'q', '[]', 'alice', '{}', '{"option":"allow"}', 'q', 5, 'sending', '', '', 0, x'7b7d', 'permission', '[]', 'full')`)
	require.NoError(t, err)
	_, err = shipped.Exec(`INSERT INTO rules (id, name, match, answer, note, maker, created_at, expires_at, state, reason, state_at, card_id)
		VALUES ('R1', 'Allow once', '{"kind":"permission","scope":"exact","question":"q"}', '{"option":"allow"}', '', 'alice', 1, 9000000000000000000, 'active', '', 1, 'c')`)
	require.NoError(t, err)
	require.NoError(t, shipped.Close())
	require.NoError(t, os.Chmod(path, 0o600))

	j := openAt(t, path, Options{Host: "h"})
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
	owed, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, owed, 1)
	assert.Equal(t, "old", owed[0].CommandID)
	assert.Equal(t, "{}", string(owed[0].Command), "the journaled command bytes")
	r, found, err := j.Rule(context.Background(), "R1")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, store.RuleActive, r.State, "a scoped rule stays active")
	assert.Equal(t, "c", r.Card)
	require.NoError(t, j.CreateRule(context.Background(), store.Rule{ID: "R2", Name: "Deny", Maker: "bob", Created: t0, Expires: t0.Add(time.Hour),
		Match: store.RuleMatch{Kind: aep.KindPermission, Scope: store.ScopeExact, Question: "q"}, Answer: aep.Answer{Option: "deny"}, State: store.RuleActive}, 0))
	require.NoError(t, j.Record(submission(cmdID(1), t0)))
	require.NoError(t, j.KeepClaim("c", inbox.Claim{By: "ann", At: t0, Until: t0.Add(time.Minute), Rev: 1}), "the claims' table is there")
	marks, err := j.Marks(t0)
	require.NoError(t, err)
	require.Len(t, marks, 1)
	assert.Equal(t, "ann", marks[0].Claim.By)
	// A rule kept before its changes were: bob's pause is kept with who
	// and when.
	paused, err := j.SetRuleState(context.Background(), "R1", store.RulePaused, "", "bob", t0)
	require.NoError(t, err)
	require.True(t, paused)
	r, _, err = j.Rule(context.Background(), "R1")
	require.NoError(t, err)
	require.Len(t, r.Changes, 1, "the rules' changes' table is there")
	assert.Equal(t, "bob", r.Changes[0].By)
}

// journalAt makes a journal at path by running schema, recording steps
// 1 to version as applied.
func journalAt(t *testing.T, path, schema string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`)
	require.NoError(t, err)
	_, err = db.Exec(schema)
	require.NoError(t, err)
	for v := 1; v <= version; v++ {
		_, err = db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, v)
		require.NoError(t, err)
	}
	return db
}

// schemaOf lists db's tables and indexes by their definitions, their
// comments, case and spacing aside.
func schemaOf(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
	require.NoError(t, err)
	defer rows.Close()
	comment, space := regexp.MustCompile(`--[^\n]*`), regexp.MustCompile(`\s+`)
	var out []string
	for rows.Next() {
		var typ, name, def string
		require.NoError(t, rows.Scan(&typ, &name, &def))
		def = space.ReplaceAllString(comment.ReplaceAllString(strings.ToLower(def), ""), " ")
		def = strings.NewReplacer(" ,", ",", "( ", "(", " )", ")").Replace(def)
		out = append(out, typ+" "+name+": "+def)
	}
	require.NoError(t, rows.Err())
	return out
}

// A journal of version 14, the one before the routing history had its
// own table, opens: the routing's push claims (a question's team, its
// reminders and escalations) are carried over to it with their times.
func TestOpensAJournalOfVersion14WithItsRouting(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	db := journalAt(t, path, strings.Join(migrations[:14], "\n"), 14)
	_, err := db.Exec(storetest.RoutingClaimsBefore)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, os.Chmod(path, 0o600))

	j := openAt(t, path, Options{Host: "h"})
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
	storetest.CheckRoutingCarriedOver(t, j)
}

// A journal of version 15, the one before the people the identity
// provider signed in were kept, opens and is migrated: its sessions
// still count (no subject, no refresh token, never checked), and the
// people are kept from then on.
func TestOpensAJournalMadeByVersion15(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	old := journalAt(t, path, strings.Join(migrations[:15], "\n"), 15)
	_, err := old.Exec(`INSERT INTO sessions (id_hash, operator, secret, user_agent, created_at, last_seen) VALUES ('h1', 'ann', 'fp', 'Firefox', 5, 6)`)
	require.NoError(t, err)
	require.NoError(t, old.Close())
	require.NoError(t, os.Chmod(path, 0o600))

	j := openAt(t, path, Options{Host: "h"})
	assert.Equal(t, SchemaVersion, appliedMigrations(t, j))
	ctx := context.Background()
	s, ok, err := j.LookupSession(ctx, "h1")
	require.NoError(t, err)
	require.True(t, ok, "the session of version 15 is kept")
	assert.Equal(t, "ann", s.Operator)
	assert.Empty(t, s.Subject)
	assert.Nil(t, s.Refresh)
	assert.True(t, s.Checked.IsZero())
	require.NoError(t, j.SeePerson(ctx, store.Person{Name: "ann", Role: "answerer", Teams: []string{"oncall"}, LastSeen: t0}), "the people's table is there")
	people, err := j.People(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, people, 1)
	assert.Equal(t, []string{"oncall"}, people[0].Teams)
}
