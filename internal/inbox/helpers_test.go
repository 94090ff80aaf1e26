package inbox

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/fixtures"
	"github.com/aepforms/aepforms/internal/aep"
)

// clock is a test clock the inbox reads through Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestInbox(t *testing.T) (*Inbox, *clock) {
	t.Helper()
	clk := newClock()
	return New(Options{Now: clk.Now}), clk
}

// golden reads the golden corpus, one event per line.
func golden(t testing.TB) []*aep.Event {
	t.Helper()
	var out []*aep.Event
	for _, line := range fixtures.GoldenLines(t) {
		e, err := aep.Decode(line)
		require.NoError(t, err, "corpus line %d", len(out)+1)
		out = append(out, e)
	}
	require.NotEmpty(t, out)
	return out
}

// ev builds an event from an envelope, failing the test on error.
func ev(t testing.TB, env aep.Envelope) *aep.Event {
	t.Helper()
	if env.Time == "" {
		env.Time = "2026-07-03T10:00:00Z"
	}
	e, err := aep.Build(env)
	require.NoError(t, err)
	return e
}

// raw decodes an event from JSON text, failing the test on error.
func raw(t testing.TB, s string) *aep.Event {
	t.Helper()
	e, err := aep.Decode([]byte(s))
	require.NoError(t, err)
	return e
}

const (
	testSource  = "aep://test/agent/demo/session/s1"
	testAgent   = "demo"
	testSession = "s1"
)

// request builds an attention.requested with id in the test session.
func request(t testing.TB, id string, seq int64, data any) *aep.Event {
	t.Helper()
	return ev(t, aep.Envelope{ID: id, Type: "attention.requested", Source: testSource, Agent: testAgent,
		Session: testSession, Seq: aep.Int64(seq), Capture: "full", Data: data})
}

// lifecycle builds an event of typ about request id from the test emitter.
func lifecycle(t testing.TB, typ, id, subject, cause string, seq int64, data any) *aep.Event {
	t.Helper()
	env := aep.Envelope{ID: id, Type: typ, Subject: subject, Cause: cause, Source: testSource, Agent: testAgent,
		Session: testSession, Capture: "full", Data: data}
	if seq >= 0 {
		env.Seq = aep.Int64(seq)
	}
	return ev(t, env)
}

func formData(expiresAt string) map[string]any {
	d := map[string]any{
		"kind":   "form",
		"prompt": "Pick",
		"fields": []map[string]any{
			{"id": "name", "type": "string", "label": "Name", "required": true},
		},
	}
	if expiresAt != "" {
		d["expires_at"] = expiresAt
	}
	return d
}

func cardIDOf(id string) CardID {
	return RequestKey{Source: testSource, Session: testSession, RequestID: id}.CardID()
}

// stable strips what legitimately differs between two deliveries of the
// same events (change counts), for comparing final cards.
func stable(cards []Card) map[CardID]Card {
	out := make(map[CardID]Card, len(cards))
	for _, c := range cards {
		c.Version = 0
		out[c.ID] = c
	}
	return out
}

// drainNow returns what is queued on sub without waiting.
func drainNow(sub *Subscription) []Change {
	var out []Change
	for {
		select {
		case ch, ok := <-sub.C():
			if !ok {
				return out
			}
			out = append(out, ch)
		default:
			return out
		}
	}
}

// next waits for one change on sub, failing after a deadline.
func next(t *testing.T, sub *Subscription) Change {
	t.Helper()
	select {
	case ch, ok := <-sub.C():
		require.True(t, ok, "subscription closed, want a change")
		return ch
	case <-time.After(5 * time.Second):
		t.Fatal("no change within 5s")
	}
	return Change{}
}
