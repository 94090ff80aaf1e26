package rules

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// A claim left without an answer (its process stopped between the claim
// and the answer's record) is answered under the claim's command id, once:
// at once by a Runner on a journal only its process opens, for a claim
// made before it started; after ClaimLapse by a replica on a shared one.
func TestCutOffClaimIsAnsweredUnderItsCommandID(t *testing.T) {
	for _, tc := range []struct {
		name      string
		exclusive bool
	}{{"one process", true}, {"replicas", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := &clock{t: t0}
			j := journal(t)
			in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
			makeRule(t, j, "R1", t0, nil)
			c := ask(t, in, "builder", "q1", "May I run ls?")
			// The stopped process's claim.
			claimed, err := j.ClaimRuleUse(ctx, store.RuleUse{Rule: "R1", Card: string(c.ID), Source: c.Key.Source, Session: c.Key.Session,
				RequestID: c.Key.RequestID, CommandID: "cmd-cut", At: clk.Now()}, clk.Now())
			require.NoError(t, err)
			require.True(t, claimed)
			clk.Add(time.Second)

			out := &sent{}
			r := New(Config{Now: clk.Now, Exclusive: tc.exclusive, ClaimLapse: 10 * time.Second}, j, in, out)
			r.Observe(ctx, card(t, in, c.ID))
			if !tc.exclusive {
				assert.Empty(t, out.all(), "another replica may still be answering it")
				clk.Add(10 * time.Second)
				r.answerOrphans(ctx)
			}
			got := out.all()
			require.Len(t, got, 1, "the claim's answer")
			assert.Equal(t, "cmd-cut", got[0].CommandID, "under the claim's command id")
			assert.Equal(t, By("R1"), card(t, in, c.ID).Submission.By)
			r.answerOrphans(ctx)
			assert.Len(t, out.all(), 1, "once")
			n, err := j.RuleUses(ctx, "R1", t0)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
		})
	}
}
