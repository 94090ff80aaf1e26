//go:build unix

package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// awaitPushedCard waits on ps, a push stream opened before the card
// changed, for a pushed card of session that satisfies match.
func awaitPushedCard(t *testing.T, ps *pushStream, session, what string, match func(*goquery.Selection) bool) *goquery.Selection {
	t.Helper()
	deadline := time.After(stackWait)
	for {
		it, ok := ps.nextOr(t, deadline)
		if !ok {
			t.Fatalf("waiting %v for %s: not pushed", stackWait, what)
		}
		if it.Event != "card" {
			continue
		}
		if c := cardsIn(fragment(t, it.Data), session); c.Length() == 1 && match(c) {
			return c
		}
	}
}

// postCarry presses a card's "Let the rule answer this connection too":
// a plain form post, the page coming back at the card.
func (s *stack) postCarry(t *testing.T, card *goquery.Selection) {
	t.Helper()
	f := card.Find(`[data-testid="rule-carry-form"]`)
	action, ok := f.Attr("action")
	require.True(t, ok, "the card offers the carry-over")
	form := url.Values{}
	f.Find(`input[type="hidden"]`).Each(func(_ int, in *goquery.Selection) {
		form.Set(in.AttrOr("name", ""), in.AttrOr("value", ""))
	})
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.resolve(t, nil, action).String(), strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Accept", "text/html")
	p := s.do(t, req)
	require.Equal(t, http.StatusSeeOther, p.status, "%s", p.body)
}

func hasRuleMiss(c *goquery.Selection) bool {
	return c.Find(`[data-testid="rule-miss"]`).Length() == 1
}

// End to end: the demo agent, restarted under a new instance (a new
// process) against the embedded relay, asks the question a rule was
// made for before. The rule no longer answers it; its card says which
// rule and both connections, reaching an open page by push; the Rules
// page flags the rule. Carrying the rule over answers that card (one
// command, by the rule), leaves the other question already waiting from
// the new connection to the operator (its card now says the rule
// answers its connection), and answers the next one asked after; the
// Rules page names who carried it.
func TestRuleCarriedOverToItsRestartedAgent(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{uiEnv: map[string]string{"AEPFORMS_OPERATOR_TOKEN": recordedSecret}})
	s.signIn(t, "alice")
	first, stop := s.startStoppableAgent(t, agentOptions{scenarios: permissions(1), instance: "e2e.test/100"})
	sess, _ := askedRequest(t, first, agent.ScenarioPermission)
	s.makeRuleFromCard(t, first, sess.ID)
	stop() // the agent's process ends...
	s.awaitRoster(t, sess.ID, false)
	ps := s.openPush(t, "", "", true)
	// ...and runs again: a new process, so a new instance.
	again, sessions := s.askAllWith(t, agentOptions{scenarios: permissions(2), instance: "e2e.test/200"})
	asked, waiting := sessions[0], sessions[1]

	card := awaitPushedCard(t, ps, asked, "the rule's notice on the card", hasRuleMiss)
	miss := card.Find(`[data-testid="rule-miss"]`)
	assert.Equal(t, "e2e.test/100", strings.TrimSpace(miss.Find(`[data-testid="rule-miss-rule-connection"]`).Text()))
	assert.Equal(t, "e2e.test/200", strings.TrimSpace(miss.Find(`[data-testid="rule-miss-connection"]`).Text()))
	assert.Zero(t, miss.Find(`[data-testid="rule-miss-live"]`).Length(), "the rule's own connection is gone")
	assert.Empty(t, commandsTo(again, asked), "the rule did not answer it")
	flag := s.rulesPage(t).Find(`[data-testid="rule-not-answering"]`)
	require.Equal(t, 1, flag.Length(), "the Rules page flags the rule")
	assert.Equal(t, "e2e.test/200", strings.TrimSpace(flag.Find(`[data-testid="rule-not-answering-connection"]`).Text()))

	// The question already waiting has met the rule too (its card says
	// so) before the rule is carried over: asked after, it would be the
	// operator's with no notice at all.
	waitingMiss := s.awaitCard(t, waiting, "the rule's notice on the other waiting card", hasRuleMiss)
	assert.Equal(t, "e2e.test/200", strings.TrimSpace(waitingMiss.Find(`[data-testid="rule-miss-connection"]`).Text()))

	s.postCarry(t, card)
	got := awaitCommands(t, again, asked, 1, nil)
	require.Len(t, got, 1)
	assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome)
	assert.Equal(t, 1, got[0].Count, "sent once")
	s.awaitCard(t, asked, "answered by the rule", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="answered-by-rule"]`).Length() == 1
	})

	next, nextSessions := s.askAllWith(t, agentOptions{scenarios: permissions(1), instance: "e2e.test/200"})
	got = awaitCommands(t, next, nextSessions[0], 1, nil)
	assert.Equal(t, 1, got[0].Count, "the next question from the new connection is the rule's")
	waitingCard := s.awaitCard(t, waiting, "the rule answering its connection now", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="rule-miss-carried"]`).Length() == 1
	})
	assert.Equal(t, "true", waitingCard.AttrOr("data-open", ""), "the question already waiting stays for the operator")
	assert.Empty(t, commandsTo(again, waiting))

	rows := s.rulesPage(t)
	assert.Contains(t, rows.Find(`[data-testid="rule-change"]`).First().Text(), "Set to answer connection “e2e.test/200” too by alice")
	assert.Zero(t, rows.Find(`[data-testid="rule-not-answering"]`).Length(), "answering again")
	assert.Equal(t, "2 times", strings.TrimSpace(rows.Find(`[data-testid="rule-uses-count"]`).Text()))
}

// A second connection claiming the agent's name while the rule's own
// connection is still there is not carried silently: its question waits
// with the notice warning of two connections at once, while the rule
// goes on answering its own connection.
func TestASecondConnectionOfTheAgentsNameIsNotCarried(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{uiEnv: map[string]string{"AEPFORMS_OPERATOR_TOKEN": recordedSecret}})
	s.signIn(t, "alice")
	first := s.startAgent(t, agentOptions{scenarios: permissions(1), instance: "e2e.test/100"})
	sess, _ := askedRequest(t, first, agent.ScenarioPermission)
	s.makeRuleFromCard(t, first, sess.ID)

	other, sessions := s.askAllWith(t, agentOptions{scenarios: permissions(1), instance: "elsewhere.test/1"})
	card := s.awaitCard(t, sessions[0], "the rule's notice on the card", hasRuleMiss)
	live := card.Find(`[data-testid="rule-miss-live"]`)
	require.Equal(t, 1, live.Length(), "the card warns of two connections at once")
	assert.Contains(t, live.Text(), "two connections claim the name")

	own, ownSessions := s.askAllWith(t, agentOptions{scenarios: permissions(1), instance: "e2e.test/100"})
	got := awaitCommands(t, own, ownSessions[0], 1, nil)
	assert.Equal(t, 1, got[0].Count, "the rule still answers its own connection")
	assert.Empty(t, commandsTo(other, sessions[0]), "the second connection's question is not answered by the rule")
	_, c, _ := s.openForm(t, sessions[0])
	assert.Equal(t, "true", c.AttrOr("data-open", ""), "it waits for the operator")
	assert.Zero(t, s.rulesPage(t).Find(`[data-testid="rule-change"]`).Length(), "the rule was not carried")
}
