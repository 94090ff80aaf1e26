package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// TestAnotherInstancesQueuedAnswerIsShownAsSuch: two UIs on one
// PostgreSQL journal and one relay. The relay goes away; an operator
// answers on UI a, whose answer is queued there. UI b, which no feed
// tells of it, shows the card as "Answer queued on another instance",
// its form locked, and refuses a post from a form it drew before,
// saying why: the question is not offered to answer twice. The relay
// comes back: the agent gets the one command.
func TestAnotherInstancesQueuedAnswerIsShownAsSuch(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	env := map[string]string{"AEPFORMS_DB": db, "AEPFORMS_LEASE": "600ms"}
	a := startStack(t, stackOptions{uiEnv: env})
	bURL, bCtx, _ := runApp(t, "ui b", []string{"serve", "--relay", a.relayURL, "--addr", "127.0.0.1:0", "--ack-window", stackAckWindow},
		map[string]string{"AEP_TOKEN": a.token, "HOME": t.TempDir(), "AEPFORMS_DB": db, "AEPFORMS_LEASE": "600ms"},
		`aepforms UI listening on (http://[^\s"]+)`)
	b := *a
	b.uiURL, b.ctx = bURL, bCtx
	u, err := url.Parse(bURL)
	require.NoError(t, err)
	b.origin = u.Scheme + "://" + u.Host

	ag := a.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, ag, agent.ScenarioPermission)
	a.awaitRoster(t, sess.ID, true)
	_, _, fa := a.openForm(t, sess.ID)
	_, _, fb := b.openForm(t, sess.ID)
	a.awaitRespond(t, true)

	a.restartRelay(t, func() {
		a.awaitRespond(t, false)
		posted := a.submit(t, fa, fa.button(t, "Deny"), "")
		require.Equal(t, http.StatusSeeOther, posted.status, "the answer on a, queued; body: %s", posted.body)
		state := a.getPage(t, "").cardOf(t, sess.ID).Find(`[data-testid="state"]`)
		require.Equal(t, "queued", state.AttrOr("data-state", ""), "a's card: %s", state.Text())

		card := b.awaitCard(t, sess.ID, "b to show a's queued answer", func(c *goquery.Selection) bool {
			return c.Find(`[data-testid="state"]`).AttrOr("data-state", "") == "peer-queued"
		})
		line := card.Find(`[data-testid="state"]`).Text()
		assert.Contains(t, line, "Answer queued on another instance of this UI: it is sent when the relay is back")
		assert.Contains(t, line, "Deny", "what was chosen there is shown")
		assert.Zero(t, card.Find(`form[data-testid="answer-form"] button[name="option"]:not([disabled])`).Length(),
			"no second answer offered")

		refused := b.submit(t, fb, fb.button(t, "Allow once"), "")
		assert.Equal(t, http.StatusConflict, refused.status)
		assert.Contains(t, refused.doc.Find(`[data-testid="error-summary"]`).Text(), "queued on another instance",
			"the refusal says why: %s", strings.TrimSpace(refused.doc.Find("main").Text()))
		assert.Empty(t, commandsTo(ag, sess.ID), "nothing reaches the agent during the outage")
	})

	got := awaitCommands(t, ag, sess.ID, 1, nil)
	require.Len(t, got, 1, "one command: %+v", got)
	assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw))
	b.awaitCard(t, sess.ID, "b to show the answer recorded", func(c *goquery.Selection) bool {
		return c.AttrOr("data-state", "") == "answered"
	})
	assert.Len(t, commandsTo(ag, sess.ID), 1, "never a second command")
}
