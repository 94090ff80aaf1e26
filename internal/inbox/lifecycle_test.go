package inbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

const sinkSource = "aep://test/agent/sink"

func TestLifecycleStates(t *testing.T) {
	t.Parallel()
	req := func(t *testing.T) *aep.Event { return request(t, "r1", 1, formData("")) }
	routed := func(t *testing.T) *aep.Event {
		return ev(t, aep.Envelope{ID: "rt1", Type: "attention.routed", Subject: "r1", Cause: "r1", Source: sinkSource,
			Agent: "sink", Session: testSession, Data: map[string]any{"to": "ops-channel", "via": "slack"}})
	}
	ownRouted := func(t *testing.T) *aep.Event {
		return ev(t, aep.Envelope{ID: "rt2", Type: "attention.routed", Subject: "r1", Cause: "r1", Source: "aep://ui.test/aepforms",
			Agent: "aepforms", Session: testSession, Data: map[string]any{"to": "webpush", "via": SurfaceVia}})
	}
	answered := func(t *testing.T) *aep.Event {
		return lifecycle(t, "attention.answered", "a1", "r1", "r1", 2,
			map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}, "by": "alice", "via": "oob"})
	}
	resolved := func(res string) func(t *testing.T) *aep.Event {
		return func(t *testing.T) *aep.Event {
			return lifecycle(t, "attention.resolved", "z1", "r1", "a1", 3, map[string]any{"resolution": res})
		}
	}
	timeout := func(t *testing.T) *aep.Event {
		return lifecycle(t, "attention.timeout", "t1", "r1", "r1", 2, map[string]any{"after_ms": 1000})
	}
	ended := func(seq int64) func(t *testing.T) *aep.Event {
		return func(t *testing.T) *aep.Event {
			return lifecycle(t, "session.ended", "e1", "", "", seq, map[string]any{"reason": "normal"})
		}
	}
	type mk func(t *testing.T) *aep.Event
	tests := []struct {
		name      string
		events    []mk
		state     State
		check     func(t *testing.T, c Card)
		wantEnded bool
	}{
		{"pending", []mk{req}, StatePending, nil, false},
		{"routed names who to", []mk{req, routed}, StateRouted, func(t *testing.T, c Card) {
			assert.Equal(t, []Route{{To: "ops-channel", Via: "slack", Source: sinkSource, Agent: "sink"}}, c.Routes)
		}, false},
		// This UI's own deliveries (Web Push, a team's chat) are shown by
		// the card's routing (team, reminders, escalation); on the wire
		// they are for other consumers, and the card stays "waiting".
		{"this UI's own deliveries leave it pending", []mk{req, ownRouted}, StatePending, func(t *testing.T, c Card) {
			assert.Empty(t, c.Routes)
		}, false},
		{"answered keeps values, by and via", []mk{req, routed, answered}, StateAnswered, func(t *testing.T, c Card) {
			require.NotNil(t, c.Recorded)
			assert.Equal(t, aep.Values{"name": "x"}, c.Recorded.Answer.Values)
			assert.Equal(t, "alice", c.Recorded.By)
			assert.Equal(t, aep.ViaOOB, c.Recorded.Via)
			assert.Equal(t, aep.CaptureFull, c.Recorded.Capture)
			assert.True(t, c.AnsweredElsewhere)
		}, false},
		{"resolved answered", []mk{req, answered, resolved("answered")}, StateResolved, func(t *testing.T, c Card) {
			assert.Equal(t, aep.ResolutionAnswered, c.Resolution)
		}, false},
		{"resolved dismissed without an answer", []mk{req, resolved("dismissed")}, StateResolved, func(t *testing.T, c Card) {
			assert.Equal(t, aep.ResolutionDismissed, c.Resolution)
			assert.Nil(t, c.Recorded)
		}, false},
		{"resolved auto", []mk{req, resolved("auto")}, StateResolved, nil, false},
		{"timed out", []mk{req, timeout}, StateTimedOut, func(t *testing.T, c Card) {
			require.NotNil(t, c.TimeoutMS)
			assert.Equal(t, int64(1000), *c.TimeoutMS)
		}, false},
		{"session ended while open", []mk{req, ended(5)}, StateEnded, nil, true},
		{"session ended before it was asked (earlier seq)", []mk{ended(0), req}, StatePending, nil, false},
		{"an outcome outranks the ending", []mk{req, timeout, ended(5)}, StateTimedOut, nil, true},
		{"answered before requested", []mk{answered, req}, StateAnswered, nil, false},
		{"resolved before answered before requested", []mk{resolved("answered"), answered, req}, StateResolved, func(t *testing.T, c Card) {
			require.NotNil(t, c.Recorded)
			assert.Equal(t, "alice", c.Recorded.By)
		}, false},
		{"route before request", []mk{routed, req}, StateRouted, nil, false},
		{"every event twice", []mk{req, req, routed, answered, routed, answered, resolved("answered"), resolved("answered")},
			StateResolved, func(t *testing.T, c Card) {
				assert.Len(t, c.Routes, 1, "a repeated route is one hop")
			}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			for _, m := range tc.events {
				in.Apply(m(t))
			}
			c, ok := in.Card(cardIDOf("r1"))
			require.True(t, ok, "card exists")
			assert.Equal(t, tc.state, c.State, "state")
			assert.Equal(t, tc.wantEnded, c.SessionEnded, "SessionEnded")
			if tc.check != nil {
				tc.check(t, c)
			}
			wantPending := 0
			if tc.state.Open() {
				wantPending = 1
			}
			assert.Equal(t, wantPending, in.Status().Pending)
		})
	}
}

func TestInformationalAndKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		data          map[string]any
		informational bool
	}{
		{"respond_via oob only", map[string]any{"kind": "input", "prompt": "Name?", "respond_via": []string{"oob"}}, true},
		{"respond_via with control", map[string]any{"kind": "input", "prompt": "Name?", "respond_via": []string{"oob", "control"}}, false},
		{"respond_via absent", map[string]any{"kind": "input", "prompt": "Name?"}, false},
		{"unknown kind is still a card", map[string]any{"kind": "x-custom", "prompt": "Hm?"}, false},
		{"form without fields", map[string]any{"kind": "form", "prompt": "Tell me"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			in.Apply(request(t, "r1", 1, tc.data))
			c, ok := in.Card(cardIDOf("r1"))
			require.True(t, ok)
			assert.Equal(t, tc.informational, c.Informational)
			assert.Equal(t, StatePending, c.State)
			assert.Empty(t, c.Malformed)
			_, err := in.BeginSubmission(c.ID, Submission{Token: "t", CommandID: "c"})
			if tc.informational {
				assert.ErrorIs(t, err, ErrInformational)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// TestSameRequestIDOtherSource: ids are unique per source only; two
// emitters' requests with one id in one session name are two cards, and
// each one's own lifecycle finds its own card.
func TestSameRequestIDOtherSource(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	other := "aep://other/agent/x/session/s1"
	in.Apply(request(t, "r1", 1, formData("")))
	in.Apply(ev(t, aep.Envelope{ID: "r1", Type: "attention.requested", Source: other, Agent: "x", Session: testSession,
		Seq: aep.Int64(1), Data: formData("")}))
	in.Apply(ev(t, aep.Envelope{ID: "to1", Type: "attention.timeout", Subject: "r1", Source: other, Agent: "x",
		Session: testSession, Seq: aep.Int64(2)}))
	mine, _ := in.Card(cardIDOf("r1"))
	theirs, _ := in.Card(RequestKey{Source: other, Session: testSession, RequestID: "r1"}.CardID())
	assert.Equal(t, StatePending, mine.State)
	assert.Equal(t, StateTimedOut, theirs.State)
	assert.NotEqual(t, mine.ID, theirs.ID)
}

func TestCardIDIsOpaque(t *testing.T) {
	t.Parallel()
	k := RequestKey{Source: "aep://h/a", Session: "s<1>", RequestID: "r/1?x"}
	id := k.CardID()
	assert.Regexp(t, `^c[0-9a-f]{24}$`, string(id))
	assert.Equal(t, id, k.CardID(), "stable")
	assert.NotEqual(t, id, RequestKey{Source: "aep://h/as", Session: "<1>", RequestID: "r/1?x"}.CardID(),
		"length-prefixed: shifting text between parts changes the id")
}
