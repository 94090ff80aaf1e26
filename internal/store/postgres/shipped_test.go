package postgres

import (
	"context"
	_ "embed"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
	"github.com/aepforms/aepforms/internal/store/storetest"
)

// shippedV9 is the schema version 9's migrations wrote, as shipped: the
// databases in use today were made by it.
//
//go:embed testdata/schema-v9.sql
var shippedV9 string

// A database made by version 9's migrations as they shipped (not by this
// build's steps) opens, is migrated to this build's version, and keeps
// its answers and rules; and this build's first 9 steps make the same
// schema: the same columns (types, defaults, nullability), indexes and
// constraints.
func TestOpensADatabaseMadeByVersion9(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t)
	ctx := context.Background()
	shippedURL := c.NewDatabase(t)
	shipped := databaseAt(t, shippedURL, shippedV9, 9)
	built := databaseAt(t, c.NewDatabase(t), strings.Join(migrations[:9], "\n"), 9)
	assert.Equal(t, schemaOf(t, shipped), schemaOf(t, built), "this build's steps 1 to 9 make version 9's schema")

	_, err := shipped.Exec(ctx, `INSERT INTO identity (id, instance_id, source, host, created_at) VALUES (1, 'i1', 'aep://h/ui/aepforms/i1', 'h', 1)`)
	require.NoError(t, err)
	_, err = shipped.Exec(ctx, `INSERT INTO submissions (command_id, card_id, token, source, session, request_id, agent, question, fields, operator, form, answer, search, posted_at, state, reason, detail, settled_at, command, kind, options, capture)
		VALUES ('old', 'c', 't', 'aep://a', 's1', 'r1', 'builder', 'q', '[]', 'alice', '{}', '{"option":"allow"}', 'q', 5, 'sending', '', '', 0, '\x7b7d'::bytea, 'permission', '[]', 'full')`)
	require.NoError(t, err)
	_, err = shipped.Exec(ctx, `INSERT INTO rules (id, name, match, answer, note, maker, created_at, expires_at, state, reason, state_at, card_id)
		VALUES ('R1', 'Allow once', '{"kind":"permission","scope":"exact","question":"q"}', '{"option":"allow"}', '', 'alice', 1, 9000000000000000000, 'active', '', 1, 'c')`)
	require.NoError(t, err)
	require.NoError(t, shipped.Close(ctx))

	j := openURL(t, shippedURL, Options{Host: "h"})
	owed, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, owed, 1)
	assert.Equal(t, "old", owed[0].CommandID)
	assert.Equal(t, "{}", string(owed[0].Command), "the journaled command bytes")
	r, found, err := j.Rule(ctx, "R1")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, store.RuleActive, r.State, "a scoped rule stays active")
	assert.Equal(t, "c", r.Card)
	require.NoError(t, j.CreateRule(ctx, store.Rule{ID: "R2", Name: "Deny", Maker: "bob", Created: storetest.T0, Expires: storetest.T0.Add(time.Hour),
		Match: store.RuleMatch{Kind: aep.KindPermission, Scope: store.ScopeExact, Question: "q"}, Answer: aep.Answer{Option: "deny"}, State: store.RuleActive}, 0))
	require.NoError(t, j.Record(storetest.Submission(storetest.CmdID(1), storetest.T0)))
	require.NoError(t, j.KeepClaim("c", inbox.Claim{By: "ann", At: storetest.T0, Until: storetest.T0.Add(time.Minute), Rev: 1}), "the claims' table is there")
	marks, err := j.Marks(storetest.T0)
	require.NoError(t, err)
	require.Len(t, marks, 1)
	assert.Equal(t, "ann", marks[0].Claim.By)
	// A rule kept before its changes were: bob's pause is kept with who
	// and when.
	paused, err := j.SetRuleState(ctx, "R1", store.RulePaused, "", "bob", storetest.T0)
	require.NoError(t, err)
	require.True(t, paused)
	r, _, err = j.Rule(ctx, "R1")
	require.NoError(t, err)
	require.Len(t, r.Changes, 1, "the rules' changes' table is there")
	assert.Equal(t, "bob", r.Changes[0].By)
}

// databaseAt makes the database at dbURL by running schema, recording
// steps 1 to version as applied.
func databaseAt(t *testing.T, dbURL, schema string, version int) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	_, err = conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, schema)
	require.NoError(t, err)
	for v := 1; v <= version; v++ {
		_, err = conn.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)`, v)
		require.NoError(t, err)
	}
	return conn
}

// schemaOf lists the public schema's columns, in their tables' order,
// its indexes and its constraints, as the catalog defines them.
func schemaOf(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, q := range []string{
		`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') || ' ' || is_identity || ' ' || coalesce(identity_generation, '')
			FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
		`SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`,
		`SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
			WHERE connamespace = 'public'::regnamespace ORDER BY conrelid::regclass::text, conname`,
	} {
		rows, err := conn.Query(ctx, q)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		out = append(out, got...)
	}
	return out
}

// A database of version 11, the one before the routing history had its
// own table, opens: the routing's push claims (a question's team, its
// reminders and escalations) are carried over to it with their times.
func TestOpensADatabaseOfVersion11WithItsRouting(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t)
	dbURL := c.NewDatabase(t)
	db := databaseAt(t, dbURL, strings.Join(migrations[:11], "\n"), 11)
	_, err := db.Exec(context.Background(), storetest.RoutingClaimsBefore)
	require.NoError(t, err)
	require.NoError(t, db.Close(context.Background()))

	storetest.CheckRoutingCarriedOver(t, openURL(t, dbURL, Options{Host: "h"}))
}

// A database of version 12, the one before the people the identity
// provider signed in were kept, opens and is migrated: its sessions
// still count (no subject, no refresh token, never checked), and the
// people are kept from then on.
func TestOpensADatabaseMadeByVersion12(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t)
	ctx := context.Background()
	dbURL := c.NewDatabase(t)
	old := databaseAt(t, dbURL, strings.Join(migrations[:12], "\n"), 12)
	_, err := old.Exec(ctx, `INSERT INTO sessions (id_hash, operator, secret, user_agent, created_at, last_seen) VALUES ('h1', 'ann', 'fp', 'Firefox', 5, 6)`)
	require.NoError(t, err)
	require.NoError(t, old.Close(ctx))

	j := openURL(t, dbURL, Options{Host: "h"})
	s, ok, err := j.LookupSession(ctx, "h1")
	require.NoError(t, err)
	require.True(t, ok, "the session of version 12 is kept")
	assert.Equal(t, "ann", s.Operator)
	assert.Empty(t, s.Subject)
	assert.Nil(t, s.Refresh)
	assert.True(t, s.Checked.IsZero())
	require.NoError(t, j.SeePerson(ctx, store.Person{Name: "ann", Role: "answerer", Teams: []string{"oncall"}, LastSeen: storetest.T0}), "the people's table is there")
	people, err := j.People(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, people, 1)
	assert.Equal(t, []string{"oncall"}, people[0].Teams)
}
