package e2e

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// Teams from the identity provider, end to end through the real relay,
// the demo agent and the push test service: the routes file sends the
// deploy questions to oncall; ann is in the provider's group oncall (a
// team of the routes file), olga in /eng/oncall (--oidc-team maps it to
// oncall), otto in staff only. A new deploy question notifies ann's and
// olga's devices and not otto's; the assign list offers the people who
// answer, and olga, assigned the question, is told on her device and
// finds it under her Mine.
func TestTeamsFromTheProviderGetTheirQuestions(t *testing.T) {
	t.Parallel()
	routesFile := filepath.Join(t.TempDir(), "routes.json")
	require.NoError(t, os.WriteFile(routesFile, []byte(`{"teams": {"oncall": {}, "leads": {}},
		"routes": [{"session_label": "deploy-*", "team": "oncall"}, {"team": "leads"}]}`), 0o600))
	devs := newDevices(t)
	o := startOIDCStackEnv(t, map[string]string{"AEPFORMS_PUSH_ALLOW_LOOPBACK": "1"},
		"--oidc-role", "answerer=staff", "--oidc-team", "/eng/oncall=oncall",
		"--routes", routesFile, "--routes-tick", "50ms", "--vapid-subject", "mailto:ops@example.com", "--push-every", "50ms")
	ops := map[string]*stack{}
	for _, name := range []string{"ann", "olga", "otto"} {
		ops[name] = o.signInAtOP(t, name, 0)
		ops[name].subscribeDevice(t, devs.srv.URL+"/"+name)
	}

	ag := ops["ann"].startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	sess, _ := askedRequest(t, ag, agent.ScenarioDeploy)
	assert.Equal(t, map[string]int{"ann": 1, "olga": 1}, devs.pushed(t, 2, "the new question"), "only oncall's devices, whichever group put them there")
	card := ops["otto"].awaitCard(t, sess.ID, "the card routed to oncall", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="team"]`).Text() == "for oncall"
	})
	var offered []string
	card.Find(`[data-testid="assign-to"] option`).Each(func(_ int, s *goquery.Selection) {
		if v := s.AttrOr("value", ""); v != "" && !strings.HasPrefix(v, "team:") {
			offered = append(offered, v)
		}
	})
	assert.Equal(t, []string{"ann", "olga", "otto"}, offered, "the people who signed in and answer are offered")
	action, ok := card.Find(`[data-testid="assign-form"]`).Attr("action")
	require.True(t, ok, "the card offers the assign form")
	assert.Equal(t, http.StatusSeeOther, ops["otto"].postValues(t, action, url.Values{"to": {"olga"}}), "otto assigns it to olga")
	assert.Equal(t, map[string]int{"olga": 1}, devs.pushed(t, 1, "the assignment"), "the assignee signed in at the provider is told, on her devices")
	mine := ops["olga"].getPage(t, "?claim=mine")
	require.Equal(t, http.StatusOK, mine.status)
	assigned := mine.cardOf(t, sess.ID).Find(`[data-testid="assigned"]`).Text()
	assert.Equal(t, "Assigned to olga by otto", strings.Join(strings.Fields(assigned), " "))

	select {
	case p := <-devs.got:
		if p == "otto" {
			t.Fatalf("otto, in no team, was notified")
		}
	default:
	}
}

// postValues posts the form vals to path as a browser on the UI's page
// does, and returns the status.
func (s *stack) postValues(t *testing.T, path string, vals url.Values) int {
	t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.resolve(t, nil, path).String(), strings.NewReader(vals.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Accept", "text/html")
	return s.do(t, req).status
}

// A person demoted at the provider stops answering within
// --oidc-recheck: ann's open page's stream ends ("signed out"), her
// answer is refused and the agent gets nothing; signed in again, she is
// a viewer.
func TestDemotedAtTheProviderStopsAnswering(t *testing.T) {
	t.Parallel()
	o := startOIDCStack(t, "--oidc-recheck", "200ms", "--session-recheck", "100ms")
	ann := o.signInAtOP(t, "ann", 0)
	ag, sessions := ann.askAll(t, agent.ScenarioPermission)
	_, _, f := ann.openForm(t, sessions[0])
	ps := ann.openPush(t, "", "", false)

	o.provider.SetGroups("ann", "auditors")
	ps.endsSignedOutWithin(t, stackWait)
	refused := ann.submit(t, f, f.button(t, "Allow once"), "")
	assert.Equal(t, http.StatusUnauthorized, refused.status, "her answer after the demotion: %s", refused.body)
	assert.Empty(t, commandsTo(ag, sessions[0]), "nothing reached the agent")
	again := o.signInAtOP(t, "ann", 0)
	assert.Equal(t, "(viewer)", again.getPage(t, "").doc.Find(`[data-testid="role"]`).Text(), "signed in again, a viewer")
}

// endsSignedOutWithin reads the stream until the server ends it, at most
// limit: its last message is reload, "signed out" (cards changed before
// it may come first).
func (p *pushStream) endsSignedOutWithin(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	last := ""
	for _, it := range p.pending {
		if !it.IsComment && it.Event != "status" {
			last = it.Event + " " + it.Data
		}
	}
	p.pending = nil
	for {
		select {
		case it, ok := <-p.items:
			if !ok {
				assert.Equal(t, "reload signed out", last, "the stream's last word")
				return
			}
			if !it.IsComment && it.Event != "status" {
				last = it.Event + " " + it.Data
			}
		case <-deadline:
			t.Fatalf("the stream of a demoted session still runs %v later", limit)
		}
	}
}

// With an operators file beside the provider, a rule made by an admin
// signed in at the provider answers the next match: it was paused at
// once, "ada, who made it, no longer has access", as her name is in no
// operators file; a person the provider signed in has access while she
// is listed (--oidc-forget).
func TestRuleOfAProviderAdminBesideAnOperatorsFile(t *testing.T) {
	t.Parallel()
	opsFile := filepath.Join(t.TempDir(), "operators")
	addOperator(t, opsFile, "bo", "answerer", "oncall")
	o := startOIDCStack(t, "--operators-file", opsFile)
	ada := o.signInAtOP(t, "ada", 0)
	first := ada.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, first, agent.ScenarioPermission)
	ada.makeRuleFromCard(t, first, sess.ID)

	ag, sessions := ada.askAll(t, agent.ScenarioPermission)
	got := awaitCommands(t, ag, sessions[0], 1, nil)
	require.Len(t, got, 1, "the rule answers the next match")
	assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome)
	assert.Equal(t, "active", ada.rulesPage(t).AttrOr("data-state", ""), "the rule stays active")
}
