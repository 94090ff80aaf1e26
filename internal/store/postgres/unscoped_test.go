package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
	"github.com/aepforms/aepforms/internal/store/storetest"
)

// rulesScopedStep is the step that scoped rules to the question.
const rulesScopedStep = 8

// A rule journaled before rules were scoped to the question (answering
// any question of its shape) is paused by the upgrade, saying why, and
// keeps what it matched: never kept answering wide, never narrowed
// behind its operators' backs. A deleted one stays deleted.
func TestUnscopedRulesArePausedOnUpgrade(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Need(t).NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)`)
	require.NoError(t, err)
	for i := range rulesScopedStep - 1 {
		_, err = conn.Exec(ctx, migrations[i])
		require.NoError(t, err, "migration %d", i+1)
		_, err = conn.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)`, i+1)
		require.NoError(t, err)
	}
	const oldMatch = `{"kind":"permission","options":[{"id":"allow","label":"Allow once"},{"id":"deny","label":"Deny"}],"agent":"builder","prompt_contains":"npm"}`
	for _, r := range []struct{ id, state, reason string }{
		{"active", store.RuleActive, ""},
		{"paused", store.RulePaused, "Paused by alice."},
		{"deleted", store.RuleDeleted, ""},
	} {
		_, err = conn.Exec(ctx, `INSERT INTO rules (id, name, match, answer, note, maker, created_at, expires_at, state, reason, state_at)
			VALUES ($1, 'Allow once to permission requests', $2, '{"option":"allow"}', '', 'alice', 1, 9000000000000000000, $3, $4, 0)`,
			r.id, oldMatch, r.state, r.reason)
		require.NoError(t, err)
	}
	require.NoError(t, conn.Close(ctx))

	j := openURL(t, dbURL, Options{})
	for _, id := range []string{"active", "paused"} {
		r, found, err := j.Rule(ctx, id)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, store.RulePaused, r.State, id)
		assert.Equal(t, store.ReasonUnscoped, r.Reason, id)
		assert.False(t, r.StateAt.IsZero(), "%s: paused at the upgrade", id)
		assert.Equal(t, store.ScopeUnscoped, r.Match.Scope, "%s: what it matched is kept, not narrowed", id)
		assert.Equal(t, "npm", r.Match.PromptContains, id)
	}
	r, _, err := j.Rule(ctx, "deleted")
	require.NoError(t, err)
	assert.Equal(t, store.RuleDeleted, r.State)
	active, err := j.ActiveRules(ctx, storetest.T0)
	require.NoError(t, err)
	assert.Empty(t, active, "no rule made before scoping answers after the upgrade")
}
