package respond

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// An answer that got no reply within its ack window is owed, not failed:
// the next relay connection sends it again, same id and bytes, once the
// inbox releases it.
func TestOwedAnswerSentAgainOnTheNextConnection(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	conns := make(chan *fakeConn, 8)
	fr.onHello = func(fc *fakeConn, _ map[string]any) bool { conns <- fc; return true }
	var silent atomic.Bool
	silent.Store(true)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		if !silent.Load() {
			fc.accept(cmd)
		}
	}
	rel := &releaser{send: true}
	cfg := testConfig(fr.url())
	cfg.AckWindow = 20 * time.Millisecond
	cfg.Retries = -1
	cfg.Release = rel
	c, rep := start(t, cfg)
	first := <-conns
	require.Eventually(t, c.Connected, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.nextOwed(t)
	assert.Equal(t, inbox.SubmissionSending, o.State)
	assert.Equal(t, inbox.ReasonTimeout, o.Reason)
	require.Eventually(t, func() bool { return c.Owed() == 1 }, 10*time.Second, time.Millisecond, "owed: kept for the next connection")
	require.Len(t, fr.frames(typeRespond), 1)

	silent.Store(false)
	first.drop() // the relay goes and comes back
	o = rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	sent := fr.frames(typeRespond)
	require.Len(t, sent, 2, "sent again on the new connection")
	assert.Equal(t, string(sent[0].raw), string(sent[1].raw), "same id, same bytes")
	assert.NotEqual(t, sent[0].conn, sent[1].conn)
	assert.Equal(t, 0, c.Owed())
	rel.mu.Lock()
	defer rel.mu.Unlock()
	assert.Len(t, rel.calls, 1, "released (request open, young enough) before it was written again")
}

// An answer in flight when the relay goes away is owed for as long as
// the relay stays away (no ConnectWait ends it), and the card is told
// so; it is written again when the relay is back.
func TestAnswerInFlightOwedThroughAnOutage(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, nth int) {
		if nth == 1 {
			fr.down.Store(true) // the relay dies with the command
			fc.drop()
			return
		}
		fc.accept(cmd)
	}
	rel := &releaser{send: true}
	cfg := testConfig(fr.url())
	cfg.ConnectWait = time.Millisecond // many connect waits pass in the outage
	cfg.Release = rel
	c, rep := start(t, cfg)
	require.Eventually(t, c.Connected, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.nextOwed(t)
	assert.Equal(t, settlement{Card: "card-1", CommandID: o.CommandID, State: inbox.SubmissionSending,
		Reason: inbox.ReasonRelayLost, Detail: detailLost}, o)
	before := fr.refused.Load()
	require.Eventually(t, func() bool { return fr.refused.Load() >= before+3 }, 10*time.Second, time.Millisecond,
		"the relay stays away for several attempts")
	select {
	case o := <-rep.ch:
		t.Fatalf("an owed answer got an outcome while the relay was away: %+v", o)
	default:
	}
	fr.down.Store(false)
	c.Wake()
	o = rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	sent := fr.frames(typeRespond)
	require.Len(t, sent, 2)
	assert.Equal(t, string(sent[0].raw), string(sent[1].raw), "same id, same bytes")
}

// An owed answer the inbox no longer releases (the agent decided, the
// request closed, it got too old, the operator replaced it) is not
// written again.
func TestOwedAnswerHeldBackIsNotWrittenAgain(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, _ *aep.Event, nth int) {
		if nth == 1 {
			fc.drop()
		}
	}
	rel := &releaser{send: false}
	cfg := testConfig(fr.url())
	cfg.Release = rel
	c, rep := start(t, cfg)
	require.Eventually(t, c.Connected, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	assert.Equal(t, inbox.ReasonRelayLost, rep.nextOwed(t).Reason)
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionNotSent, o.State, "held back: %+v", o)
	assert.Len(t, fr.frames(typeRespond), 1, "never written again")
}

// "Send again" sends an owed answer at once, with its own id and bytes;
// one not owed is refused.
func TestSendAgainOwedAnswer(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	var silent atomic.Bool
	silent.Store(true)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		if !silent.Load() {
			fc.accept(cmd)
		}
	}
	cfg := testConfig(fr.url())
	cfg.AckWindow = 20 * time.Millisecond
	cfg.Retries = -1
	c, rep := start(t, cfg)
	require.ErrorIs(t, c.SendAgain(t.Context(), "nothing-owed"), ErrNotOwed)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.nextOwed(t)
	require.Eventually(t, func() bool { return c.Owed() == 1 }, 10*time.Second, time.Millisecond)
	silent.Store(false)
	require.NoError(t, c.SendAgain(t.Context(), o.CommandID))
	assert.Equal(t, inbox.SubmissionAccepted, rep.next(t).State)
	sent := fr.frames(typeRespond)
	require.Len(t, sent, 2)
	assert.Equal(t, string(sent[0].raw), string(sent[1].raw))
}
