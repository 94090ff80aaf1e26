package inbox

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A queued answer (posted while the relay was away) waits, locked, and is
// released for sending when the relay is back, unless its request closed
// first or it got too old: then it is never sent and the card says why.
func TestQueuedAnswer(t *testing.T) {
	t.Parallel()
	const maxAge = 10 * time.Minute
	deadline := time.Date(2026, 7, 3, 10, 5, 0, 0, time.UTC) // the test clock starts at 10:00
	type step func(t *testing.T, in *Inbox, clk *clock)
	apply := func(typ, id string, data map[string]any) step {
		return func(t *testing.T, in *Inbox, _ *clock) {
			subject := "r1"
			if typ == "session.ended" {
				subject = ""
			}
			in.Apply(lifecycle(t, typ, id, subject, "", 5, data))
		}
	}
	later := func(d time.Duration) step {
		return func(t *testing.T, in *Inbox, clk *clock) { clk.Add(d); in.Sweep() }
	}
	tests := []struct {
		name        string
		steps       []step
		wantRelease bool
		wantState   SubmissionState
		wantReason  string
	}{
		{"released when the relay is back", nil, true, SubmissionSending, ""},
		{"released just under the age limit", []step{later(maxAge)}, true, SubmissionSending, ""},
		{"answered elsewhere first: superseded", []step{apply("attention.answered", "a9",
			map[string]any{"answer": map[string]any{"values": map[string]any{"name": "y"}}, "via": "control"})},
			false, SubmissionSuperseded, ""},
		{"resolved first: superseded", []step{apply("attention.resolved", "z9", map[string]any{"resolution": "dismissed"})},
			false, SubmissionSuperseded, ""},
		{"session ended first: superseded", []step{apply("session.ended", "e9", map[string]any{"reason": "normal"})},
			false, SubmissionSuperseded, ""},
		{"expired first: superseded", []step{later(6 * time.Minute)}, false, SubmissionSuperseded, ""},
		{"past the age limit on a sweep: not sent", []step{later(maxAge + time.Second)}, false, SubmissionNotSent, ReasonTooOld},
		{"past the age limit with no sweep: not sent", []step{func(_ *testing.T, _ *Inbox, clk *clock) { clk.Add(maxAge + time.Second) }},
			false, SubmissionNotSent, ReasonTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			jr := NewMemoryJournal()
			in := New(Options{Now: clk.Now, Journal: jr, QueueMaxAge: maxAge})
			expires := ""
			if tt.name == "expired first: superseded" {
				expires = deadline.Format(time.RFC3339)
			}
			in.Apply(request(t, "r1", 1, formData(expires)))
			id := cardIDOf("r1")
			s, err := in.BeginSubmission(id, sub("t1", "c1"))
			require.NoError(t, err)
			in.SettleSubmission(id, s.CommandID, SubmissionQueued, "", "")
			c, _ := in.Card(id)
			require.Equal(t, SubmissionQueued, c.Submission.State)
			assert.True(t, c.Submission.SettledAt.IsZero(), "queued is not settled")
			assert.True(t, c.InFlight(), "a queued answer locks the form")
			_, err = in.BeginSubmission(id, sub("t2", "c2"))
			require.ErrorIs(t, err, ErrInFlight, "one answer per request, queued or sent")
			unsettled, err := jr.Unsettled()
			require.NoError(t, err)
			require.Len(t, unsettled, 1)
			assert.Equal(t, SubmissionQueued, unsettled[0].State, "the journal keeps it queued")

			for _, st := range tt.steps {
				st(t, in, clk)
			}
			assert.Equal(t, tt.wantRelease, in.ReleaseQueued(id, "c1"))
			c, _ = in.Card(id)
			assert.Equal(t, tt.wantState, c.Submission.State)
			assert.Equal(t, tt.wantReason, c.Submission.Reason)
			js, err := jr.Unsettled()
			require.NoError(t, err)
			if tt.wantRelease {
				require.Len(t, js, 1)
				assert.Equal(t, SubmissionSending, js[0].State)
			} else {
				assert.Empty(t, js, "the journal keeps why it was not sent")
				assert.False(t, in.ReleaseQueued(id, "c1"), "asked again: still not sent")
				in.SettleSubmission(id, "c1", SubmissionFailed, ReasonUnreachable, "")
				c, _ = in.Card(id)
				assert.Equal(t, tt.wantState, c.Submission.State, "the respond path's later report changes nothing")
			}
		})
	}
}

func TestQueuedIsSaidOnlyBeforeTheFirstWrite(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	id := cardIDOf("r1")
	_, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err)
	in.SettleSubmission(id, "c1", SubmissionFailed, ReasonTimeout, "")
	in.SettleSubmission(id, "c1", SubmissionQueued, "", "")
	c, _ := in.Card(id)
	assert.Equal(t, SubmissionFailed, c.Submission.State, "a sent answer never goes back to queued")
	assert.False(t, in.ReleaseQueued(id, "c1"))
	assert.False(t, in.ReleaseQueued(id, "nope"), "not the card's command")
}

// The page says "connecting" while the feed has never connected, until
// the grace (the reference relay's ping bound) passes; then "relay lost",
// published by the sweep. Once connected, a loss is a loss at once.
func TestConnectingUntilTheGracePasses(t *testing.T) {
	t.Parallel()
	clk := newClock()
	in := New(Options{Now: clk.Now})
	s := in.Subscribe(16)
	defer s.Close()
	assert.True(t, in.Status().FeedConnecting, "connecting at start")
	in.FeedState(false, errors.New("feed: no headers yet"))
	next(t, s)
	clk.Add(DefaultConnectGrace - time.Second)
	in.Sweep()
	assert.Empty(t, drainNow(s))
	assert.True(t, in.Status().FeedConnecting, "still within the 30 s bound")
	clk.Add(time.Second)
	in.Sweep()
	assert.Equal(t, ChangeStatus, next(t, s).Kind, "the page is told the bound passed")
	assert.False(t, in.Status().FeedConnecting)
	in.Sweep()
	assert.Empty(t, drainNow(s), "told once")

	in2 := New(Options{Now: clk.Now, ConnectGrace: time.Hour})
	in2.FeedState(true, nil)
	in2.FeedState(false, errors.New("feed: lost"))
	assert.False(t, in2.Status().FeedConnecting, "connected once: a loss is shown as lost")
	in3 := New(Options{Now: clk.Now, ConnectGrace: time.Minute})
	clk.Add(59 * time.Second)
	assert.True(t, in3.Status().FeedConnecting, "the bound is a config field")
	clk.Add(time.Second)
	assert.False(t, in3.Status().FeedConnecting)
}
