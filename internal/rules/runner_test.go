package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// sent is a respond path that keeps what it was handed.
type sent struct {
	mu  sync.Mutex
	got []inbox.Submission
}

func (s *sent) Submit(_ context.Context, sub inbox.Submission) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, sub)
	return nil
}

func (s *sent) all() []inbox.Submission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]inbox.Submission(nil), s.got...)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func journal(t *testing.T) *sqlite.Journal {
	t.Helper()
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "state", "journal.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// seq numbers the requests ask applies (atomic: the tests run in
// parallel).
var seq atomic.Int64

// ask applies a permission request id from agent with prompt, and returns
// its card.
func ask(t *testing.T, in *inbox.Inbox, agent, id, prompt string) inbox.Card {
	t.Helper()
	e, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Source: "aep://h/agent/" + agent, Agent: agent,
		Session: "s1", Capture: "full", Seq: aep.Int64(seq.Add(1)), Time: "2026-03-01T12:00:00Z",
		Data: map[string]any{"kind": "permission", "prompt": prompt, "options": permOptions}})
	require.NoError(t, err)
	in.Apply(e)
	c, ok := in.Card(inbox.RequestKey{Source: "aep://h/agent/" + agent, Session: "s1", RequestID: id}.CardID())
	require.True(t, ok)
	return c
}

func card(t *testing.T, in *inbox.Inbox, id inbox.CardID) inbox.Card {
	t.Helper()
	c, ok := in.Card(id)
	require.True(t, ok)
	return c
}

func makeRule(t *testing.T, st Store, id string, at time.Time, m func(*store.RuleMatch)) store.Rule {
	t.Helper()
	r := permRule()
	r.ID, r.Created, r.Expires, r.Name = id, at, at.Add(8*time.Hour), "Allow once to permission requests"
	if m != nil {
		m(&r.Match)
	}
	require.NoError(t, st.CreateRule(context.Background(), r, 0))
	return r
}

// A rule answers each matching request once, through the inbox's
// journal (the submission is kept under the rule's name), records the
// use and counts it; a request it does not match, and every request
// after it is deleted, stays for the operators.
func TestRunnerAnswersMatchesOnce(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	r := New(Config{Now: clk.Now}, j, in, out)
	rule := makeRule(t, j, "R1", t0, func(m *store.RuleMatch) { m.PromptContains = "ls" })

	for _, id := range []string{"q1", "q2", "q3"} {
		c := ask(t, in, "builder", id, "May I run ls?")
		r.Observe(ctx, c)
		r.Observe(ctx, card(t, in, c.ID)) // seen again: still one answer
		got := card(t, in, c.ID)
		require.NotNil(t, got.Submission, id)
		assert.Equal(t, By("R1"), got.Submission.By)
		assert.Equal(t, "allow", got.Submission.Answer.Option)
	}
	require.Len(t, out.all(), 3, "one command per request")
	n, err := j.RuleUses(ctx, "R1", t0)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, map[string]int64{"R1": 3}, r.Answered())
	page, err := j.History(ctx, store.HistoryQuery{Operator: By("R1")})
	require.NoError(t, err)
	assert.Len(t, page.Entries, 3, "History holds the rule's answers under its name")

	other := ask(t, in, "builder", "q4", "May I run rm?")
	r.Observe(ctx, other)
	assert.Nil(t, card(t, in, other.ID).Submission, "not matching: left for the operator")

	_, err = j.DeleteRule(ctx, rule.ID, "", clk.Now())
	require.NoError(t, err)
	after := ask(t, in, "builder", "q5", "May I run ls?")
	r.Observe(ctx, after)
	assert.Nil(t, card(t, in, after.ID).Submission, "deleted: the next match stays")
	assert.Len(t, out.all(), 3)
}

