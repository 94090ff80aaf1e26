package respond

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// The reconnect wait is capped at 2 s by default (an answer queued while
// the relay was away waits on it), and stays configurable.
func TestBackoffCappedAtTwoSeconds(t *testing.T) {
	t.Parallel()
	c := New(Config{RelayURL: "http://relay.invalid"})
	assert.Equal(t, 2*time.Second, c.cfg.BackoffMax)
	assert.Equal(t, DefaultBackoffMax, c.cfg.BackoffMax)
	p := c.backoff()
	for _, rnd := range []float64{0, 0.5, 0.999999} {
		p.Rand = func() float64 { return rnd }
		for n := range 40 {
			assert.LessOrEqual(t, p.Delay(n), 2*time.Second, "attempt %d, jitter %v", n, rnd)
		}
	}
	p.Rand = func() float64 { return 0.999999 }
	assert.Greater(t, p.Delay(20), time.Second, "the cap is reached, not undercut")

	custom := New(Config{RelayURL: "http://relay.invalid", BackoffMin: time.Millisecond, BackoffMax: 7 * time.Second})
	assert.Equal(t, 7*time.Second, custom.cfg.BackoffMax, "the cap is a config field")
}

// Wake ends a reconnect wait at once: with an hour's backoff, the client
// reconnects only because it was woken.
func TestWakeSkipsTheBackoff(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.down.Store(true)
	notify, ch := notifier()
	cfg := testConfig(fr.url())
	cfg.BackoffMin, cfg.BackoffMax = time.Hour, time.Hour
	cfg.Notify = notify
	c, _ := start(t, cfg)
	require.Eventually(t, func() bool { return fr.refused.Load() >= 1 && c.Err() != nil }, 10*time.Second, time.Millisecond,
		"the first attempt was never refused")
	fr.down.Store(false)
	c.Wake()
	waitFor(t, ch, "connected after the wake", c.Connected)
	assert.Equal(t, int64(1), fr.refused.Load(), "one refused attempt, then the woken one")
}

// An answer submitted while the relay is away is queued, not failed; it is
// written once when the relay is back, and its ack window starts then:
// the outage outlasted both the connect wait and the ack window, and the
// ack that follows the write still settles it.
func TestQueuedAnswerIsSentOnceWhenTheRelayIsBack(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.down.Store(true)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	cfg := testConfig(fr.url())
	cfg.ConnectWait = time.Millisecond
	cfg.AckWindow = 300 * time.Millisecond
	cfg.Retries = -1
	cfg.BackoffMin, cfg.BackoffMax = 100*time.Millisecond, 100*time.Millisecond
	c, rep := start(t, cfg)
	require.Eventually(t, func() bool { return c.Err() != nil }, 10*time.Second, time.Millisecond)

	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	q := rep.nextQueued(t)
	assert.Equal(t, inbox.SubmissionQueued, q.State)
	// Ten more refused attempts, each at least 50 ms after the last (the
	// backoff's jitter floor): more than the 300 ms ack window has passed
	// since the submit.
	from := fr.refused.Load()
	require.Eventually(t, func() bool { return fr.refused.Load() >= from+10 }, 20*time.Second, time.Millisecond)
	select {
	case o := <-rep.ch:
		t.Fatalf("outcome while the relay was away: %+v", o)
	default:
	}
	fr.down.Store(false)
	o := rep.next(t)
	assert.Equal(t, settlement{Card: "card-1", CommandID: q.CommandID, State: inbox.SubmissionAccepted}, o)
	sent := fr.frames(typeRespond)
	require.Len(t, sent, 1, "written once")
}

// releaser answers ReleaseQueued from a script and records the calls.
type releaser struct {
	mu    sync.Mutex
	send  bool
	calls []string
}

func (r *releaser) ReleaseQueued(_ inbox.CardID, commandID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, commandID)
	return r.send
}

// A queued command the inbox holds back when the relay is back (its
// request closed, or it got too old) is never written.
func TestQueuedAnswerHeldBackIsNotSent(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.down.Store(true)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	rel := &releaser{}
	cfg := testConfig(fr.url())
	cfg.Release = rel
	c, rep := start(t, cfg)
	require.Eventually(t, func() bool { return c.Err() != nil }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	q := rep.nextQueued(t)
	fr.down.Store(false)
	c.Wake()
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionNotSent, o.State, "%+v", o)
	assert.Equal(t, []string{q.CommandID}, rel.calls, "asked once, before the first write")
	assert.Empty(t, fr.frames(typeRespond), "nothing written")
	assert.Equal(t, int64(1), c.Outcomes()[inbox.SubmissionNotSent])
}

// A command submitted while connected is not queued and is sent without
// asking the releaser.
func TestConnectedSubmitIsNotQueued(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	rel := &releaser{}
	notify, ch := notifier()
	cfg := testConfig(fr.url())
	cfg.Release, cfg.Notify = rel, notify
	c, rep := start(t, cfg)
	waitFor(t, ch, "connected", c.Connected)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	assert.Equal(t, inbox.SubmissionAccepted, rep.next(t).State)
	assert.Empty(t, rep.queued)
	assert.Empty(t, rel.calls)
}

