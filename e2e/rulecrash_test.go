//go:build unix

package e2e

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// A rule's claim is an answer owed. serve killed (SIGKILL) between a
// rule's claim of a request and its answer, then started again on the
// same journal: nothing was sent before the kill; after the restart the
// rule's answer is sent, once, under the claim's command id (the Rules
// page counts a claim only once the journal holds an answer under its
// command id, and a request is claimed once), and the card says the rule
// answered it. The rule is kept and still answers the next matching
// request.
func TestServeKilledBetweenARulesClaimAndItsAnswer(t *testing.T) {
	t.Parallel()
	r := newCrashRig(t, buildCrashBinary(t, t.TempDir()))
	first, proc := r.serve(t, "ui (armed: "+crashpoint.RuleClaimed+")", crashpoint.RuleClaimed)
	maker := first.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, maker, agent.ScenarioPermission)
	first.makeRuleFromCard(t, maker, sess.ID)
	ruleAnswer := answerOf(t, commandsTo(maker, sess.ID)[0].Raw)

	ag := first.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	claimed, req := askedRequest(t, ag, agent.ScenarioPermission)
	proc.awaitKilled(t, crashpoint.RuleClaimed)
	assert.Empty(t, commandsTo(ag, claimed.ID), "killed before the answer was journaled: nothing sent")

	second, _ := r.serve(t, "ui (restarted)", "")
	assertRuleAnsweredOnce(t, second, ag, claimed.ID, req.ID, ruleAnswer)

	// The rule still answers a request asked after the restart.
	after := second.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	next, _ := askedRequest(t, after, agent.ScenarioPermission)
	got := awaitCommands(t, after, next.ID, 1, nil)
	require.Len(t, got, 1, "the rule answers after the restart")
	second.awaitCard(t, next.ID, "answered by the rule", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="answered-by-rule"]`).Length() == 1
	})
	awaitHistory(t, second, func(rows []historyRow) bool { return len(rows) == 3 })
	list := second.rulesPage(t)
	require.Equal(t, 1, list.Length(), "the rule is kept")
	assert.NotContains(t, strings.ToLower(list.Find(`[data-testid="rule-state"]`).Text()), "paused")
	assert.Equal(t, "2 times", strings.TrimSpace(list.Find(`[data-testid="rule-uses-count"]`).Text()),
		"the claimed request and the next one, each under its claim's command id")
}

// The same on two replicas sharing a PostgreSQL journal, both armed:
// whichever claims the request dies at its claim (the other's claim is
// refused, so it never reaches the crash point), and the survivor, once
// the claim is older than the lease, answers the request under the
// claim's command id, once.
func TestReplicaKilledBetweenARulesClaimAndItsAnswer(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	r := newCrashRig(t, buildCrashBinary(t, t.TempDir()))
	r.db = db
	r.args = []string{"--lease", "1s", "--rule-retry-interval", "200ms"}
	a, procA := r.serve(t, "replica a (armed: "+crashpoint.RuleClaimed+")", crashpoint.RuleClaimed)
	b, procB := r.serve(t, "replica b (armed: "+crashpoint.RuleClaimed+")", crashpoint.RuleClaimed)
	maker := a.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, maker, agent.ScenarioPermission)
	a.makeRuleFromCard(t, maker, sess.ID)
	ruleAnswer := answerOf(t, commandsTo(maker, sess.ID)[0].Raw)

	ag := a.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	claimed, req := askedRequest(t, ag, agent.ScenarioPermission)
	survivor := b
	select {
	case <-procA.done:
		procA.awaitKilled(t, crashpoint.RuleClaimed)
	case <-procB.done:
		procB.awaitKilled(t, crashpoint.RuleClaimed)
		survivor = a
	case <-t.Context().Done():
	}
	assertRuleAnsweredOnce(t, survivor, ag, claimed.ID, req.ID, ruleAnswer)
	awaitHistory(t, survivor, func(rows []historyRow) bool { return len(rows) == 2 })
	list := survivor.rulesPage(t)
	require.Equal(t, 1, list.Length())
	assert.Equal(t, "1 time", strings.TrimSpace(list.Find(`[data-testid="rule-uses-count"]`).Text()),
		"the claimed request, answered under its claim's command id")
}

// assertRuleAnsweredOnce waits until the agent executed the rule's
// answer to the claimed request, and checks it is the only command, that
// the card says the rule answered it, and that History holds that
// command accepted.
func assertRuleAnsweredOnce(t *testing.T, s *stack, ag *agent.Agent, session, requestID, ruleAnswer string) {
	t.Helper()
	got := awaitCommands(t, ag, session, 1, nil)
	require.Len(t, got, 1, "one command for the claimed request: %+v", got)
	assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "executed: %+v", got[0].Decision)
	assert.Equal(t, requestID, got[0].Subject)
	assert.Equal(t, ruleAnswer, answerOf(t, got[0].Raw), "the rule's answer")
	s.awaitCard(t, session, "answered by the rule", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="answered-by-rule"]`).Length() == 1
	})
	awaitHistory(t, s, func(rows []historyRow) bool {
		for _, row := range rows {
			if row.CommandID == got[0].ID {
				return row.State == "accepted"
			}
		}
		return false
	})
	assert.Len(t, commandsTo(ag, session), 1, "still one command")
}
