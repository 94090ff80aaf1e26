package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// withoutToken drops the form token from a form's data set.
func withoutToken(ps []formPair) []formPair {
	return slices.DeleteFunc(slices.Clone(ps), func(p formPair) bool { return p.name == "token" })
}

// fillEveryType fills the every-type form validly but for the fields
// whose labels are in skip; filled whole it answers everyTypeAnswer.
func fillEveryType(t *testing.T, card *goquery.Selection, f *htmlForm, skip ...string) {
	t.Helper()
	set := func(label string, do func(name string)) {
		if !slices.Contains(skip, label) {
			do(fieldNamed(t, card, label))
		}
	}
	set("Service name", func(n string) { f.fill(t, n, "search-api") })
	set("Replica count", func(n string) { f.fill(t, n, "5") })
	set("I have read", func(n string) { f.tick(t, n, "on", true) })
	set("Features", func(n string) {
		f.tick(t, n, choiceValue(t, card, n, "Tracing"), true)
		f.tick(t, n, "other", true)
		f.fill(t, n+"-other", "  spaced  out  ")
	})
	set("Primary region", func(n string) { f.choose(t, n, choiceValue(t, card, n, "Region eu-north-1")) })
	set("Notes for the release manager", func(n string) { f.fill(t, n, "keep me\nexactly <as typed> & all") })
}

// everyTypeAnswer is what fillEveryType (skipping nothing) sends.
const everyTypeAnswer = `{"values":{"agree":true,"features":["tracing","  spaced  out  "],"notes":"keep me\nexactly \u003cas typed\u003e \u0026 all","region":"eu-north-1","replicas":5,"service":"search-api"}}`

// refusalText is what a refused post's page says about it: the card's
// error summary, or, for a card that shows none (settled, in flight), the
// page's notices.
func refusalText(t *testing.T, p *uiPage) string {
	t.Helper()
	require.NotNil(t, p.doc, "refusal is not HTML (status %d): %s", p.status, p.body)
	sel := p.doc.Find(`[data-testid="error-summary"], [data-testid="banners"] [data-testid="notice"]`)
	return strings.Join(strings.Fields(sel.Text()), " ")
}