// A rule answering more than the rate within the window pauses itself,
// says why, and leaves the request; so does a rule whose maker lost
// access. A watch-only UI runs none.
func TestRunnerPauses(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	r := New(Config{Now: clk.Now, MaxRate: 2, RateWindow: time.Minute, Allowed: func(op string) bool { return op != "mallory" }}, j, in, out)
	makeRule(t, j, "R1", t0, nil)

	r.Observe(ctx, ask(t, in, "builder", "q1", "one"))
	clk.Add(10 * time.Second)
	r.Observe(ctx, ask(t, in, "builder", "q2", "two"))
	clk.Add(10 * time.Second)
	third := ask(t, in, "builder", "q3", "three")
	r.Observe(ctx, third)
	assert.Nil(t, card(t, in, third.ID).Submission, "over the rate: left for the operator")
	got, _, err := j.Rule(ctx, "R1")
	require.NoError(t, err)
	assert.Equal(t, store.RulePaused, got.State)
	assert.Contains(t, got.Reason, "3 requests within 1 minute")
	assert.Len(t, out.all(), 2)

	bad := makeRule(t, j, "R2", t0, nil)
	bad.Maker = "mallory"
	_, err = j.DeleteRule(ctx, "R2", "", clk.Now())
	require.NoError(t, err)
	bad.ID = "R3"
	require.NoError(t, j.CreateRule(ctx, bad, 0))
	c := ask(t, in, "builder", "q4", "four")
	r.Observe(ctx, c)
	assert.Nil(t, card(t, in, c.ID).Submission)
	got, _, err = j.Rule(ctx, "R3")
	require.NoError(t, err)
	assert.Equal(t, store.RulePaused, got.State)
	assert.Equal(t, "Paused: mallory, who made it, no longer has access.", got.Reason)

	clk.Add(2 * time.Minute) // its answers are out of the window now
	_, err = j.SetRuleState(ctx, "R1", store.RuleActive, "", "", clk.Now())
	require.NoError(t, err)
	watch := New(Config{Now: clk.Now}, j, in, nil)
	c = ask(t, in, "builder", "q5", "five")
	assert.False(t, watch.Answers(ctx, c))
	watch.Observe(ctx, c)
	assert.Nil(t, card(t, in, c.ID).Submission, "watch-only runs no rule")
	assert.True(t, r.Answers(ctx, c), "the rule resumed")
}

// Two replicas sharing one journal both see the request; the journal's
// one-live-answer index lets one answer it.
func TestRunnersOnOneJournalAnswerOnce(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	j := journal(t)
	a, b := inbox.New(inbox.Options{Journal: j, Now: clk.Now}), inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	outA, outB := &sent{}, &sent{}
	ra, rb := New(Config{Now: clk.Now}, j, a, outA), New(Config{Now: clk.Now}, j, b, outB)
	makeRule(t, j, "R1", t0, nil)
	for _, id := range []string{"q1", "q2", "q3"} {
		ca, cb := ask(t, a, "builder", id, "p"), ask(t, b, "builder", id, "p")
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); ra.Observe(ctx, ca) }()
		go func() { defer wg.Done(); rb.Observe(ctx, cb) }()
		wg.Wait()
	}
	assert.Len(t, append(outA.all(), outB.all()...), 3, "one command per request across replicas")
	n, err := j.RuleUses(ctx, "R1", t0)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

// Run follows the inbox: a request arriving after it started is
// answered without anyone calling Observe.
func TestRunFollowsTheInbox(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j})
	out := &sent{}
	r := New(Config{}, j, in, out)
	rule := permRule()
	rule.ID, rule.Created, rule.Expires = "R1", time.Now(), time.Now().Add(time.Hour)
	require.NoError(t, j.CreateRule(ctx, rule, 0))
	done := make(chan struct{})
	sub := in.Subscribe(16)
	go func() { r.Run(ctx, sub); close(done) }()
	c := ask(t, in, "builder", "q1", "p")
	require.Eventually(t, func() bool { return len(out.all()) == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, By("R1"), card(t, in, c.ID).Submission.By)
	cancel()
	<-done
}

// A Run whose subscription the inbox dropped (a slow consumer: a burst
// of requests overflowed its queue) still answers every request that
// arrived meanwhile: it looks at the inbox's cards again when it
// re-subscribes, not only at the changes after that.
func TestRunAnswersRequestsMissedWhileDropped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j})
	out := &sent{}
	r := New(Config{}, j, in, out)
	rule := permRule()
	rule.ID, rule.Created, rule.Expires = "R1", time.Now(), time.Now().Add(time.Hour)
	require.NoError(t, j.CreateRule(ctx, rule, 0))
	sub := in.Subscribe(1)
	var ids []inbox.CardID
	for _, id := range []string{"d1", "d2", "d3", "d4"} {
		ids = append(ids, ask(t, in, "builder", id, "p").ID)
	}
	require.True(t, sub.Dropped(), "the burst overflowed the queue")
	done := make(chan struct{})
	go func() { r.Run(ctx, sub); close(done) }()
	require.Eventually(t, func() bool { return len(out.all()) == len(ids) }, 5*time.Second, 5*time.Millisecond,
		"every request of the burst is answered")
	for _, id := range ids {
		got := card(t, in, id)
		require.NotNil(t, got.Submission, string(id))
		assert.Equal(t, By("R1"), got.Submission.By)
	}
	// After the burst, Run follows the inbox as before.
	next := ask(t, in, "builder", "d5", "p")
	require.Eventually(t, func() bool { return len(out.all()) == len(ids)+1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, By("R1"), card(t, in, next.ID).Submission.By)
	cancel()
	<-done
	assert.Len(t, out.all(), len(ids)+1, "each request answered once")
}

