package respond

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAcceptedAfterSubscribing(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.token = "s3cret"
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	cfg := testConfig(fr.url())
	cfg.Token = "s3cret"
	c, rep := start(t, cfg)

	s := submission("s1", "card-1")
	s.CommandID = c.newCommandID()
	require.NoError(t, c.Submit(t.Context(), s))
	o := rep.next(t)
	assert.Equal(t, settlement{Card: "card-1", CommandID: s.CommandID, State: inbox.SubmissionAccepted}, o)

	log := fr.await("unsubscribe", atLeast("unsubscribe", 1))
	var order []string
	for _, r := range log {
		order = append(order, r.typ)
	}
	iSub := indexOf(order, "subscribe")
	iCmd := indexOf(order, typeRespond)
	require.GreaterOrEqual(t, iSub, 0, "a subscribe was sent; frames %v", order)
	assert.Less(t, iSub, iCmd, "subscribe precedes the command; frames %v", order)
	assert.Less(t, iCmd, indexOf(order, "unsubscribe"), "unsubscribe follows the ack; frames %v", order)

	hello := log[0].frame
	assert.Equal(t, "hello", hello["type"])
	assert.Equal(t, []any{"0.1"}, hello["versions"])
	assert.Equal(t, "consumer", hello["role"])
	assert.Equal(t, map[string]any{"agent": "aepforms", "instance": "host-a/1"}, hello["identity"])
	assert.Equal(t, map[string]any{}, hello["capabilities"])

	sub := log[iSub].frame
	assert.Equal(t, map[string]any{
		"session": "s1",
		"type":    []any{typeAccepted, typeRejected},
		"cause":   s.CommandID,
	}, sub["filter"], "the ack subscription's filter")
	assert.Equal(t, []any{map[string]any{"session": "s1", "epoch": 0.0, "seq": 0.0}}, sub["from"],
		"the subscription replays the session's buffer")
	assert.Equal(t, sub["id"], log[indexOf(order, "unsubscribe")].frame["id"], "unsubscribe names the subscription")

	cmd, err := aep.Decode(log[iCmd].raw)
	require.NoError(t, err)
	assert.Equal(t, s.CommandID, cmd.ID())
	assert.Equal(t, "s1", cmd.Session())
	assert.Equal(t, "req-card-1", cmd.Subject())
	assert.Equal(t, "req-card-1", cmd.Cause())
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func TestRejectedKeepsReasonAndDetail(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		fc.reject(cmd, aep.ReasonInvalid, "field n: must be at most 2")
	}
	c, rep := start(t, testConfig(fr.url()))
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionRejected, o.State)
	assert.Equal(t, aep.ReasonInvalid, o.Reason)
	assert.Equal(t, "field n: must be at most 2", o.Detail)
}

func TestRelayRefusalsAreReportedVerbatim(t *testing.T) {
	t.Parallel()
	for _, code := range []string{CodeUnauthorized, CodeAmbiguous, CodeUnsupported} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			fr := newFakeRelay(t)
			fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
				fc.send(map[string]any{"type": "error", "cause": cmd.ID(), "code": code, "detail": "relay says " + code})
			}
			c, rep := start(t, testConfig(fr.url()))
			require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
			o := rep.next(t)
			assert.Equal(t, inbox.SubmissionFailed, o.State)
			assert.Equal(t, code, o.Reason)
			assert.Equal(t, "relay says "+code, o.Detail)
			assert.Len(t, fr.frames(typeRespond), 1, "a refused command is not retried")
		})
	}
}

// A relay that cannot route a command yet (its cluster mid-election, a
// node not answering) refuses it unavailable and says to send it again:
// the answer is sent again within its ack window, not failed for good.
func TestUnavailableIsSentAgain(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, nth int) {
		if nth < 3 {
			fc.send(map[string]any{"type": "error", "cause": cmd.ID(), "code": CodeUnavailable, "detail": "relay node n2 did not answer in time"})
			return
		}
		fc.accept(cmd)
	}
	cfg := testConfig(fr.url())
	cfg.AckWindow = 60 * time.Millisecond
	c, rep := start(t, cfg)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "accepted once the relay could route it: %+v", o)
	assert.Len(t, fr.frames(typeRespond), 3, "sent again after each unavailable")
}

