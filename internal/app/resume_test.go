package app

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// The feed counts as caught up once connected and quiet for the quiet
// span, or connected for the longest wait, and never while disconnected.
func TestResumeWaitsForTheFeedToCatchUp(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)}
	c := newCatchUp(inbox.New(inbox.Options{Now: clk.Now}), clk.Now)
	const quiet, most = time.Second, 10 * time.Second
	event := func() *aep.Event {
		e, err := aep.Build(aep.Envelope{ID: clk.Now().Format(time.RFC3339Nano), Type: "session.started",
			Source: "aep://t/a", Session: "s1", Time: "2026-07-03T10:00:00Z", Capture: "metadata", Data: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	assert.False(t, c.caughtUp(quiet, most), "not connected yet")
	clk.Add(time.Hour)
	assert.False(t, c.caughtUp(quiet, most), "never while disconnected")

	c.FeedState(true, nil)
	assert.False(t, c.caughtUp(quiet, most), "just connected")
	for range 5 {
		clk.Add(quiet / 2)
		c.Apply(event())
		assert.False(t, c.caughtUp(quiet, most), "events still coming")
	}
	clk.Add(quiet)
	assert.True(t, c.caughtUp(quiet, most), "quiet for the quiet span")

	c.FeedState(false, errors.New("lost"))
	assert.False(t, c.caughtUp(quiet, most), "disconnected again")
	c.FeedState(true, nil)
	for range 25 {
		clk.Add(quiet / 2)
		c.Apply(event())
	}
	assert.True(t, c.caughtUp(quiet, most), "connected for the longest wait, never quiet")
}

// Each time the feed's stream opens (the relay is back), the catch-up
// sink calls onConnect once: graph.go wakes the respond path with it.
func TestFeedReconnectWakesOnce(t *testing.T) {
	t.Parallel()
	c := newCatchUp(inbox.New(inbox.Options{}), nil)
	woken := make(chan struct{}, 8)
	c.onConnect = func() { woken <- struct{}{} }
	c.FeedState(false, errors.New("refused"))
	assert.Empty(t, woken, "no wake while the relay is away")
	c.FeedState(true, nil)
	assert.Len(t, woken, 1, "woken when the stream opens")
	c.FeedState(true, nil)
	assert.Len(t, woken, 1, "not again while it stays open")
	c.FeedState(false, errors.New("lost"))
	c.FeedState(true, nil)
	assert.Len(t, woken, 2, "woken again on the reconnect")
}
