package e2e

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// TestReachFollowsTheRelayBack: an open page holds a card whose agent is
// connected; the relay restarts (empty) and the agent re-attaches. The
// page, by push alone, is told the card's reach again: its last pushed
// copy knows its agent is connected (data-reach "yes", said in no words),
// as a reload would, not the unknown of the outage.
func TestReachFollowsTheRelayBack(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, ag, agent.ScenarioPermission)
	s.awaitRoster(t, sess.ID, true)
	q := "?session=" + url.QueryEscape(sess.ID)
	ps := s.openPush(t, q, "", true)
	reachOf := func(p *uiPage) string {
		return cardsIn(p.doc.Selection, sess.ID).Find(`[data-testid="meta"]`).AttrOr("data-reach", "")
	}
	// The page as loaded, then every pushed copy: what the open page shows.
	shown := ""
	require.Eventually(t, func() bool { shown = reachOf(s.getPage(t, q)); return shown == "yes" },
		stackWait, 5*time.Millisecond, "the card before the outage says its agent is connected")

	sawOutage := false
	s.restartRelay(t, nil)
	s.awaitRoster(t, sess.ID, true)
	s.awaitRespond(t, true)
	deadline := time.After(stackWait)
	for {
		it, ok := ps.nextOr(t, deadline)
		if !ok {
			break
		}
		if it.Event != "card" {
			continue
		}
		c := cardsIn(fragment(t, it.Data), sess.ID)
		if c.Length() != 1 {
			continue
		}
		shown = c.Find(`[data-testid="meta"]`).AttrOr("data-reach", "")
		sawOutage = sawOutage || shown != "yes"
		if sawOutage && shown == "yes" {
			break
		}
	}
	require.True(t, sawOutage, "the outage was pushed to the page")
	require.Equal(t, "yes", shown, "the open page's card after the relay and its agent are back (a reload says %q)", reachOf(s.getPage(t, q)))
}
