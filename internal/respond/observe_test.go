package respond

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// observeEvent builds an event of type typ in session (agent-scoped types
// have none).
func observeEvent(t *testing.T, typ, session string) *aep.Event {
	t.Helper()
	env := aep.Envelope{ID: "e-" + typ + "-" + session, Type: typ, Time: "2026-07-03T10:00:00Z",
		Source: "aep://h/demo", Agent: "demo", Session: session, Seq: aep.Int64(1), Data: map[string]any{}}
	switch {
	case aep.IsAgentScoped(typ):
		env.Session, env.Seq = "", nil
	case typ == "attention.requested":
		env.Data = aep.Request{Kind: aep.KindInput, Prompt: "p"}
	}
	e, err := aep.Build(env)
	require.NoError(t, err)
	return e
}

// The roster is kept from the feed's events: only an event that may add
// or drop a claim asks the relay again. Each reply lists every session,
// so asking per ended session (as every answered demo card's session
// ends) made the respond path decode the whole fleet per answer.
func TestObserveKeepsTheRosterFromEvents(t *testing.T) {
	t.Parallel()
	c := New(testConfig("http://relay.invalid"))
	cn := &conn{ask: make(chan struct{}, 1)}
	c.cur = cn
	id := c.roster.next(time.Minute)
	taken, _ := c.roster.set(id, []RosterEntry{{Session: "listed", Agent: "demo", Control: &ControlDecl{Accepts: []string{typeRespond}}}})
	require.True(t, taken)

	for _, tc := range []struct {
		typ, session string
		asks         bool
	}{
		{"session.started", "listed", true}, // maybe a second claimant
		{"session.started", "new", true},
		{"agent.heartbeat", "", true},
		{"agent.stopped", "", true},
		{"session.ended", "listed", false}, // an ending ends no claim
		{"session.ended", "unlisted", false},
		{"session.renamed", "listed", false},
		{"session.renamed", "unlisted", true}, // claimed without session.started
		{"attention.requested", "listed", false},
		{"attention.requested", "unlisted", true},
		{"attention.answered", "unlisted", false},
		{"run.started", "unlisted", false},
		{"control.accepted", "listed", false},
	} {
		t.Run(fmt.Sprintf("%s in %q", tc.typ, tc.session), func(t *testing.T) {
			c.Observe(observeEvent(t, tc.typ, tc.session))
			asked := false
			select {
			case <-cn.ask:
				asked = true
			default:
			}
			assert.Equal(t, tc.asks, asked, "a roster request asked")
		})
	}
}

// An event the feed already had, come again, is how an agent reclaims its
// session on a restarted relay: when the roster read there first does not
// list the session, the re-sent event asks again, or the card says "not
// connected" until RosterInterval (CI, TestReachFollowsTheRelayBack). A
// listed session's replay asks nothing.
func TestRedeliveryAsksAgainForAnUnlistedSession(t *testing.T) {
	t.Parallel()
	c := New(testConfig("http://relay.invalid"))
	cn := &conn{ask: make(chan struct{}, 1)}
	c.cur = cn
	asked := func() bool {
		select {
		case <-cn.ask:
			return true
		default:
			return false
		}
	}
	c.Redelivered(observeEvent(t, "attention.requested", "s"))
	assert.False(t, asked(), "no roster read yet: nothing to correct")

	id := c.roster.next(time.Minute)
	taken, _ := c.roster.set(id, []RosterEntry{{Session: "listed", Agent: "demo", Control: &ControlDecl{Accepts: []string{typeRespond}}}})
	require.True(t, taken)
	c.Redelivered(observeEvent(t, "attention.requested", "listed"))
	assert.False(t, asked(), "a listed session's redelivery")
	c.Redelivered(observeEvent(t, "attention.requested", "reclaimed"))
	assert.True(t, asked(), "an unlisted session's re-sent request")
	c.Redelivered(observeEvent(t, "agent.heartbeat", ""))
	assert.False(t, asked(), "an agent-scoped event names no session")
}

// Roster requests are paced RosterCoalesce apart: the first ask goes at
// once, one made sooner after a request waits out the rest of the gap.
func TestRosterRequestsArePaced(t *testing.T) {
	t.Parallel()
	p := pacer{every: 50 * time.Millisecond}
	assert.Zero(t, p.wait(testNow), "the first ask goes at once")
	p.sent(testNow)
	assert.Equal(t, 50*time.Millisecond, p.wait(testNow), "an ask at once waits the whole gap")
	assert.Equal(t, 20*time.Millisecond, p.wait(testNow.Add(30*time.Millisecond)))
	assert.Zero(t, p.wait(testNow.Add(50*time.Millisecond)), "the gap has passed")
	assert.Zero(t, p.wait(testNow.Add(time.Hour)))
}