func TestRetryResendsIdenticalBytes(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, nth int) {
		if nth == 3 {
			fc.accept(cmd)
		}
	}
	cfg := testConfig(fr.url())
	cfg.AckWindow = 60 * time.Millisecond
	c, rep := start(t, cfg)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "accepted on the second retry: %+v", o)
	sent := raws(fr.frames(typeRespond))
	require.Len(t, sent, 3, "one send and two retries")
	assert.Equal(t, sent[0], sent[1], "retry 1 is byte-identical")
	assert.Equal(t, sent[0], sent[2], "retry 2 is byte-identical")
	assert.GreaterOrEqual(t, len(fr.frames("subscribe")), 3, "a replay check before each retry")
}

func TestTimeoutAfterRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		retries int
		sends   int
	}{
		{"default two retries", 0, 3},
		{"one retry", 1, 2},
		{"no retries", -1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fr := newFakeRelay(t)
			cfg := testConfig(fr.url())
			cfg.AckWindow = 40 * time.Millisecond
			cfg.Retries = tc.retries
			c, rep := start(t, cfg)
			require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
			o := rep.nextOwed(t)
			assert.Equal(t, inbox.SubmissionSending, o.State, "no reply in time is not an end: still owed")
			assert.Equal(t, inbox.ReasonTimeout, o.Reason)
			assert.Contains(t, o.Detail, "may still act", "the timeout says the agent may still act")
			assert.Eventually(t, func() bool { return c.Owed() == 1 }, 10*time.Second, time.Millisecond,
				"kept to be sent again on the next relay connection")
			sent := raws(fr.frames(typeRespond))
			require.Len(t, sent, tc.sends, "sends: got, want")
			for i := range sent {
				assert.Equal(t, sent[0], sent[i], "send %d is byte-identical", i)
			}
		})
	}
}

func TestAckWindowFromRoster(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	ms := int64(30)
	fr.setRoster([]RosterEntry{{Session: "s1", Agent: "demo",
		Control: &ControlDecl{Accepts: []string{typeRespond}, AckWindowMS: &ms}}})
	cfg := testConfig(fr.url())
	cfg.AckWindow = 0
	notified := make(chan struct{}, 16)
	cfg.Notify = func() {
		select {
		case notified <- struct{}{}:
		default:
		}
	}
	c, rep := start(t, cfg)
	waitFor(t, notified, "roster", func() bool { return c.Reach("s1") == inbox.ReachConnected })
	assert.Equal(t, 30*time.Millisecond, c.AckWindow("s1"), "the target's declared window")
	assert.Equal(t, DefaultAckWindow, c.AckWindow("s2"), "the default window for an unknown target")

	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.nextOwed(t)
	assert.Equal(t, inbox.ReasonTimeout, o.Reason, "silence past the declared 30 ms window: %+v", o)
	assert.Contains(t, o.Detail, "30ms")
}

func TestReplayCheckFindsMissedAck(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	// The target acks, but the relay drops the live ack (as it may drop
	// info events toward a slow consumer): only its buffer has it.
	fr.onCommand = func(_ *fakeConn, cmd *aep.Event, _ int) { fr.ack(cmd, typeAccepted, map[string]any{}) }
	cfg := testConfig(fr.url())
	cfg.AckWindow = 40 * time.Millisecond
	c, rep := start(t, cfg)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "the replayed ack settles the command: %+v", o)
	assert.Len(t, fr.frames(typeRespond), 1, "no retry once replay showed the ack")
}

func TestReconnectResendsAfterDrop(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, nth int) {
		if nth == 1 {
			fc.drop()
			return
		}
		fc.accept(cmd)
	}
	c, rep := start(t, testConfig(fr.url()))
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	sent := fr.frames(typeRespond)
	require.Len(t, sent, 2, "sent before and after the drop")
	assert.Equal(t, string(sent[0].raw), string(sent[1].raw), "the resend is byte-identical")
	assert.NotEqual(t, sent[0].conn, sent[1].conn, "the resend went on the new connection")
}

func TestAckReplayedBeforeSubscribedAfterReconnect(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.replayFirst = true
	// The target acks while the connection breaks: the ack is in the
	// buffer only, and the relay replays it ahead of `subscribed`.
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		fr.ack(cmd, typeAccepted, map[string]any{})
		fc.drop()
	}
	c, rep := start(t, testConfig(fr.url()))
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
	assert.Len(t, fr.frames(typeRespond), 1, "the replayed ack settles it: no resend")
}