// deleteAfterRead is a journal where an operator deletes rule id just
// after the Runner read the active rules: the delete lands while the
// Runner is deciding.
type deleteAfterRead struct {
	*sqlite.Journal
	id  string
	now func() time.Time
}

func (d deleteAfterRead) ActiveRules(ctx context.Context, now time.Time) ([]store.Rule, error) {
	list, err := d.Journal.ActiveRules(ctx, now)
	if err == nil {
		_, err = d.DeleteRule(ctx, d.id, "", d.now())
	}
	return list, err
}

// A rule deleted (or paused) while the Runner decides answers nothing
// more: the Runner claims the request for the rule in the journal only
// while the rule is still active there, and answers only what it
// claimed. A request an operator answered first releases the claim, so
// the rule's uses count only what it sent.
func TestRunnerAnswersOnlyWhileTheRuleIsActive(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	makeRule(t, j, "R1", t0, nil)
	r := New(Config{Now: clk.Now}, deleteAfterRead{Journal: j, id: "R1", now: clk.Now}, in, out)
	c := ask(t, in, "builder", "q1", "p")
	r.Observe(ctx, c)
	assert.Nil(t, card(t, in, c.ID).Submission, "deleted meanwhile: left for the operator")
	assert.Empty(t, out.all())
	n, err := j.RuleUses(ctx, "R1", t0)
	require.NoError(t, err)
	assert.Zero(t, n)

	// An operator's answer already on its way: the rule sends nothing and
	// counts no use.
	makeRule(t, j, "R2", t0, nil)
	out = &sent{}
	r = New(Config{Now: clk.Now}, j, in, out)
	mine := ask(t, in, "builder", "q2", "p")
	_, err = in.BeginSubmission(mine.ID, inbox.Submission{Token: "t", CommandID: "op-1", Answer: aep.Answer{Option: "allow"}, By: "alice"})
	require.NoError(t, err)
	r.Observe(ctx, card(t, in, mine.ID))
	assert.Equal(t, "alice", card(t, in, mine.ID).Submission.By)
	assert.Empty(t, out.all())
	n, err = j.RuleUses(ctx, "R2", t0)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// A rule answers only requests that arrived after it was made, as the
// README promises, even when the Runner looks at a request later (a
// catch-up after its subscription was dropped, or a busy Runner): the
// ones already waiting stay for the operator.
func TestRunnerLeavesRequestsFromBeforeTheRule(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	r := New(Config{Now: clk.Now}, j, in, out)
	waiting := ask(t, in, "builder", "q1", "p")
	clk.Add(time.Second)
	makeRule(t, j, "R1", clk.Now(), nil)
	r.Observe(ctx, card(t, in, waiting.ID))
	assert.Nil(t, card(t, in, waiting.ID).Submission, "asked before the rule: left for the operator")
	assert.False(t, r.Answers(ctx, card(t, in, waiting.ID)), "and notified as any question")
	clk.Add(time.Second)
	next := ask(t, in, "builder", "q2", "p")
	r.Observe(ctx, next)
	require.NotNil(t, card(t, in, next.ID).Submission, "asked after: answered")
	assert.Len(t, out.all(), 1)
}

// The Runner forgets the cards that left the inbox while its
// subscription was dropped (their removals were lost with it): what it
// keeps per card is bounded by the inbox, however often it is dropped.
func TestCatchUpForgetsCardsThatLeft(t *testing.T) {
	ctx := context.Background()
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, MaxSettled: 1})
	r := New(Config{}, j, in, &sent{})
	var ids []inbox.CardID
	for _, id := range []string{"g1", "g2", "g3"} {
		c := ask(t, in, "builder", id, "p")
		r.Observe(ctx, c)
		ids = append(ids, c.ID)
	}
	for _, id := range []string{"g1", "g2", "g3"} { // settled; all but the last evicted
		e, err := aep.Build(aep.Envelope{ID: "res-" + id, Type: "attention.resolved", Source: "aep://h/agent/builder", Agent: "builder",
			Session: "s1", Subject: id, Seq: aep.Int64(seq.Add(1)), Time: "2026-03-01T12:00:01Z", Data: map[string]any{}})
		require.NoError(t, err)
		in.Apply(e)
	}
	_, kept := in.Card(ids[2])
	require.True(t, kept)
	_, gone := in.Card(ids[0])
	require.False(t, gone, "evicted")
	r.catchUp(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Equal(t, map[inbox.CardID]bool{ids[2]: true}, r.tried, "only the card still held is remembered")
}