// TestAnswerOutcomes covers the posts the UI must refuse or settle
// without the agent acting twice, on one stack with an agent per case.
func TestAnswerOutcomes(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})

	t.Run("required field missing is refused with the input kept and nothing sent", func(t *testing.T) {
		t.Parallel()
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioEveryType}})
		sess, req := askedRequest(t, ag, agent.ScenarioEveryType)
		_, card, f := s.openForm(t, sess.ID)
		fillEveryType(t, card, f, "Service name")
		posted := f.entries(nil)

		got := s.submit(t, f, nil, "")
		require.Equal(t, http.StatusUnprocessableEntity, got.status, "a post missing a required field; body: %s", got.body)
		assert.Empty(t, commandsTo(ag, sess.ID), "the agent received a command for a refused post")

		rc := got.cardOf(t, sess.ID)
		links := rc.Find(`[data-testid="error-summary"] a[data-testid="error-link"]`)
		require.Equal(t, 1, links.Length(), "error summary links: %s", rc.Find(`[data-testid="error-summary"]`).Text())
		href := links.AttrOr("href", "")
		require.True(t, strings.HasPrefix(href, "#"), "error link %q", href)
		target := rc.Find(`[id="` + href[1:] + `"]`)
		require.Equal(t, 1, target.Length(), "the error link %q points at no element of the card", href)
		name := fieldNamed(t, rc, "Service name")
		assert.Equal(t, name, target.AttrOr("name", ""), "the error link points at the missing field's control")
		assert.Equal(t, "true", target.AttrOr("aria-invalid", ""), "the missing field is marked invalid")
		var described []string
		for _, id := range strings.Fields(target.AttrOr("aria-describedby", "")) {
			described = append(described, strings.TrimSpace(rc.Find(`[id="`+id+`"]`).Text()))
		}
		assert.Contains(t, strings.Join(described, " | "), strings.TrimSpace(rc.Find(`[data-testid="field-error"]`).Text()),
			"the field's error message is tied to it by aria-describedby")

		kept := formOf(t, got, rc)
		assert.Equal(t, withoutToken(posted), withoutToken(kept.entries(nil)), "the re-rendered form holds the operator's input exactly")

		kept.fill(t, name, "search-api")
		cmd := s.sendAndAccept(t, ag, sess.ID, kept, nil)
		assertCommand(t, cmd, sess, req, everyTypeAnswer, aep.CaptureFull)
	})

	t.Run("double submit of one form sends one command", func(t *testing.T) {
		t.Parallel()
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioEveryType}})
		sess, req := askedRequest(t, ag, agent.ScenarioEveryType)
		_, card, f := s.openForm(t, sess.ID)
		fillEveryType(t, card, f)
		first := s.submit(t, f, nil, "")
		second := s.submit(t, f, nil, "")
		s.follow(t, first)
		s.follow(t, second)
		awaitCommands(t, ag, sess.ID, 1, nil)
		s.awaitCard(t, sess.ID, "the card answered", inState("answered"))
		cmds := commandsTo(ag, sess.ID)
		require.Len(t, cmds, 1, "commands for one form posted twice")
		assertCommand(t, cmds[0], sess, req, everyTypeAnswer, aep.CaptureFull)
	})

	t.Run("two operators on one card: one command, the second refused", func(t *testing.T) {
		t.Parallel()
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
		sess, req := askedRequest(t, ag, agent.ScenarioPermission)
		_, _, alice := s.openForm(t, sess.ID)
		_, _, bob := s.openForm(t, sess.ID)
		require.NotEqual(t, alice.entries(nil), bob.entries(nil), "two page loads carry two form tokens")

		s.follow(t, s.submit(t, alice, alice.button(t, "Allow once"), ""))
		late := s.submit(t, bob, bob.button(t, "Deny"), "")
		assert.Equal(t, http.StatusConflict, late.status, "the second operator's post; body: %s", late.body)
		assert.Regexp(t, `(?i)already`, refusalText(t, late), "the second operator is told the card is already answered")

		awaitCommands(t, ag, sess.ID, 1, nil)
		s.awaitCard(t, sess.ID, "the card answered", inState("answered"))
		cmds := commandsTo(ag, sess.ID)
		require.Len(t, cmds, 1, "commands for one card answered by two operators")
		assertCommand(t, cmds[0], sess, req, `{"option":"allow"}`, aep.CaptureMetadata)
	})

	t.Run("cross-site post is refused and nothing sent", func(t *testing.T) {
		t.Parallel()
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
		sess, req := askedRequest(t, ag, agent.ScenarioPermission)
		_, _, f := s.openForm(t, sess.ID)
		evil := s.submit(t, f, f.button(t, "Allow once"), "https://evil.example")
		assert.Equal(t, http.StatusForbidden, evil.status, "a post from another origin; body: %s", evil.body)

		// The same form from the UI's own page goes through, as the one command.
		cmd := s.sendAndAccept(t, ag, sess.ID, f, f.button(t, "Deny"))
		assertCommand(t, cmd, sess, req, `{"option":"deny"}`, aep.CaptureMetadata)
	})

	t.Run("expired card refuses the post and sends nothing", func(t *testing.T) {
		t.Parallel()
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioExpiring}, expiresIn: 1500 * time.Millisecond})
		sess, _ := askedRequest(t, ag, agent.ScenarioExpiring)
		_, card, f := s.openForm(t, sess.ID)
		assert.Equal(t, 1, card.Find(`[data-testid="countdown"] time[datetime]`).Length(), "an expiring card shows its deadline")
		win := fieldNamed(t, card, "Window")
		f.tick(t, win, choiceValue(t, card, win, "02:00 to 03:00 UTC"), true)

		s.awaitCard(t, sess.ID, "the card past its deadline", inState("expired", "timed-out"))
		got := s.submit(t, f, nil, "")
		assert.Equal(t, http.StatusConflict, got.status, "a post after the deadline; body: %s", got.body)
		assert.Regexp(t, `(?i)expired|timed out|stopped waiting`, refusalText(t, got))
		assert.Regexp(t, `(?i)nothing was sent`, refusalText(t, got))
		ctx, cancel := context.WithTimeout(t.Context(), stackWait)
		defer cancel()
		require.NoError(t, ag.Until(ctx, func() bool {
			ss := ag.Sessions()
			return len(ss) == 1 && len(ss[0].Requests) == 1 && ss[0].Requests[0].State == agent.StateTimedOut
		}))
		assert.Empty(t, commandsTo(ag, sess.ID), "the agent received a command for an expired card")
	})

	t.Run("ack timeout: two retries with the same id, then owed (no reply in time), not failed", func(t *testing.T) {
		t.Parallel()
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, neverAck: true})
		sess, _ := askedRequest(t, ag, agent.ScenarioPermission)
		_, _, f := s.openForm(t, sess.ID)
		s.follow(t, s.submit(t, f, f.button(t, "Allow once"), ""))

		final := s.awaitCard(t, sess.ID, "no reply in time", func(c *goquery.Selection) bool {
			return strings.Contains(c.Find(`[data-testid="state-text"]`).Text(), "no reply from the agent in time")
		})
		assert.Equal(t, "sending", stateOf(final), "owed: sent again when the relay reconnects, never given up")
		cmds := commandsTo(ag, sess.ID)
		require.Len(t, cmds, 1, "distinct commands")
		assert.Equal(t, 3, cmds[0].Count, "transmissions of the command: the original and two retries")
		assert.Zero(t, cmds[0].Differing, "a retry resends the identical bytes")
		assert.Equal(t, agent.OutcomeIgnored, cmds[0].Decision.Outcome)
		assert.Regexp(t, `(?i)may still act`, final.Find(`[data-testid="state-text"]`).Text(), "the card says the agent may still act")
	})
}