func TestAckFromAnotherSessionIsIgnored(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		stray, err := aep.Build(aep.Envelope{ID: "stray", Type: typeAccepted, Time: "2026-07-03T10:00:00Z",
			Source: "aep://other/agent/x", Agent: "x", Session: "other", Seq: aep.Int64(1), Cause: cmd.ID(), Data: map[string]any{}})
		require.NoError(t, err)
		fc.sendRaw(stray.Raw())
		fc.reject(cmd, aep.ReasonRefused, "")
	}
	c, rep := start(t, testConfig(fr.url()))
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionRejected, o.State, "the addressed session's nack decides, not a stray ack: %+v", o)
	assert.Equal(t, aep.ReasonRefused, o.Reason)
}

func TestQueuedWhenNoRelayUntilStopped(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(nil)
	url := dead.URL
	dead.Close()
	cfg := testConfig(url)
	cfg.ConnectWait = time.Millisecond
	rep := newReports()
	cfg.Reporter = rep
	c := New(cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	q := rep.nextQueued(t)
	assert.Equal(t, settlement{Card: "card-1", CommandID: q.CommandID, State: inbox.SubmissionQueued}, q,
		"no relay: queued, not sent and not failed")
	// Many connect waits pass while the relay stays away: still no outcome.
	require.Eventually(t, func() bool { return c.Err() != nil }, 10*time.Second, time.Millisecond)
	select {
	case o := <-rep.ch:
		t.Fatalf("a queued command got an outcome while the relay was away: %+v", o)
	default:
	}
	cancel()
	require.NoError(t, <-done)
	o := rep.next(t)
	assert.Equal(t, settlement{Card: "card-1", CommandID: q.CommandID, State: inbox.SubmissionFailed,
		Reason: inbox.ReasonUnreachable, Detail: "not sent; your answer is kept"}, o, "stopped while queued: never sent")
	assert.False(t, c.Connected())
	assert.Error(t, c.Err(), "the connection error is kept")
}

func TestWrongTokenIsUnauthorized(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.token = "right"
	cfg := testConfig(fr.url())
	cfg.Token = "wrong"
	cfg.ConnectWait = 100 * time.Millisecond
	c, rep := start(t, cfg)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionFailed, o.State)
	assert.Equal(t, CodeUnauthorized, o.Reason)
	assert.Contains(t, o.Detail, "not sent")
	assert.ErrorIs(t, c.Err(), ErrUnauthorized)
	assert.NotContains(t, c.Err().Error(), "wrong", "the token never appears in errors")
}

func TestConcurrentSubmits(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		// Ack from another goroutine, out of order, as targets do.
		go fc.accept(cmd)
	}
	cfg := testConfig(fr.url())
	cfg.MaxInFlight = 16
	c, rep := start(t, cfg)
	const n = 60
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s := submission(fmt.Sprintf("s%d", i%4), fmt.Sprintf("card-%d", i))
			assert.NoError(t, c.Submit(t.Context(), s))
		})
	}
	wg.Wait()
	cards := map[inbox.CardID]bool{}
	for range n {
		o := rep.next(t)
		assert.Equal(t, inbox.SubmissionAccepted, o.State, "%+v", o)
		assert.False(t, cards[o.Card], "one outcome per card: %s twice", o.Card)
		cards[o.Card] = true
	}
	assert.Len(t, cards, n)
	fr.mu.Lock()
	defer fr.mu.Unlock()
	assert.Len(t, fr.seen, n, "one command id per submission")
	for id, k := range fr.seen {
		assert.Equal(t, 1, k, "command %s sent once", id)
	}
}

func TestSubscriptionRefused(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.hold = true
	fr.onHello = func(fc *fakeConn, _ map[string]any) bool {
		fc.send(map[string]any{"type": "hello", "versions": []string{"0.1"}, "role": "both",
			"identity": map[string]any{"agent": "fake"}, "capabilities": map[string]any{}})
		go func() {
			log := fr.await("subscribe", atLeast("subscribe", 1))
			for _, r := range log {
				if r.typ == "subscribe" {
					fc.send(map[string]any{"type": "error", "id": r.frame["id"], "code": "limit-exceeded", "detail": "subscriptions"})
				}
			}
		}()
		return false
	}
	c, rep := start(t, testConfig(fr.url()))
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionFailed, o.State)
	assert.Equal(t, "limit-exceeded", o.Reason)
	assert.Contains(t, o.Detail, "not sent")
	assert.Empty(t, fr.frames(typeRespond), "no command without a way to see its ack")
}

