//go:build unix

package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// makeRuleFromCard answers the permission request of session on s with
// "Allow once", ticking "Keep answering requests like this one", and
// waits for the agent to accept that one command.
func (s *stack) makeRuleFromCard(t *testing.T, ag *agent.Agent, session string) {
	t.Helper()
	_, card, f := s.openForm(t, session)
	require.Equal(t, 1, card.Find(`[data-testid="rule-maker"]`).Length(), "the card offers a rule")
	f.tick(t, form.NameRule, "on", true)
	s.sendAndAccept(t, ag, session, f, f.button(t, "Allow once"))
}

// rulesPage loads /rules and returns its rule rows.
func (s *stack) rulesPage(t *testing.T) *goquery.Selection {
	t.Helper()
	p := s.getPage(t, "rules")
	require.Equal(t, http.StatusOK, p.status, "%s", p.body)
	return p.doc.Find(`[data-testid="rule"]`)
}

// postRuleButton presses a rule's button (pause, resume, delete): a plain
// form post from the Rules page.
func (s *stack) postRuleButton(t *testing.T, row *goquery.Selection, testid string) {
	t.Helper()
	action, ok := row.Find(`[data-testid="` + testid + `"]`).Closest("form").Attr("action")
	require.True(t, ok, "the rule has a %s button", testid)
	u := s.resolve(t, nil, action)
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, u.String(), strings.NewReader(""))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Accept", "text/html")
	p := s.do(t, req)
	require.Equal(t, http.StatusSeeOther, p.status, "%s: %s", testid, p.body)
}

// askAll starts an agent asking scenarios and waits until each session's
// request reached the relay; it returns the agent and the sessions, in
// the order asked.
func (s *stack) askAll(t *testing.T, scenarios ...string) (*agent.Agent, []string) {
	t.Helper()
	return s.askAllWith(t, agentOptions{scenarios: scenarios})
}

// askAllWith is askAll with an agent started as o says.
func (s *stack) askAllWith(t *testing.T, o agentOptions) (*agent.Agent, []string) {
	t.Helper()
	scenarios := o.scenarios
	ag := s.startAgent(t, o)
	var ids []string
	ctx, cancel := context.WithTimeout(t.Context(), stackWait)
	defer cancel()
	require.NoError(t, ag.Until(ctx, func() bool {
		ids = ids[:0]
		for _, ss := range ag.Sessions() {
			for _, q := range ss.Requests {
				if q.Delivered {
					ids = append(ids, ss.ID)
				}
			}
		}
		return len(ids) == len(scenarios)
	}), "every request asked")
	out := make([]string, len(scenarios))
	for i, ss := range ag.Sessions() {
		out[i] = ss.ID
	}
	return ag, out
}

// End to end, one replica: a rule made from a permission
// card answers the next three matching requests exactly once each (the
// agent records one command per request), attributed to the rule on
// the card and in History; a request it does not match stays for the
// operator; once deleted on the Rules page, the next match stays pending.
func TestRuleFromACardAnswersTheNextMatchesOnce(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{uiEnv: map[string]string{"AEPFORMS_OPERATOR_TOKEN": recordedSecret}})
	s.signIn(t, "alice")
	first := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, first, agent.ScenarioPermission)
	s.makeRuleFromCard(t, first, sess.ID)
	rows := s.rulesPage(t)
	require.Equal(t, 1, rows.Length(), "the rule is listed")
	name := strings.TrimSpace(rows.Find(`[data-testid="rule-name"]`).Text())
	require.NotEmpty(t, name)

	ag, sessions := s.askAll(t, agent.ScenarioPermission, agent.ScenarioPermission, agent.ScenarioPermission, agent.ScenarioInput)
	for _, id := range sessions[:3] {
		got := awaitCommands(t, ag, id, 1, nil)
		require.Len(t, got, 1, "one command for session %s", id)
		assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome)
		assert.Equal(t, 1, got[0].Count, "sent once")
		c := s.awaitCard(t, id, "settled by the rule", func(c *goquery.Selection) bool {
			return c.Find(`[data-testid="answered-by-rule"]`).Length() == 1
		})
		by := c.Find(`[data-testid="answered-by-rule"]`)
		assert.Contains(t, by.Text(), name)
		assert.Contains(t, by.Text(), "set by alice")
		assert.True(t, strings.HasSuffix(by.Find(`[data-testid="rule-link"]`).AttrOr("href", ""), "rules#"+rows.AttrOr("id", "")), "links to the rule")
	}
	input := sessions[3]
	_, card, _ := s.openForm(t, input)
	assert.Equal(t, "true", card.AttrOr("data-open", ""), "not matching: left for the operator")
	assert.Empty(t, commandsTo(ag, input))

	hist := s.getPage(t, "history")
	require.Equal(t, http.StatusOK, hist.status)
	assert.Equal(t, 3, hist.doc.Find(`[data-testid="history-operator"] [data-testid="answered-by-rule"]`).Length(), "History names the rule for its three answers")
	rows = s.rulesPage(t)
	assert.Equal(t, "3 times", strings.TrimSpace(rows.Find(`[data-testid="rule-uses-count"]`).Text()))
	s.awaitMetric(t, `aepforms_rule_answers_total{rule="`+rows.AttrOr("data-rule", "")+`"}`, 3)

	s.postRuleButton(t, rows, "rule-delete")
	assert.Zero(t, s.rulesPage(t).Length(), "deleted")
	late, lateSessions := s.askAll(t, agent.ScenarioPermission)
	_, card, _ = s.openForm(t, lateSessions[0])
	assert.Equal(t, "true", card.AttrOr("data-open", ""), "deleted: the next match stays pending")
	assert.Empty(t, commandsTo(late, lateSessions[0]))
}