// A resumed rule answers only requests that arrived after it was
// resumed: the ones that came while it was paused stay for the operator,
// even when the Runner looks at them late.
func TestResumedRuleLeavesRequestsFromWhileItWasPaused(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	r := New(Config{Now: clk.Now}, j, in, out)
	makeRule(t, j, "R1", t0, nil)
	clk.Add(time.Second)
	_, err := j.SetRuleState(ctx, "R1", store.RulePaused, "Paused by alice.", "", clk.Now())
	require.NoError(t, err)
	clk.Add(time.Second)
	waiting := ask(t, in, "builder", "q1", "p")
	clk.Add(time.Second)
	_, err = j.SetRuleState(ctx, "R1", store.RuleActive, "", "", clk.Now())
	require.NoError(t, err)
	r.Observe(ctx, card(t, in, waiting.ID))
	assert.Nil(t, card(t, in, waiting.ID).Submission, "asked while paused: left for the operator")
	clk.Add(time.Second)
	next := ask(t, in, "builder", "q2", "p")
	r.Observe(ctx, next)
	require.NotNil(t, card(t, in, next.ID).Submission, "asked after the resume: answered")
	assert.Len(t, out.all(), 1)
}

// While serve stops, the Runner's reads are cut short by its context: the
// request stays open and nothing is lost, so it is no warning (SIGTERM's
// quiet stop in CI printed "rules: could not be read" at WARN). The same
// failure while running is one.
func TestRunnerStoppingWarnsNothing(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	j := journal(t)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	var logged syncBuffer // the broken journal's retry warns from its own goroutine
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r := New(Config{Now: clk.Now, Logger: log}, j, in, &sent{})
	makeRule(t, j, "R1", t0, nil)

	stopping, stop := context.WithCancel(context.Background())
	stop()
	c := ask(t, in, "builder", "q1", "May I run ls?")
	r.Observe(stopping, c)
	assert.Nil(t, card(t, in, c.ID).Submission, "not answered while stopping")
	assert.NotContains(t, logged.String(), "level=WARN", "a read cut short by the stop")

	require.NoError(t, j.Close())
	c2 := ask(t, in, "builder", "q2", "May I run ls?")
	r.Observe(context.Background(), c2)
	assert.Contains(t, logged.String(), "rules: could not be read", "a broken journal while running warns")
}

// flaky is a journal whose rule reads fail while fails is above zero
// (each failed read takes one), then heal: a database blip.
type flaky struct {
	Store
	fails atomic.Int32
	reads atomic.Int32
}

func (f *flaky) ActiveRules(ctx context.Context, now time.Time) ([]store.Rule, error) {
	f.reads.Add(1)
	if f.fails.Add(-1) >= 0 {
		return nil, errors.New("database is locked")
	}
	return f.Store.ActiveRules(ctx, now)
}

// A rule read that fails does not leave the request to the operators for
// good: the Runner reads again after --rule-retry-interval, doubling the
// wait while it fails, and answers once the journal is back.
func TestRunnerRetriesAFailedReadUntilItHeals(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	j := journal(t)
	st := &flaky{Store: j}
	st.fails.Store(3)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	var logged syncBuffer
	r := New(Config{Now: clk.Now, RetryInterval: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logged, nil))}, st, in, out)
	makeRule(t, j, "R1", t0, nil)

	c := ask(t, in, "builder", "q1", "May I run ls?")
	r.Observe(context.Background(), c)
	require.Eventually(t, func() bool { return len(out.all()) == 1 }, 10*time.Second, 5*time.Millisecond, "answered once the reads heal")
	assert.Equal(t, By("R1"), card(t, in, c.ID).Submission.By)
	assert.Equal(t, int32(4), st.reads.Load(), "three failed reads, then the one that answered")
	assert.Contains(t, logged.String(), "tried again in ", "the wait is logged")
	r.Wait()
	assert.Len(t, out.all(), 1, "one command")
}