func TestPingAndUnknownFrames(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		fc.send(map[string]any{"type": "x-future", "id": "whatever"})
		fc.send(map[string]any{"aep": "0.1", "type": "x.acme.thing.happened", "id": "u1"})
		fc.sendRaw([]byte(`not json`))
		fc.send(map[string]any{"type": "ping", "t": 1751536800123})
		fc.accept(cmd)
	}
	c, rep := start(t, testConfig(fr.url()))
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card-1")))
	assert.Equal(t, inbox.SubmissionAccepted, rep.next(t).State, "unknown frames are ignored")
	log := fr.await("pong", atLeast("pong", 1))
	for _, r := range log {
		if r.typ == "pong" {
			assert.JSONEq(t, `{"type":"pong","t":1751536800123}`, string(r.raw), "pong echoes t")
		}
	}
}

func TestSubmitErrors(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Queue = 1
	c := New(cfg)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "a")))
	assert.ErrorIs(t, c.Submit(t.Context(), submission("s1", "b")), ErrQueueFull)
	assert.ErrorIs(t, c.Submit(t.Context(), inbox.Submission{Key: inbox.RequestKey{Session: "s1"}}), ErrInvalid)

	d := New(testConfig("http://127.0.0.1:1"))
	s := submission("s1", "a")
	s.CommandID = d.newCommandID()
	require.NoError(t, d.Submit(t.Context(), s))
	assert.ErrorIs(t, d.Submit(t.Context(), s), ErrDuplicate, "the same command id twice is one command")

	assert.ErrorIs(t, New(Config{}).Run(t.Context()), ErrConfig, "no relay URL")
	assert.ErrorIs(t, New(Config{RelayURL: "ftp://x"}).Run(t.Context()), ErrConfig, "bad scheme")
}

func TestShutdownReportsEverythingAndLeaksNothing(t *testing.T) {
	// Not parallel: it inspects the goroutines of the whole process.
	fr := newFakeRelay(t)
	got := make(chan *aep.Event, 1)
	fr.onCommand = func(_ *fakeConn, cmd *aep.Event, _ int) { got <- cmd } // never acked
	rep := newReports()
	cfg := testConfig(fr.url())
	cfg.Reporter = rep
	cfg.Queue = 4
	cfg.MaxInFlight = 1
	c := New(cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	require.NoError(t, c.Submit(t.Context(), submission("s1", "in-flight")))
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the command never reached the relay")
	}
	require.NoError(t, c.Submit(t.Context(), submission("s1", "queued")))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	outcomes := map[inbox.CardID]settlement{}
	for range 2 {
		o := rep.next(t)
		outcomes[o.Card] = o
	}
	assert.Equal(t, inbox.ReasonTimeout, outcomes["in-flight"].Reason, "sent, unacked: the agent may act")
	assert.Equal(t, inbox.ReasonUnreachable, outcomes["queued"].Reason, "never sent")
	assert.ErrorIs(t, c.Submit(t.Context(), submission("s1", "late")), ErrClosed)
	assert.ErrorIs(t, c.Run(t.Context()), ErrClosed, "Run runs once")

	closing := fr.await("closing", atLeast("closing", 1))
	assert.NotEmpty(t, closing)
	if leaked := respondGoroutines(); leaked != "" {
		t.Errorf("goroutines of the client still running after Run returned:\n%s", leaked)
	}
}

// respondGoroutines returns the stacks of goroutines running the client's
// code (not the tests' own).
func respondGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, m := range []string{"respond.(*Client)", "respond.(*conn)", "respond.(*delivery)"} {
			if strings.Contains(g, m) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}

