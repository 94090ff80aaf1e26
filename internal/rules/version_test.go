package rules

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Version moves on with every rule made, paused, resumed or deleted
// through the Runner's Store, and with nothing else: the caches of drawn
// cards key on it.
func TestVersionMovesOnWithEveryRuleChange(t *testing.T) {
	t.Parallel()
	j := journal(t)
	r := New(Config{}, j, inbox.New(inbox.Options{Journal: j}), &sent{})
	ctx := context.Background()
	v := r.Version()
	moved := func(what string) {
		t.Helper()
		assert.Greater(t, r.Version(), v, what)
		v = r.Version()
	}
	makeRule(t, r.Store(), "R1", t0, nil)
	moved("made")
	_, err := r.Store().SetRuleState(ctx, "R1", store.RulePaused, "Paused by alice.", "", t0)
	require.NoError(t, err)
	moved("paused")
	_, err = r.Store().SetRuleState(ctx, "R1", store.RuleActive, "", "", t0)
	require.NoError(t, err)
	moved("resumed")
	_, _, err = r.Store().Rule(ctx, "R1")
	require.NoError(t, err)
	_, err = r.Store().Rules(ctx)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version(), "reads change nothing")
	_, err = r.Store().DeleteRule(ctx, "R1", "", t0)
	require.NoError(t, err)
	moved("deleted")
}