// After an outage, a queued command waits for its session's agent to be
// on the relay again (the roster lists it), re-reading the roster, so it
// is not refused no-route by a relay its agent has not reattached to yet.
func TestQueuedAnswerWaitsForItsAgent(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.down.Store(true)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	cfg := testConfig(fr.url())
	cfg.AgentWait = time.Hour
	cfg.RosterPoll = 5 * time.Millisecond
	c, rep := start(t, cfg)
	require.Eventually(t, func() bool { return c.Err() != nil }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	rep.nextQueued(t)

	fr.down.Store(false) // back, but its agent is not
	c.Wake()
	fr.await("the roster re-read while waiting for the agent", atLeast("roster", 3))
	assert.Empty(t, fr.frames(typeRespond), "nothing sent before the agent is back")
	select {
	case o := <-rep.ch:
		t.Fatalf("outcome before the agent was back: %+v", o)
	default:
	}
	fr.setRoster([]RosterEntry{{Session: "s1", Agent: "demo", Instance: "a", Control: &ControlDecl{Accepts: []string{typeRespond}}}})
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	assert.Len(t, fr.frames(typeRespond), 1, "sent once, when the agent was back")
}

// The wait for the agent is bounded: past AgentWait the command is sent
// anyway; the relay's no-route leaves it waiting for its agent, queued.
func TestQueuedAnswerWaitsForItsAgentAtMostAgentWait(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.down.Store(true)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		fc.send(map[string]any{"type": "error", "code": CodeNoRoute, "cause": cmd.ID(), "detail": "no target"})
	}
	cfg := testConfig(fr.url())
	cfg.AgentWait = 20 * time.Millisecond
	cfg.RosterPoll = 5 * time.Millisecond
	c, rep := start(t, cfg)
	require.Eventually(t, func() bool { return c.Err() != nil }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	rep.nextQueued(t)
	fr.down.Store(false)
	c.Wake()
	rep.nextQueued(t) // released, then refused no-route
	assert.Len(t, fr.frames(typeRespond), 1, "sent once the wait was over")
}

// A command the relay refuses no-route (its agent is not on the relay) is
// not given up: it is reported queued, waiting for the agent, and sent
// again, the same bytes, when the roster lists its agent again; the
// agent's ack settles it.
func TestNoRouteWaitsForTheAgentToReconnect(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	var agentBack atomic.Bool
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		if agentBack.Load() {
			fc.accept(cmd)
			return
		}
		fc.send(map[string]any{"type": "error", "code": CodeNoRoute, "cause": cmd.ID(), "detail": "no target"})
	}
	cfg := testConfig(fr.url())
	cfg.RosterInterval = time.Hour // no roster read but the ones asked for
	c, rep := start(t, cfg)
	require.Eventually(t, c.Connected, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.nextQueued(t)
	assert.Equal(t, inbox.ReasonNoRoute, o.Reason, "%+v", o)
	assert.Equal(t, detailNoAgent, o.Detail)
	select {
	case o := <-rep.ch:
		t.Fatalf("settled while its agent is away: %+v", o)
	default:
	}
	assert.Len(t, fr.frames(typeRespond), 1, "not sent again while the agent is away")

	agentBack.Store(true)
	fr.setRoster([]RosterEntry{{Session: "s1", Agent: "demo", Instance: "a", Control: &ControlDecl{Accepts: []string{typeRespond}}}})
	c.Refresh() // the agent's return, as the feed shows it
	o = rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	sent := fr.frames(typeRespond)
	require.Len(t, sent, 2, "sent again when the agent was back")
	assert.Equal(t, string(sent[0].raw), string(sent[1].raw), "the same bytes, the same command id")
}

// releaseThenDrop is a Releaser that, the first time, lets the command go
// and then takes the relay away before it is written.
type releaseThenDrop struct {
	releaser
	fr   *fakeRelay
	conn chan *fakeConn
}

func (r *releaseThenDrop) ReleaseQueued(card inbox.CardID, commandID string) bool {
	r.mu.Lock()
	first := len(r.calls) == 0
	r.mu.Unlock()
	ok := r.releaser.ReleaseQueued(card, commandID)
	if first {
		r.fr.down.Store(true)
		(<-r.conn).drop()
	}
	return ok
}

// A released command whose connection drops before it is written is
// queued again (the card must not say "sent"), and released again, with
// its checks, when the relay is back.
func TestReleasedCommandQueuedAgainWhenTheRelayGoesBeforeTheWrite(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	conns := make(chan *fakeConn, 8)
	fr.onHello = func(fc *fakeConn, _ map[string]any) bool { conns <- fc; return true }
	fr.down.Store(true)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	rel := &releaseThenDrop{releaser: releaser{send: true}, fr: fr, conn: conns}
	cfg := testConfig(fr.url())
	cfg.Release = rel
	c, rep := start(t, cfg)
	require.Eventually(t, func() bool { return c.Err() != nil }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	rep.nextQueued(t)
	fr.down.Store(false)
	c.Wake()
	again := rep.nextQueued(t)
	assert.Equal(t, inbox.SubmissionQueued, again.State, "queued again: nothing was written")
	assert.Empty(t, fr.frames(typeRespond))
	fr.down.Store(false)
	c.Wake()
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	assert.Len(t, fr.frames(typeRespond), 1, "written once")
	rel.mu.Lock()
	defer rel.mu.Unlock()
	assert.Len(t, rel.calls, 2, "released again when the relay was back")
}
