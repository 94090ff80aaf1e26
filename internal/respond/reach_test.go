package respond

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// manualTick is a Config.Tick the test fires by hand: no sleeps.
type manualTick struct {
	ch    chan time.Time
	every chan time.Duration
}

func newManualTick() *manualTick {
	return &manualTick{ch: make(chan time.Time), every: make(chan time.Duration, 16)}
}

func (m *manualTick) tick(d time.Duration) (<-chan time.Time, func()) {
	m.every <- d
	return m.ch, func() {}
}

// fire delivers one tick to the connection's housekeeper.
func (m *manualTick) fire(t *testing.T) {
	t.Helper()
	select {
	case m.ch <- testNow:
	case <-time.After(5 * time.Second):
		t.Fatal("the roster ticker was not read")
	}
}

// A killed agent says nothing: its cards change from "connected" within
// the roster interval, by push (the inbox republishes them), with no event
// on the feed.
func TestKilledAgentLeavesWithinTheRosterInterval(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.setRoster([]RosterEntry{{Session: "s1", Agent: "demo", Control: &ControlDecl{Accepts: []string{typeRespond}}}})
	in := inbox.New(inbox.Options{Now: func() time.Time { return testNow }})
	e, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Time: "2026-07-03T10:00:00Z",
		Source: "aep://h/demo", Agent: "demo", Session: "s1", Seq: aep.Int64(1),
		Data: aep.Request{Kind: aep.KindInput, Prompt: "Deploy?"}})
	require.NoError(t, err)
	in.Apply(e)
	card := inbox.RequestKey{Source: "aep://h/demo", Session: "s1", RequestID: "r1"}.CardID()

	ticks := newManualTick()
	cfg := testConfig(fr.url())
	cfg.RosterInterval = 30 * time.Second
	cfg.Tick = ticks.tick
	var c *Client
	notified := make(chan struct{}, 64)
	cfg.Notify = func() {
		in.RefreshReach(c.Reach)
		select {
		case notified <- struct{}{}:
		default:
		}
	}
	c = New(cfg)
	sub := in.Subscribe(64)
	t.Cleanup(sub.Close)
	startRunning(t, c)
	select {
	case d := <-ticks.every:
		assert.Equal(t, 30*time.Second, d, "the ticker runs at RosterInterval")
	case <-time.After(5 * time.Second):
		t.Fatal("no roster ticker was made")
	}
	waitFor(t, notified, "the first roster", func() bool { return c.Reach("s1") == inbox.ReachConnected })
	drain(sub)

	fr.setRoster(nil) // the agent was killed: no session.ended, no agent event
	ticks.fire(t)
	waitFor(t, notified, "the roster after one interval", func() bool { return c.Reach("s1") == inbox.ReachNotConnected })
	select {
	case ch := <-sub.C():
		assert.Equal(t, card, ch.Card, "the card is republished for open pages")
	case <-time.After(5 * time.Second):
		t.Fatal("the card was not republished when its agent left")
	}
}

// A session starting and agent liveness events re-read the roster
// whatever the session; other events do not (see
// TestObserveKeepsTheRosterFromEvents for those of unlisted sessions).
func TestObserveRereadsTheRosterOnLivenessEvents(t *testing.T) {
	t.Parallel()
	for typ, asks := range map[string]bool{
		"session.started": true, "session.ended": false, "agent.heartbeat": true, "agent.stopped": true,
		"attention.requested": false, "run.started": false, "control.accepted": false,
	} {
		assert.Equal(t, asks, rosterEvent(typ), typ)
	}

	fr := newFakeRelay(t)
	cfg := testConfig(fr.url())
	notify, ch := notifier()
	cfg.Notify = notify
	c, _ := start(t, cfg)
	waitFor(t, ch, "the first roster", func() bool { return c.Reach("s1") != inbox.ReachUnknown })
	e, err := aep.Build(aep.Envelope{ID: "hb", Type: "agent.heartbeat", Time: "2026-07-03T10:00:00Z", Source: "aep://h/demo", Agent: "demo"})
	require.NoError(t, err)
	c.Observe(e)
	fr.await("a roster request after agent.heartbeat", func(log []received) bool { return countType(log, "roster") >= 2 })

	// An agent that claims a session without session.started: its first
	// question makes the roster be read again.
	fr.setRoster([]RosterEntry{{Session: "quiet", Agent: "demo", Control: &ControlDecl{Accepts: []string{typeRespond}}}})
	q, err := aep.Build(aep.Envelope{ID: "q1", Type: "attention.requested", Time: "2026-07-03T10:00:00Z", Source: "aep://h/demo",
		Agent: "demo", Session: "quiet", Seq: aep.Int64(1), Data: aep.Request{Kind: aep.KindInput, Prompt: "p"}})
	require.NoError(t, err)
	c.Observe(q)
	waitFor(t, ch, "the quiet session's reach", func() bool { return c.Reach("quiet") == inbox.ReachConnected })
}

func countType(log []received, typ string) int {
	n := 0
	for _, r := range log {
		if r.typ == typ {
			n++
		}
	}
	return n
}

// startRunning runs c until the test ends.
func startRunning(t testing.TB, c *Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
}

// drain empties sub's queue.
func drain(sub *inbox.Subscription) {
	for {
		select {
		case <-sub.C():
		default:
			return
		}
	}
}