// TestAnswerRejectedInvalidThenResent: the agent refuses an answer as
// invalid for a rule the UI could not see (the UI is shown the request
// without one field's required flag); the card shows the agent's reason
// with the operator's input kept, and the corrected answer goes as a new
// command.
func TestAnswerRejectedInvalidThenResent(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{uiRelay: func(t *testing.T, relayURL string) string {
		return rewritingProxy(t, relayURL, dropRequired("name"))
	}})
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	sess, req := askedRequest(t, ag, agent.ScenarioDeploy)
	_, card, f := s.openForm(t, sess.ID)
	name, db := fieldNamed(t, card, "Service name"), fieldNamed(t, card, "Database")
	_, required := card.Find(`[name="` + name + `"]`).Attr("required")
	require.False(t, required, "the UI was shown the name field as optional")
	f.tick(t, db, choiceValue(t, card, db, "PostgreSQL"), true)
	posted := f.entries(nil)
	s.follow(t, s.submit(t, f, nil, ""))

	cmds := awaitCommands(t, ag, sess.ID, 1, nil)
	require.Equal(t, agent.OutcomeRejected, cmds[0].Decision.Outcome, "agent decision: %+v", cmds[0].Decision)
	require.Equal(t, aep.ReasonInvalid, cmds[0].Decision.Reason)
	assertCommand(t, cmds[0], sess, req, `{"values":{"db":"1","regions":[],"staged":false}}`, aep.CaptureMetadata)

	rejected := s.awaitCard(t, sess.ID, "the rejection", inState("rejected"))
	assert.Regexp(t, `(?i)correct it`, rejected.Find(`[data-testid="state-text"]`).Text())
	assert.Equal(t, cmds[0].Decision.Detail, strings.TrimSpace(rejected.Find(`[data-testid="state-quote"]`).Text()),
		"the card quotes the agent's detail")

	page := s.getPage(t, "?session="+sess.ID)
	rc := page.cardOf(t, sess.ID)
	assert.Equal(t, cmds[0].Decision.Detail, strings.TrimSpace(rc.Find(`[data-testid="state-quote"]`).Text()), "the detail survives a reload")
	again := formOf(t, page, rc)
	assert.Equal(t, withoutToken(posted), withoutToken(again.entries(nil)), "the form holds the operator's input after the rejection")

	again.fill(t, name, "checkout")
	s.follow(t, s.submit(t, again, nil, ""))
	cmds = awaitCommands(t, ag, sess.ID, 2, nil)
	require.Len(t, cmds, 2)
	assert.NotEqual(t, cmds[0].ID, cmds[1].ID, "the resend is a new command")
	assert.Equal(t, agent.OutcomeAccepted, cmds[1].Decision.Outcome, "agent decision on the resend: %+v", cmds[1].Decision)
	assertCommand(t, cmds[1], sess, req, `{"values":{"db":"1","name":"checkout","regions":[],"staged":false}}`, aep.CaptureFull)
	s.awaitCard(t, sess.ID, "the card answered", inState("answered"))
}

