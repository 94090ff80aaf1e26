package respond

import (
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"

	"github.com/aepforms/aepforms/internal/aep"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notifier is a Config.Notify that signals a channel.
func notifier() (func(), chan struct{}) {
	ch := make(chan struct{}, 64)
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}, ch
}

func TestRosterReach(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	window := int64(2500)
	respond := &ControlDecl{Accepts: []string{typeRespond}, AckWindowMS: &window}
	fr.setRoster([]RosterEntry{
		{Session: "one", Agent: "demo", Instance: "a", Control: respond},
		{Session: "twice", Agent: "demo", Instance: "a", Control: respond},
		{Session: "twice", Agent: "impostor", Instance: "b", Control: respond},
		{Session: "watch-only", Agent: "logger"},
		{Session: "cancel-only", Agent: "x", Control: &ControlDecl{Accepts: []string{"control.cancel"}}},
	})
	var conns []*fakeConn
	fr.onHello = func(fc *fakeConn, _ map[string]any) bool {
		fr.mu.Lock()
		conns = append(conns, fc)
		fr.mu.Unlock()
		return true
	}
	cfg := testConfig(fr.url())
	cfg.AckWindow = 0
	notify, ch := notifier()
	cfg.Notify = notify
	c, _ := start(t, cfg)
	waitFor(t, ch, "first roster", func() bool { return c.Reach("one") != inbox.ReachUnknown })

	cases := []struct {
		session          string
		reach            inbox.Reach
		reachable, known bool
	}{
		{"one", inbox.ReachConnected, true, true},
		{"twice", inbox.ReachAmbiguous, false, true},
		{"watch-only", inbox.ReachNoControl, false, true},
		{"cancel-only", inbox.ReachNoControl, false, true},
		{"absent", inbox.ReachNotConnected, false, true},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.reach, c.Reach(tc.session), "Reach(%q)", tc.session)
		r := c.Reach(tc.session)
		assert.Equal(t, tc.reachable, r.TakesAnswers(), "Reach(%q).TakesAnswers", tc.session)
		assert.Equal(t, tc.known, r.Known(), "Reach(%q).Known", tc.session)
	}
	assert.Equal(t, 2500*time.Millisecond, c.AckWindow("one"))
	assert.Equal(t, DefaultAckWindow, c.AckWindow("twice"), "no single claimant: the default window")
	entries, ok := c.Roster()
	require.True(t, ok)
	assert.Len(t, entries, 5)

	// A new session appears: the app asks again.
	fr.setRoster([]RosterEntry{{Session: "new", Agent: "demo", Control: respond}})
	c.Refresh()
	waitFor(t, ch, "refreshed roster", func() bool { return c.Reach("new") == inbox.ReachConnected })
	assert.Equal(t, inbox.ReachNotConnected, c.Reach("one"), "a snapshot replaces the last one")

	// After a reconnect the roster is asked for again.
	fr.mu.Lock()
	first := conns[0]
	fr.mu.Unlock()
	first.drop()
	fr.await("a roster request on the second connection", func(log []received) bool {
		for _, r := range log {
			if r.typ == "roster" && r.conn > first.n {
				return true
			}
		}
		return false
	})
	waitFor(t, ch, "roster after reconnect", func() bool { return c.Reach("new") == inbox.ReachConnected })
}

func TestRosterNotAdvertised(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.caps = map[string]any{}
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	c, rep := start(t, testConfig(fr.url()))
	c.Refresh()
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card")))
	assert.Equal(t, inbox.SubmissionAccepted, rep.next(t).State)
	assert.True(t, c.Connected())
	assert.Equal(t, inbox.ReachUnknown, c.Reach("s1"), "a relay without roster: unknown")
	assert.Empty(t, fr.frames("roster"), "no roster request to a relay that did not declare it")
}

func TestRosterUnknownWhileDisconnected(t *testing.T) {
	t.Parallel()
	c := New(testConfig("http://127.0.0.1:1"))
	assert.Equal(t, inbox.ReachUnknown, c.Reach("s1"))
	assert.False(t, c.Connected())
	assert.Equal(t, DefaultAckWindow, New(Config{RelayURL: "http://x"}).AckWindow("s1"))
}

func TestRosterRequestsCoalesce(t *testing.T) {
	t.Parallel()
	var r roster
	id := r.next(time.Minute)
	require.NotEmpty(t, id)
	assert.Empty(t, r.next(time.Minute), "a second ask while one is in flight sends nothing")
	taken, again := r.set("roster-stale", nil)
	assert.False(t, taken, "a reply to another request is dropped")
	assert.False(t, again)
	taken, again = r.set(id, []RosterEntry{{Session: "s"}})
	assert.True(t, taken)
	assert.True(t, again, "the coalesced ask is due after the reply")
	reach, _ := r.reach("s")
	assert.Equal(t, inbox.ReachNoControl, reach)

	id2 := r.next(time.Minute)
	require.NotEmpty(t, id2)
	assert.True(t, r.refused(id2), "an error frame answering the request")
	reach, _ = r.reach("s")
	assert.Equal(t, inbox.ReachUnknown, reach, "a refused roster leaves nothing known")

	id3 := r.next(0)
	assert.NotEqual(t, id3, r.next(0), "an unanswered request is given up after its patience")
}
