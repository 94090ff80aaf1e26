package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// History narrows to the answers rules sent (any rule's, or one rule's),
// and RuleAnswers counts those an operator has not looked at: all of them
// until the operator looks, then those posted after what they saw, each
// operator on their own; a look at an earlier time keeps the later one;
// the count stops at store.RuleAnswersMax.
func testRuleAnswers(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	by := []string{"alice", store.RuleByPrefix + "A", store.RuleByPrefix + "B", store.RuleByPrefix + "A", "", "rules fan"}
	for i, who := range by {
		s := Submission(CmdID(i), T0.Add(time.Duration(i)*time.Second))
		s.By, s.Key.RequestID = who, "r"+CmdID(i)
		require.NoError(t, j.Record(s))
	}
	ids := func(q store.HistoryQuery) []string {
		t.Helper()
		p, err := j.History(ctx, q)
		require.NoError(t, err)
		var out []string
		for _, e := range p.Entries {
			out = append(out, e.Submission.CommandID)
		}
		return out
	}
	assert.Equal(t, []string{CmdID(3), CmdID(2), CmdID(1)}, ids(store.HistoryQuery{Rule: store.AnyRule}), "any rule's answers, newest first")
	assert.Equal(t, []string{CmdID(3), CmdID(1)}, ids(store.HistoryQuery{Rule: "A"}), "rule A's")
	assert.Empty(t, ids(store.HistoryQuery{Rule: "C"}))
	assert.Equal(t, []string{CmdID(2)}, ids(store.HistoryQuery{Rule: store.AnyRule, Since: T0.Add(2 * time.Second), Until: T0.Add(3 * time.Second)}), "with the other filters")
	assert.Len(t, ids(store.HistoryQuery{}), len(by), "no rule filter: every answer")

	count := func(op string) int {
		t.Helper()
		n, err := j.RuleAnswers(ctx, op)
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 3, count("alice"), "never looked: every answer a rule sent")
	require.NoError(t, j.SawRuleAnswers(ctx, "alice", T0.Add(2*time.Second)))
	assert.Equal(t, 1, count("alice"), "only the one posted after what alice saw")
	require.NoError(t, j.SawRuleAnswers(ctx, "alice", T0), "an earlier look, from another device")
	assert.Equal(t, 1, count("alice"), "the later look is kept")
	assert.Equal(t, 3, count("bob"), "each operator on their own")
	assert.Equal(t, 3, count(""), "the operator who gave no name too")
	require.NoError(t, j.SawRuleAnswers(ctx, "alice", T0.Add(time.Hour)))
	assert.Zero(t, count("alice"))

	for i := range store.RuleAnswersMax + 2 {
		s := Submission(CmdID(100+i), T0.Add(2*time.Hour+time.Duration(i)*time.Millisecond))
		s.By, s.Key.RequestID = store.RuleByPrefix+"A", "many"+CmdID(i)
		s.State = inbox.SubmissionAccepted
		require.NoError(t, j.Record(s))
	}
	assert.Equal(t, store.RuleAnswersMax, count("alice"), "counted up to the most a header shows")
}