// dropRequired edits attention.requested events so the field id is no
// longer required (the rest of the event unchanged).
func dropRequired(id string) func([]byte) []byte {
	return func(data []byte) []byte {
		if !bytes.Contains(data, []byte(`"attention.requested"`)) {
			return data
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var ev map[string]any
		if dec.Decode(&ev) != nil || ev["type"] != "attention.requested" {
			return data
		}
		d, _ := ev["data"].(map[string]any)
		fields, _ := d["fields"].([]any)
		for _, f := range fields {
			if m, ok := f.(map[string]any); ok && m["id"] == id {
				delete(m, "required")
			}
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return data
		}
		return b
	}
}

// TestAnswerNoRoute: with the agent off the relay, an answer is refused
// by the relay (no-route); that is not final while the agent may come
// back: the card says it waits for the agent to reconnect, the form stays
// locked (no second answer by accident), and when the agent is back the
// same command goes through, with nothing posted again.
func TestAnswerNoRoute(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	gate := startGate(t, strings.TrimPrefix(s.relayURL, "http://"))
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioElicitation}, relayURL: gate.url()})
	sess, req := askedRequest(t, ag, agent.ScenarioElicitation)
	s.awaitRoster(t, sess.ID, true)
	_, card, f := s.openForm(t, sess.ID)
	env := fieldNamed(t, card, "Environment")
	f.tick(t, env, choiceValue(t, card, env, "Staging"), true)
	f.fill(t, fieldNamed(t, card, "Why now"), "the fix is ready")
	f.tick(t, fieldNamed(t, card, "Proceed immediately"), "on", true)

	gate.cut()
	s.awaitRoster(t, sess.ID, false)
	s.follow(t, s.submit(t, f, nil, ""))
	waiting := s.awaitCard(t, sess.ID, "the no-route outcome", func(c *goquery.Selection) bool {
		return strings.Contains(c.Find(`[data-testid="state-text"]`).Text(), "Waiting for the agent to reconnect")
	})
	assert.Equal(t, "queued", stateOf(waiting), "kept, to be sent")
	assert.NotContains(t, waiting.Find(`[data-testid="state-text"]`).Text(), "Not delivered")
	assert.Zero(t, waiting.Find(`form[data-testid="answer-form"] button:not([disabled])`).Length(), "no second answer while the first waits")
	assert.Empty(t, commandsTo(ag, sess.ID), "nothing reached the agent")

	gate.reopen()
	got := awaitCommands(t, ag, sess.ID, 1, nil)
	require.Len(t, got, 1, "one command, sent when the agent was back")
	assertCommand(t, got[0], sess, req, `{"values":{"confirm":true,"environment":"staging","reason":"the fix is ready"}}`, aep.CaptureFull)
	s.awaitCard(t, sess.ID, "the answer recorded by the agent", inState("answered"))
}