// waitFor waits on ch until cond holds.
func waitFor(t testing.TB, ch <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// SubmitHeld subscribes to the command's acks at once but writes the
// command only once released (the UI releases it after the post's 303):
// the subscription's round trip is off the answer's way, and the command
// still cannot reach the agent before the browser hears its answer kept.
func TestSubmitHeldSubscribesNowAndWritesOnRelease(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	c, rep := start(t, testConfig(fr.url()))
	awaitConnected(t, c)

	s := submission("s1", "card-1")
	s.CommandID = c.newCommandID()
	send, err := c.SubmitHeld(t.Context(), s)
	require.NoError(t, err)
	fr.await("the ack subscription, before release", atLeast("subscribe", 1))
	// Another answer, not held, goes all the way meanwhile: by its
	// outcome the held one would long have been written.
	other := submission("s2", "card-2")
	other.CommandID = c.newCommandID()
	require.NoError(t, c.Submit(t.Context(), other))
	assert.Equal(t, other.CommandID, rep.next(t).CommandID, "the other answer settled first")
	for _, f := range fr.frames(typeRespond) {
		assert.NotContains(t, string(f.raw), s.CommandID, "the held command was written before release")
	}

	send(true)
	send(false) // only the first call counts
	o := rep.next(t)
	assert.Equal(t, settlement{Card: "card-1", CommandID: s.CommandID, State: inbox.SubmissionAccepted}, o)
	assert.Len(t, fr.frames(typeRespond), 2, "each command written once, the held one once released")
}

// blockingReporter holds the first outcome's report until released.
type blockingReporter struct {
	*reports
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (b *blockingReporter) SettleSubmission(card inbox.CardID, commandID string, state inbox.SubmissionState, reason, detail string) {
	if state == inbox.SubmissionAccepted {
		b.once.Do(func() {
			close(b.entered)
			<-b.release
		})
	}
	b.reports.SettleSubmission(card, commandID, state, reason, detail)
}

// A settled command's outcome is reported before its ack subscription is
// ended: the card shows the ack without waiting for the unsubscribe's
// write.
func TestOutcomeReportedBeforeUnsubscribe(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	cfg := testConfig(fr.url())
	rep := &blockingReporter{reports: newReports(), entered: make(chan struct{}), release: make(chan struct{})}
	cfg.Reporter = rep
	c := New(cfg)
	startRunning(t, c)

	s := submission("s1", "card-1")
	s.CommandID = c.newCommandID()
	require.NoError(t, c.Submit(t.Context(), s))
	select {
	case <-rep.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome reported")
	}
	// While the first report is held, a second command's subscribe is
	// written: every frame the first worker wrote before its report is
	// read before it.
	other := submission("s2", "card-2")
	other.CommandID = c.newCommandID()
	require.NoError(t, c.Submit(t.Context(), other))
	log := fr.await("the second command's subscribe", atLeast("subscribe", 2))
	var order []string
	for _, r := range log {
		order = append(order, r.typ)
	}
	assert.NotContains(t, order, "unsubscribe", "the first command's subscription ended before its report; frames %v", order)
	close(rep.release)
	// The second command's report waited behind the first's hold too
	// (sync.Once): once let go, the two reach the reports in either order.
	reported := []string{rep.next(t).CommandID, rep.next(t).CommandID}
	assert.ElementsMatch(t, []string{s.CommandID, other.CommandID}, reported, "both outcomes reported")
	fr.await("both subscriptions ended after their reports", atLeast("unsubscribe", 2))
}

// A held command its submitter drops (the journal did not keep the
// answer) is never written and nothing is reported for it; its ack
// subscription ends.
func TestSubmitHeldDroppedIsNeverSent(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	c, rep := start(t, testConfig(fr.url()))
	awaitConnected(t, c)

	s := submission("s1", "card-1")
	s.CommandID = c.newCommandID()
	send, err := c.SubmitHeld(t.Context(), s)
	require.NoError(t, err)
	fr.await("the ack subscription", atLeast("subscribe", 1))
	send(false)
	send(true) // too late: dropped
	fr.await("the dropped command's subscription ended", atLeast("unsubscribe", 1))
	// Another answer goes all the way after it: by its outcome the
	// dropped one would have been written and reported.
	other := submission("s2", "card-2")
	other.CommandID = c.newCommandID()
	require.NoError(t, c.Submit(t.Context(), other))
	assert.Equal(t, other.CommandID, rep.next(t).CommandID, "only the other answer is reported")
	for _, f := range fr.frames(typeRespond) {
		assert.NotContains(t, string(f.raw), s.CommandID, "the dropped command was written")
	}
	select {
	case o := <-rep.ch:
		t.Fatalf("reported: %+v", o)
	default:
	}
}

// Held while no relay is connected: the "queued" report waits for the
// gate (the submission may not be on its card before), and comes at once
// when it opens.
func TestSubmitHeldWithoutRelayReportsQueuedWhenLetGo(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.down.Store(true)
	c, rep := start(t, testConfig(fr.url()))

	s := submission("s1", "card-1")
	s.CommandID = c.newCommandID()
	send, err := c.SubmitHeld(t.Context(), s)
	require.NoError(t, err)
	select {
	case q := <-rep.queued:
		t.Fatalf("queued reported before the gate opened: %+v", q)
	default:
	}
	send(true)
	q := rep.nextQueued(t)
	assert.Equal(t, s.CommandID, q.CommandID)
}

// awaitConnected waits until c has a relay connection (held commands
// subscribe early only on one).
func awaitConnected(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cn, err := c.awaitConn(ctx, time.Now().Add(10*time.Second))
	require.NoError(t, err)
	require.NotNil(t, cn, "no relay connection")
}
