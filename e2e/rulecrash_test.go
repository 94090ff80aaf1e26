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
)

// serve killed (SIGKILL) between a rule's claim of a request and its
// answer, then started again on the same journal: nothing was sent for
// that request, and the operator finds it waiting, answerable, not said
// to be answered by the rule; what they send is executed once. The rule
// itself is kept and still answers the next matching request, so the
// crash cost one request's standing answer, not the rule (README, Rules:
// "A replica that stops between the claim and the answer leaves that
// request to you").
func TestServeKilledBetweenARulesClaimAndItsAnswer(t *testing.T) {
	t.Parallel()
	r := newCrashRig(t, buildCrashBinary(t, t.TempDir()))
	first, proc := r.serve(t, "ui (armed: "+crashpoint.RuleClaimed+")", crashpoint.RuleClaimed)
	maker := first.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, maker, agent.ScenarioPermission)
	first.makeRuleFromCard(t, maker, sess.ID)

	ag := first.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	claimed, req := askedRequest(t, ag, agent.ScenarioPermission)
	proc.awaitKilled(t, crashpoint.RuleClaimed)
	assert.Empty(t, commandsTo(ag, claimed.ID), "killed before the answer was journaled: nothing sent")

	second, _ := r.serve(t, "ui (restarted)", "")
	// The rule still answers: a request asked after the restart is
	// answered by it. The restarted UI's rules look at requests in the
	// order they arrive, so by then it has looked at the claimed one too.
	after := second.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	next, _ := askedRequest(t, after, agent.ScenarioPermission)
	got := awaitCommands(t, after, next.ID, 1, nil)
	require.Len(t, got, 1, "the rule answers after the restart")
	second.awaitCard(t, next.ID, "answered by the rule", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="answered-by-rule"]`).Length() == 1
	})

	// What the operator sees of the claimed request: waiting for them.
	_, card, f := second.openForm(t, claimed.ID)
	assert.Equal(t, "true", card.AttrOr("data-open", ""), "left to the operator")
	assert.Equal(t, "true", card.AttrOr("data-pending", ""), "counted as waiting")
	assert.Zero(t, card.Find(`[data-testid="answered-by-rule"]`).Length(), "not said to be answered by the rule")
	assert.Empty(t, commandsTo(ag, claimed.ID), "the rule sent nothing for it after the restart either")
	second.sendAndAccept(t, ag, claimed.ID, f, f.button(t, "Deny"))
	cmds := commandsTo(ag, claimed.ID)
	require.Len(t, cmds, 1, "one command for the claimed request: the operator's")
	assert.Equal(t, req.ID, cmds[0].Subject)
	assert.Equal(t, `{"option":"deny"}`, answerOf(t, cmds[0].Raw))

	// History reads the journal, whose accepted state the journal
	// writer keeps just after the card shows it: wait for it there.
	var rows []historyRow
	byCommand := map[string]historyRow{}
	awaitHistory(t, second, func(got []historyRow) bool {
		rows = got
		clear(byCommand)
		for _, row := range rows {
			byCommand[row.CommandID] = row
		}
		return byCommand[cmds[0].ID].State == "accepted"
	})
	require.Contains(t, byCommand, cmds[0].ID, "History lists the operator's answer: %+v", rows)
	assert.Len(t, rows, 3, "the rule's maker's answer, the rule's one answer, the operator's: %+v", rows)

	list := second.rulesPage(t)
	require.Equal(t, 1, list.Length(), "the rule is kept")
	assert.NotContains(t, strings.ToLower(list.Find(`[data-testid="rule-state"]`).Text()), "paused")
	assert.Equal(t, "1 time", strings.TrimSpace(list.Find(`[data-testid="rule-uses-count"]`).Text()),
		"the Rules page counts the one request the rule answered, not the claim the crash left unanswered")
}
