package webpush

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Run follows a real inbox: a question arriving from the feed is pushed,
// and its deadline passing (the inbox's sweep) replaces it with
// "Expired".
func TestRunFollowsTheInbox(t *testing.T) {
	f := newFixture(t)
	d := f.subscribe(t, "/p", "alice")
	in := inbox.New(inbox.Options{Now: f.clock.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	sub := in.Subscribe(256)
	go func() { defer close(done); f.pusher.RunFrom(ctx, in, sub, time.Hour) }()
	t.Cleanup(func() { cancel(); <-done })

	req := aep.Request{Kind: aep.KindPermission, Prompt: "Run `make release`?", ExpiresAt: t0.Add(2 * time.Minute).Format(time.RFC3339),
		Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}}
	ev, err := aep.Decode(samples.Requested("q1", "s1", 1, req))
	require.NoError(t, err)
	in.Apply(ev)
	r := f.ps.next(t, d)
	assert.Equal(t, "Run make release?\nAnswer by 12:02 UTC", r.message.Body)
	assert.Equal(t, "high", r.header.Get("Urgency"))

	f.clock.add(3 * time.Minute)
	in.Sweep()
	r = f.ps.next(t, d)
	assert.Equal(t, "Expired", r.message.Body)
}

// A question a rule (standing answer) answers is not announced: nobody
// is woken for what nobody needs to answer; one it does not
// answer still is.
func TestRuledQuestionsAreNotPushed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	d := f.subscribe(t, "/p", "alice")
	p, err := New(Config{Subject: "mailto:ops@example.com", AllowLoopback: true, Now: f.clock.Now,
		Ruled: func(_ context.Context, c inbox.Card) bool { return c.ID == "ruled" }}, f.store)
	require.NoError(t, err)
	p.Observe(ctx, card("ruled", "Run ls?", time.Time{}))
	f.ps.none(t)
	p.Observe(ctx, card("other", "Run rm?", time.Time{}))
	assert.Equal(t, "Run rm?", f.ps.next(t, d).message.Body)
}

// A question that arrives while the inbox drops the pusher's
// subscription (a burst overflowed its queue) is pushed all the same:
// the pusher looks at every card when it subscribes again.
func TestAQuestionOfADroppedSubscriptionIsPushed(t *testing.T) {
	f := newFixture(t)
	d := f.subscribe(t, "/p", "alice")
	in := inbox.New(inbox.Options{Now: f.clock.Now})
	apply := func(id string, req aep.Request) {
		t.Helper()
		ev, err := aep.Decode(samples.Requested(id, "s1", 1, req))
		require.NoError(t, err)
		in.Apply(ev)
	}
	sub := in.Subscribe(1)
	// The change in the queue is of a question past its deadline: no
	// push. The next one overflows the queue.
	apply("gone", aep.Request{Kind: aep.KindInput, Prompt: "Too late?", ExpiresAt: t0.Add(-time.Minute).Format(time.RFC3339)})
	apply("q1", aep.Request{Kind: aep.KindInput, Prompt: "Which branch?"})
	require.True(t, sub.Dropped(), "two changes overflow a queue of one")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.pusher.RunFrom(ctx, in, sub, time.Hour) }()
	t.Cleanup(func() { cancel(); <-done })
	assert.Equal(t, "Which branch?", f.ps.next(t, d).message.Body)
}