// While the reads fail, a request an operator answers meanwhile is
// tried no more, and nothing more is sent.
func TestRunnerStopsRetryingARequestAnswered(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	j := journal(t)
	st := &flaky{Store: j}
	st.fails.Store(1 << 20)
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	r := New(Config{Now: clk.Now, RetryInterval: time.Millisecond}, st, in, out)
	makeRule(t, j, "R1", t0, nil)

	c := ask(t, in, "builder", "q1", "May I run ls?")
	r.Observe(context.Background(), c)
	require.Eventually(t, func() bool { return st.reads.Load() >= 3 }, 10*time.Second, time.Millisecond, "retried")
	_, err := in.BeginSubmission(c.ID, inbox.Submission{Token: "tok", CommandID: "cmd-alice", Answer: aep.Answer{Option: "deny"}, By: "alice"})
	require.NoError(t, err)
	r.Wait() // every retry under way ends: the answered request is not tried again
	n := st.reads.Load()
	r.Wait()
	assert.Equal(t, n, st.reads.Load(), "no retry after the operator answered")
	assert.Empty(t, out.all(), "the rule sent nothing")
	assert.Equal(t, "alice", card(t, in, c.ID).Submission.By)
}

// syncBuffer is a log safe for the retries' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A request the journal did not fail is not tried again: an answer the
// inbox refuses for good (here its command cannot be made) would fail
// the same way every time, so the Runner leaves it to the operators once,
// with one warning, instead of claiming and releasing it for as long as
// it waits.
func TestRunnerDoesNotRetryWhatNoRetryMends(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	j := journal(t)
	var builds atomic.Int32
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now, Command: func(inbox.Submission) ([]byte, error) {
		builds.Add(1)
		return nil, errors.New("the answer does not fit the request")
	}})
	out := &sent{}
	var logged syncBuffer
	r := New(Config{Now: clk.Now, RetryInterval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logged, nil))}, j, in, out)
	makeRule(t, j, "R1", t0, nil)

	c := ask(t, in, "builder", "q1", "May I run ls?")
	r.Observe(context.Background(), c)
	waited := make(chan struct{})
	go func() { r.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatalf("still retrying after %d tries: a refusal no retry mends is tried again", builds.Load())
	}
	assert.Equal(t, int32(1), builds.Load(), "tried once")
	assert.Empty(t, out.all(), "nothing sent")
	assert.Nil(t, card(t, in, c.ID).Submission, "left to the operators")
	assert.Contains(t, logged.String(), "the request waits for the operators")
	assert.NotContains(t, logged.String(), "tried again in")
	n, err := j.RuleUses(context.Background(), "R1", t0.Add(-time.Hour))
	require.NoError(t, err)
	assert.Zero(t, n, "the claim released")
}

// The requests one outage failed are not all looked at again at the same
// instant (as many rule reads at once as requests wait, on a database
// just back): each waits between half of --rule-retry-interval and the
// whole of it, and each is answered once the journal heals.
func TestRunnerSpreadsTheRetriesOfOneOutage(t *testing.T) {
	t.Parallel()
	const requests, interval = 20, 40 * time.Millisecond
	clk := &clock{t: t0}
	j := journal(t)
	st := &flaky{Store: j}
	st.fails.Store(requests) // the first look at each fails
	in := inbox.New(inbox.Options{Journal: j, Now: clk.Now})
	out := &sent{}
	var logged syncBuffer
	r := New(Config{Now: clk.Now, RetryInterval: interval, Logger: slog.New(slog.NewTextHandler(&logged, nil))}, st, in, out)
	makeRule(t, j, "R1", t0, nil)
	for i := range requests {
		r.Observe(context.Background(), ask(t, in, "builder", fmt.Sprintf("q%d", i), "May I run ls?"))
	}
	waits := map[time.Duration]bool{}
	for _, m := range regexp.MustCompile(`tried again in ([0-9.]+[a-zµ]+)`).FindAllStringSubmatch(logged.String(), -1) {
		d, err := time.ParseDuration(m[1])
		require.NoError(t, err)
		assert.GreaterOrEqual(t, d, interval/2, "at least half the interval")
		assert.LessOrEqual(t, d, interval, "at most the interval")
		waits[d] = true
	}
	assert.Greater(t, len(waits), 1, "%d failed requests, waits %v: all tried again at the same instant", requests, waits)
	require.Eventually(t, func() bool { return len(out.all()) == requests }, 10*time.Second, 5*time.Millisecond, "each answered once the journal heals")
	r.Wait()
	assert.Len(t, out.all(), requests, "one command each")
}
