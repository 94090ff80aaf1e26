package rules

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// A rule made knowing its agent's connection answers a request only
// when the roster names the same connection for its session, and the
// Runner asks the roster (which may wait for the relay) only for a
// request the rule matches in all else.
func TestRunnerAsksTheConnectionOnlyOfARequestThatMatches(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	var asked atomic.Int64
	instance := "host/1"
	cfg := Config{Now: clk.Now, Claimant: func(context.Context, string) string { asked.Add(1); return instance }}
	r := New(cfg, j, in, &sent{})
	makeRule(t, j, "R1", t0, func(m *store.RuleMatch) {
		m.Agent, m.Scope, m.Question, m.Instance = "builder", store.ScopeExact, "May I run ls?", "host/1"
	})

	other := ask(t, in, "builder", "c1", "May I run rm?")
	r.Observe(ctx, other)
	assert.Nil(t, card(t, in, other.ID).Submission)
	assert.Zero(t, asked.Load(), "another question: the roster is not asked")

	same := ask(t, in, "builder", "c2", "May I run ls?")
	r.Observe(ctx, same)
	require.NotNil(t, card(t, in, same.ID).Submission, "the same question, the same connection")
	assert.Equal(t, int64(1), asked.Load())

	instance = "evil/2"
	claimed := ask(t, in, "builder", "c3", "May I run ls?")
	r.Observe(ctx, claimed)
	assert.Nil(t, card(t, in, claimed.ID).Submission, "another connection declaring the agent's name")
}
