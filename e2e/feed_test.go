package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// awaitBanners waits, by push, until the page's banners region (the
// status fragment) satisfies match, and returns it.
func (s *stack) awaitBanners(t *testing.T, what string, match func(*goquery.Selection) bool) *goquery.Selection {
	t.Helper()
	ps := s.openPush(t, "", "", true)
	defer ps.close()
	if b := s.getPage(t, "").doc.Find(`[data-testid="banners"]`); match(b) {
		return b
	}
	last := "none pushed"
	deadline := time.After(stackWait)
	for {
		it, ok := ps.nextOr(t, deadline)
		if !ok {
			t.Fatalf("waiting %v for %s; last banners: %s", stackWait, what, last)
		}
		if it.Event != "status" {
			continue
		}
		b := fragment(t, it.Data).Find(`[data-testid="banners"]`)
		last = strings.Join(strings.Fields(b.Text()), " ")
		if match(b) {
			return b
		}
	}
}

func relayState(state string) func(*goquery.Selection) bool {
	return func(b *goquery.Selection) bool { return b.AttrOr("data-relay", "") == state }
}

// TestFeedRelayRestart: the relay restarts (empty) while requests are
// pending and an agent starts during the outage. The UI says it lost the
// relay, then shows every request once: none lost, none twice; and the
// respond path works again.
func TestFeedRelayRestart(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	first := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy, agent.ScenarioPermission}})
	deploy, _ := askedRequest(t, first, agent.ScenarioDeploy)
	perm, permReq := askedRequest(t, first, agent.ScenarioPermission)
	s.openForm(t, deploy.ID)
	s.openForm(t, perm.ID)

	lost := s.openPush(t, "", "", true)
	var late *agent.Agent
	s.restartRelay(t, func() {
		late = s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioInput}})
	})
	deadline := time.After(stackWait)
	for sawLost := false; !sawLost; {
		it := lost.next(t, deadline)
		sawLost = it.Event == "status" && relayState("lost")(fragment(t, it.Data).Find(`[data-testid="banners"]`))
	}
	lost.close()

	input, _ := askedRequest(t, late, agent.ScenarioInput)
	s.openForm(t, input.ID)
	s.awaitBanners(t, "the relay back", relayState("up"))
	page := s.getPage(t, "")
	for _, sess := range []agent.SessionInfo{deploy, perm, input} {
		page.cardOf(t, sess.ID) // exactly one card each
	}
	assert.Equal(t, 3, page.doc.Find(`[data-testid="card"]`).Length(), "cards after the restart")

	s.awaitRoster(t, perm.ID, true)
	_, _, f := s.openForm(t, perm.ID)
	cmd := s.sendAndAccept(t, first, perm.ID, f, f.button(t, "Deny"))
	assertCommand(t, cmd, perm, permReq, `{"option":"deny"}`, aep.CaptureMetadata)
}

// TestFeedReplayExhausted: while the UI is cut off from the relay, a
// session writes more events than the relay's buffer holds; on
// reconnect the UI says events may be missing for that session.
func TestFeedReplayExhausted(t *testing.T) {
	t.Parallel()
	var gate *tcpGate
	s := startStack(t, stackOptions{
		relayEnv: map[string]string{"AEP_BUFFER": "3"},
		uiRelay: func(t *testing.T, relayURL string) string {
			gate = startGate(t, strings.TrimPrefix(relayURL, "http://"))
			return gate.url()
		},
	})
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioExpiring}, expiresIn: 250 * time.Millisecond, reask: true})
	sess, _ := askedRequest(t, ag, agent.ScenarioExpiring)
	s.awaitCard(t, sess.ID, "the first card", func(*goquery.Selection) bool { return true })

	gate.cut()
	asked := func() int {
		for _, x := range ag.Sessions() {
			if x.ID == sess.ID {
				return len(x.Requests)
			}
		}
		return 0
	}
	before := asked()
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	// Two more rounds of timeout, run.finished, run.started, requested:
	// eight events, past the three the relay keeps.
	require.NoError(t, ag.Until(ctx, func() bool { return asked() >= before+2 }))
	gate.reopen()

	// The session named as cards name it (shortened), whole in the title.
	want := "events may be missing for session "
	b := s.awaitBanners(t, "the replay-exhausted notice", func(b *goquery.Selection) bool {
		n := b.Find(`[data-testid="notice"] p[title="` + sess.ID + `"]`)
		return strings.Contains(strings.ToLower(n.Text()), want)
	})
	assert.Equal(t, "up", b.AttrOr("data-relay", ""), "the relay is connected again")
}
