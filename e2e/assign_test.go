package e2e

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/aeptest"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// assignForm is the assign form of session's card on the page s sees,
// with to chosen.
func (s *stack) assignForm(t *testing.T, session, to string) *htmlForm {
	t.Helper()
	p := s.getPage(t, "?session="+url.QueryEscape(session))
	require.Equal(t, http.StatusOK, p.status)
	fs := p.cardOf(t, session).Find(`form[data-testid="assign-form"]`)
	require.Equal(t, 1, fs.Length(), "the card's assign form")
	return readForm(p, fs).choose(t, "to", to)
}

// Assigning tells the assignee, and only them (issue 36, item 3): ann
// assigns the deploy question (routed to oncall) to bo, and only bo's
// device is pushed; then to the team leads, and lee's device is pushed
// and leads' channel told in ann's words with the card's link; ann, the
// assigner, is told of neither. A viewer's hand-made assign post is
// refused 403 and tells nobody. Each delivery is an attention.routed on
// the relay, valid against the schema.
func TestAssigningTellsTheAssignee(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opsFile := filepath.Join(dir, "operators")
	secrets := map[string]string{
		"ann": addOperator(t, opsFile, "ann", "answerer", "oncall"),
		"bo":  addOperator(t, opsFile, "bo", "answerer", "oncall"),
		"lee": addOperator(t, opsFile, "lee", "admin", "leads"),
		"vic": addOperator(t, opsFile, "vic", "viewer", "oncall"),
	}
	oncall, leads := newChatHook(t), newChatHook(t)
	routesFile := filepath.Join(dir, "routes.json")
	require.NoError(t, os.WriteFile(routesFile, []byte(`{"teams": {
		"oncall": {"webhook": "`+oncall.srv.URL+`/hooks/oncall-secret"},
		"leads": {"webhook": "`+leads.srv.URL+`/hooks/leads-secret"}},
		"routes": [{"team": "oncall"}]}`), 0o600))
	devs := newDevices(t)
	s := startStack(t, stackOptions{uiEnv: map[string]string{
		"AEPFORMS_OPERATORS_FILE": opsFile, "AEPFORMS_ROUTES": routesFile, "AEPFORMS_ROUTES_TICK": "50ms",
		"AEPFORMS_VAPID_SUBJECT": "mailto:ops@example.com", "AEPFORMS_PUSH_ALLOW_LOOPBACK": "1", "AEPFORMS_PUSH_EVERY": "50ms"}})
	ops := map[string]*stack{}
	for name, secret := range secrets {
		ops[name] = s.as(t, name, secret)
		ops[name].subscribeDevice(t, devs.srv.URL+"/"+name)
	}
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	sess, req := askedRequest(t, ag, agent.ScenarioDeploy)
	assert.Equal(t, map[string]int{"ann": 1, "bo": 1, "vic": 1}, devs.pushed(t, 3, "the new question"), "oncall's devices")
	assert.Contains(t, oncall.next(t, "new question"), "New question for oncall")

	// A viewer's hand-made post: refused, nothing assigned.
	made := ops["ann"].assignForm(t, sess.ID, "team:leads")
	refused := ops["vic"].submit(t, made, made.button(t, "Assign"), "")
	assert.Equal(t, http.StatusForbidden, refused.status)

	// To a person: their devices only.
	f := ops["ann"].assignForm(t, sess.ID, "bo")
	ops["ann"].follow(t, ops["ann"].submit(t, f, f.button(t, "Assign"), ""))
	assert.Equal(t, map[string]int{"bo": 1}, devs.pushed(t, 1, "the assignment to bo"))

	// To a team: its members' devices (not the assigner's) and its channel.
	f = ops["ann"].assignForm(t, sess.ID, "team:leads")
	ops["ann"].follow(t, ops["ann"].submit(t, f, f.button(t, "Assign"), ""))
	assert.Equal(t, map[string]int{"lee": 1}, devs.pushed(t, 1, "the assignment to leads"))
	msg := leads.next(t, "the assignment to leads")
	assert.Contains(t, msg, "ann assigned you (leads) a question from aepforms-demo: “Configure the new service deployment” (form)")
	assert.Contains(t, msg, s.uiURL+"cards/", "with the link to its own page")
	card := ops["bo"].awaitCard(t, sess.ID, "the card assigned to leads", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="assigned"]`).AttrOr("data-assignee", "") == "leads"
	})
	assert.Equal(t, "Assigned to team leads by ann", strings.Join(strings.Fields(card.Find(`[data-testid="assigned"]`).Text()), " "))

	// On the wire: one attention.routed per delivery: the new question
	// (its devices, oncall's channel), bo's device, lee's device and
	// leads' channel.
	to := map[string]int{}
	for _, data := range s.routedOnWire(t, sess.ID, 5) {
		e, err := aep.Decode([]byte(data))
		require.NoError(t, err)
		require.NoError(t, aeptest.ValidateEvent(e))
		assert.Equal(t, req.ID, e.Subject())
		var d aep.Routed
		require.NoError(t, e.DecodeData(&d))
		to[d.To]++
	}
	assert.Equal(t, map[string]int{"webpush": 3, "webhook": 2}, to)

	select {
	case p := <-devs.got:
		t.Fatalf("a device was pushed more: %s", p)
	case m := <-oncall.msgs:
		t.Fatalf("oncall's channel got more: %q", m)
	case m := <-leads.msgs:
		t.Fatalf("leads' channel got more: %q", m)
	default:
	}
}

// Without a routes file every operator is notified of a new question,
// and an assignee of their assignment: ann assigns the question to bo,
// and only bo's device is pushed again.
func TestAssigningWithoutRoutesPushesTheAssignee(t *testing.T) {
	t.Parallel()
	opsFile := filepath.Join(t.TempDir(), "operators")
	secrets := map[string]string{
		"ann": addOperator(t, opsFile, "ann", "answerer", "oncall"),
		"bo":  addOperator(t, opsFile, "bo", "answerer", "oncall"),
	}
	devs := newDevices(t)
	s := startStack(t, stackOptions{uiEnv: map[string]string{
		"AEPFORMS_OPERATORS_FILE": opsFile, "AEPFORMS_VAPID_SUBJECT": "mailto:ops@example.com",
		"AEPFORMS_PUSH_ALLOW_LOOPBACK": "1", "AEPFORMS_PUSH_EVERY": "50ms"}})
	ops := map[string]*stack{}
	for name, secret := range secrets {
		ops[name] = s.as(t, name, secret)
		ops[name].subscribeDevice(t, devs.srv.URL+"/"+name)
	}
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	sess, _ := askedRequest(t, ag, agent.ScenarioDeploy)
	assert.Equal(t, map[string]int{"ann": 1, "bo": 1}, devs.pushed(t, 2, "the new question"), "everyone")

	f := ops["ann"].assignForm(t, sess.ID, "bo")
	ops["ann"].follow(t, ops["ann"].submit(t, f, f.button(t, "Assign"), ""))
	assert.Equal(t, map[string]int{"bo": 1}, devs.pushed(t, 1, "the assignment to bo"))
	select {
	case p := <-devs.got:
		t.Fatalf("a device was pushed more: %s", p)
	default:
	}
}
