package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
)

// A rule whose maker gave no name is set by "an operator who gave no
// name", as a card and History say of an answer sent without one: one
// wording for the same operator.
func TestRulesMakerWithNoNameIsWordedAsACardWordsIt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	v := Rules([]store.Rule{
		{ID: "r1", Name: "Allow", Created: now, Expires: now.Add(time.Hour), Match: store.RuleMatch{Kind: "permission"}},
		{ID: "r2", Name: "Allow", Maker: "alice", Created: now, Expires: now.Add(time.Hour), Match: store.RuleMatch{Kind: "permission"}},
	}, RulesOptions{Now: now})
	require.Len(t, v.Rows, 2)
	assert.Equal(t, words.answered["no-name"], v.Rows[0].Maker)
	assert.Equal(t, "an operator who gave no name", v.Rows[0].Maker)
	assert.Equal(t, "alice", v.Rows[1].Maker)
}