// Two UI replicas on one PostgreSQL database both see every request; a
// rule made on one answers each match once: one command per request in
// the agent's record, and both replicas count the same uses.
func TestRuleOnTwoReplicasAnswersEachMatchOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	a := startStack(t, stackOptions{uiEnv: map[string]string{"AEPFORMS_DB": db}})
	addr, ctx, _ := runApp(t, "ui b", []string{"serve", "--relay", a.relayURL, "--addr", "127.0.0.1:0", "--ack-window", stackAckWindow},
		map[string]string{"AEP_TOKEN": a.token, "HOME": t.TempDir(), "AEPFORMS_DB": db}, `aepforms UI listening on (http://[^\s"]+)`)
	b := *a
	b.uiURL, b.ctx = addr, ctx
	u, err := url.Parse(addr)
	require.NoError(t, err)
	b.origin = u.Scheme + "://" + u.Host

	first := a.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, first, agent.ScenarioPermission)
	a.makeRuleFromCard(t, first, sess.ID)
	require.Equal(t, 1, b.rulesPage(t).Length(), "the other replica reads the same rule")

	const n = 6
	scenarios := make([]string, n)
	for i := range scenarios {
		scenarios[i] = agent.ScenarioPermission
	}
	ag, sessions := a.askAll(t, scenarios...)
	for _, id := range sessions {
		got := awaitCommands(t, ag, id, 1, nil)
		require.Len(t, got, 1, "one command for session %s", id)
		assert.Equal(t, 1, got[0].Count, "sent once")
	}
	total := 0
	for _, r := range ag.Record() {
		total += r.Count
	}
	assert.Equal(t, n, total, "no request got a second command")
	for _, s := range []*stack{a, &b} {
		assert.Equal(t, "6 times", strings.TrimSpace(s.rulesPage(t).Find(`[data-testid="rule-uses-count"]`).Text()))
	}
}

// A deleted rule leaves the next match pending, checked after the rule
// Runner has certainly looked at that match: a second rule, scoped to
// another agent, answers a request asked after it, and the Runner takes
// requests in the order they arrive. (Without that, "still open" could
// be read before the Runner got to the request, and pass whatever the
// delete did.)
func TestDeletedRuleLeavesTheNextMatch(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{uiEnv: map[string]string{"AEPFORMS_OPERATOR_TOKEN": recordedSecret}})
	s.signIn(t, "alice")
	// The barrier rule: "Allow once" to this question from agent
	// "barrier" (a rule is always its agent's).
	barrier := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, agent: "barrier"})
	bs, _ := askedRequest(t, barrier, agent.ScenarioPermission)
	_, card, f := s.openForm(t, bs.ID)
	require.Equal(t, 1, card.Find(`[data-testid="rule-maker"]`).Length(), "the card offers a rule")
	f.tick(t, form.NameRule, "on", true)
	s.sendAndAccept(t, barrier, bs.ID, f, f.button(t, "Allow once"))
	// The rule under test, for the demo agent; then deleted.
	first := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, first, agent.ScenarioPermission)
	s.makeRuleFromCard(t, first, sess.ID)
	rows := s.rulesPage(t)
	require.Equal(t, 2, rows.Length())
	s.postRuleButton(t, rows.First(), "rule-delete") // newest first: the demo agent's rule
	require.Equal(t, 1, s.rulesPage(t).Length(), "deleted")

	late, lateSessions := s.askAll(t, agent.ScenarioPermission)
	_, card, _ = s.openForm(t, lateSessions[0])
	require.Equal(t, "true", card.AttrOr("data-open", ""))
	after := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, agent: "barrier"})
	as, _ := askedRequest(t, after, agent.ScenarioPermission)
	got := awaitCommands(t, after, as.ID, 1, nil)
	require.Len(t, got, 1, "the barrier rule answered the request asked after the late one")
	_, card, _ = s.openForm(t, lateSessions[0])
	assert.Equal(t, "true", card.AttrOr("data-open", ""), "deleted: the next match stays pending")
	assert.Empty(t, commandsTo(late, lateSessions[0]))
}
