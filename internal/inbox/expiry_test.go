package inbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestExpiry(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	deadline := clk.Now().Add(time.Minute)
	in.Apply(request(t, "r1", 1, formData(deadline.Format(time.RFC3339))))
	id := cardIDOf("r1")
	c, _ := in.Card(id)
	require.Equal(t, StatePending, c.State)
	assert.True(t, c.ExpiresAt.Equal(deadline), "ExpiresAt got %v want %v", c.ExpiresAt, deadline)

	in.FeedState(true, nil) // connected: the sweep's only news is the deadline (not the connect grace)
	sub := in.Subscribe(8)
	defer sub.Close()
	clk.Add(59 * time.Second)
	in.Sweep()
	assert.Empty(t, drainNow(sub), "a sweep before the deadline changes nothing")

	clk.Add(time.Second)
	in.Sweep()
	got := drainNow(sub)
	require.Len(t, got, 1)
	assert.Equal(t, Change{Seq: got[0].Seq, Card: id, Kind: ChangeUpdated}, got[0])
	c, _ = in.Card(id)
	assert.Equal(t, StateExpired, c.State)
	assert.Equal(t, 0, in.Status().Pending)

	_, err := in.BeginSubmission(id, Submission{Token: "t", CommandID: "c1"})
	assert.ErrorIs(t, err, ErrExpired)

	in.Sweep()
	assert.Empty(t, drainNow(sub), "a second sweep changes nothing")

	// an outcome after the deadline still wins: the agent is the authority
	in.Apply(lifecycle(t, "attention.timeout", "t1", "r1", "r1", 2, nil))
	c, _ = in.Card(id)
	assert.Equal(t, StateTimedOut, c.State)
}

func TestBeginSubmissionChecksTheClockWithoutSweep(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData(clk.Now().Add(time.Second).Format(time.RFC3339Nano))))
	clk.Add(2 * time.Second)
	sub := in.Subscribe(4)
	defer sub.Close()
	_, err := in.BeginSubmission(cardIDOf("r1"), Submission{Token: "t", CommandID: "c1"})
	assert.ErrorIs(t, err, ErrExpired)
	c, _ := in.Card(cardIDOf("r1"))
	assert.Equal(t, StateExpired, c.State)
	assert.Len(t, drainNow(sub), 1, "the expiry found on submit is published")
}

func TestCardsOrder(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	base := clk.Now()
	at := func(d time.Duration) string { return base.Add(d).Format(time.RFC3339) }
	// asked in this order, one second apart
	in.Apply(request(t, "no-deadline-old", 1, formData("")))
	clk.Add(time.Second)
	in.Apply(request(t, "late-deadline", 2, formData(at(time.Hour))))
	clk.Add(time.Second)
	in.Apply(request(t, "no-deadline-new", 3, formData("")))
	clk.Add(time.Second)
	in.Apply(request(t, "soon-deadline", 4, formData(at(time.Minute))))
	clk.Add(time.Second)
	in.Apply(request(t, "settled-first", 5, formData("")))
	in.Apply(request(t, "settled-second", 6, formData("")))
	in.Apply(lifecycle(t, "attention.timeout", "t1", "settled-first", "", 7, nil))
	in.Apply(lifecycle(t, "attention.timeout", "t2", "settled-second", "", 8, nil))

	var got []string
	for _, c := range in.Cards(Query{}) {
		got = append(got, c.Key.RequestID)
	}
	assert.Equal(t, []string{"soon-deadline", "late-deadline", "no-deadline-old", "no-deadline-new",
		"settled-second", "settled-first"}, got)
}

func TestQuery(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	in.Apply(request(t, "r2", 2, map[string]any{"kind": "permission", "prompt": "ok?"}))
	in.Apply(ev(t, aep.Envelope{ID: "r3", Type: "attention.requested", Source: "aep://o/agent/other/session/s2",
		Agent: "other", Session: "s2", Seq: aep.Int64(0), Data: formData("")}))
	ids := func(q Query) []string {
		var out []string
		for _, c := range in.Cards(q) {
			out = append(out, c.Key.RequestID)
		}
		return out
	}
	tests := []struct {
		q    Query
		want []string
	}{
		{Query{}, []string{"r1", "r2", "r3"}},
		{Query{Agent: "other"}, []string{"r3"}},
		{Query{Session: testSession}, []string{"r1", "r2"}},
		{Query{Kind: "permission"}, []string{"r2"}},
		{Query{Agent: testAgent, Kind: "form"}, []string{"r1"}},
		{Query{Agent: "nobody"}, nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%+v", tc.q), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, ids(tc.q))
		})
	}
}

func TestSettledBoundedPendingKept(t *testing.T) {
	t.Parallel()
	clk := newClock()
	in := New(Options{Now: clk.Now, MaxSettled: 2})
	for i := range 10 {
		in.Apply(request(t, fmt.Sprintf("open%d", i), int64(i), formData("")))
	}
	sub := in.Subscribe(64)
	defer sub.Close()
	for i := range 3 {
		id := fmt.Sprintf("done%d", i)
		in.Apply(request(t, id, int64(100+2*i), formData("")))
		in.Apply(lifecycle(t, "attention.timeout", "to-"+id, id, id, int64(101+2*i), nil))
	}
	cards := in.Cards(Query{})
	require.Len(t, cards, 12, "10 pending + 2 settled")
	assert.Equal(t, "done2", cards[10].Key.RequestID, "newest settled first")
	assert.Equal(t, "done1", cards[11].Key.RequestID)
	_, ok := in.Card(cardIDOf("done0"))
	assert.False(t, ok, "the oldest settled card is evicted")

	var removed []CardID
	for _, ch := range drainNow(sub) {
		if ch.Kind == ChangeRemoved {
			removed = append(removed, ch.Card)
		}
	}
	assert.Equal(t, []CardID{cardIDOf("done0")}, removed)
	assert.Equal(t, 10, in.Status().Pending)
}

func TestQueryMatch(t *testing.T) {
	t.Parallel()
	c := Card{Agent: "a", Key: RequestKey{Session: "s"}, Request: aep.Request{Kind: "form"}}
	tests := []struct {
		q    Query
		want bool
	}{
		{Query{}, true},
		{Query{Agent: "a", Session: "s", Kind: "form"}, true},
		{Query{Agent: "b"}, false},
		{Query{Session: "t"}, false},
		{Query{Kind: "input"}, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.q.Match(c), "%+v", tc.q)
	}
}

func TestSweepReopensWhenTheClockGoesBack(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	start := clk.Now()
	in.Apply(request(t, "r1", 1, formData(start.Add(time.Minute).Format(time.RFC3339))))
	clk.Add(2 * time.Minute)
	in.Sweep()
	c, _ := in.Card(cardIDOf("r1"))
	require.Equal(t, StateExpired, c.State)
	clk.Set(start)
	in.Sweep()
	c, _ = in.Card(cardIDOf("r1"))
	assert.Equal(t, StatePending, c.State)
	assert.Equal(t, 1, in.Status().Pending)
}
