package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// awaitRespond waits until the UI's /readyz says its respond path is
// connected to the relay (up) or not, polling with a deadline.
func (s *stack) awaitRespond(t *testing.T, up bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(s.uiURL, "/")+"/readyz", nil)
		require.NoError(t, err)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var st struct{ Respond bool }
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.Respond == up {
				return
			}
			last = resp.Status
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the UI's respond path never became connected=%v within %v (last /readyz %s)", up, stackWait, last)
		}
	}
}

// TestOutageAnswersQueuedAndDeliveredOnce: the relay goes away with ten
// questions open; the operator answers all ten during the outage. Each
// post is journaled and its card says it is queued (not "sent", and no
// failure follows); nothing reaches an agent. The relay comes back,
// restarted on the same address, and the agents and the UI reattach on
// their own schedules (a queued answer waits for its agent to be on the
// relay again): every answer is delivered, each request gets exactly one
// command, and no request ever sees a second command id.
func TestOutageAnswersQueuedAndDeliveredOnce(t *testing.T) {
	t.Parallel()
	const n = 10
	s := startStack(t, stackOptions{})
	type asked struct {
		ag   *agent.Agent
		sess agent.SessionInfo
		req  agent.RequestInfo
		form *htmlForm
	}
	qs := make([]asked, n)
	for i := range qs {
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
		sess, req := askedRequest(t, ag, agent.ScenarioPermission)
		qs[i] = asked{ag: ag, sess: sess, req: req}
	}
	seen := map[string]bool{}
	for i := range qs {
		require.False(t, seen[qs[i].sess.ID], "ten agents, ten sessions")
		seen[qs[i].sess.ID] = true
		s.awaitRoster(t, qs[i].sess.ID, true)
		_, _, qs[i].form = s.openForm(t, qs[i].sess.ID)
	}
	s.awaitRespond(t, true)

	s.restartRelay(t, func() {
		// No relay: the UI's respond path has seen it go.
		s.awaitRespond(t, false)
		for _, q := range qs {
			posted := s.submit(t, q.form, q.form.button(t, "Deny"), "")
			require.Equal(t, http.StatusSeeOther, posted.status, "the answer post during the outage; body: %s", posted.body)
			card := s.getPage(t, "").cardOf(t, q.sess.ID)
			state := card.Find(`[data-testid="state"]`)
			assert.Equal(t, "queued", state.AttrOr("data-state", ""), "the card of session %s", q.sess.ID)
			assert.Contains(t, state.Text(), "Queued: will be sent when the relay is back")
			assert.Contains(t, state.Text(), "Deny", "what was chosen is shown")
			assert.Zero(t, card.Find(`form[data-testid="answer-form"] button[name="option"]:not([disabled])`).Length(),
				"no second answer while one is queued")
		}
		for _, q := range qs {
			assert.Empty(t, commandsTo(q.ag, q.sess.ID), "nothing reaches the agent during the outage")
		}
	})

	for _, q := range qs {
		got := awaitCommands(t, q.ag, q.sess.ID, 1, nil)
		require.Len(t, got, 1, "one command for the request of session %s: %+v", q.sess.ID, got)
		assert.Equal(t, q.req.ID, got[0].Subject)
		assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "%+v", got[0].Decision)
		assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw))
	}
	for _, q := range qs {
		s.awaitCard(t, q.sess.ID, "the answer recorded", func(c *goquery.Selection) bool {
			return c.AttrOr("data-state", "") == "answered"
		})
	}
	for _, q := range qs {
		got := commandsTo(q.ag, q.sess.ID)
		require.Len(t, got, 1, "never a second command id for the request of session %s: %+v", q.sess.ID, got)
	}
}
