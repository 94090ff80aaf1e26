package respond

import (
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnconfirmedSubscriptionStillSends(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.hold = true // `subscribed` never comes, but acks do
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) {
		fc.sendRaw(fr.ack(cmd, typeAccepted, map[string]any{}).Raw())
	}
	cfg := testConfig(fr.url())
	cfg.AckWindow = 50 * time.Millisecond
	c, rep := start(t, cfg)
	require.NoError(t, c.Submit(t.Context(), submission("s1", "card")))
	assert.Equal(t, inbox.SubmissionAccepted, rep.next(t).State)
	assert.Len(t, fr.frames(typeRespond), 1)
}

func TestSilentRelayIsDroppedAndRedialled(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.mute = true
	cfg := testConfig(fr.url())
	cfg.PingInterval = 10 * time.Millisecond
	cfg.SilenceTimeout = 60 * time.Millisecond
	start(t, cfg)
	log := fr.await("a second hello", atLeast("hello", 2))
	var pings int
	for _, r := range log {
		if r.typ == "ping" && r.conn == 1 {
			pings++
			assert.IsType(t, float64(0), r.frame["t"], "ping carries t")
		}
	}
	assert.Positive(t, pings, "the client pinged before giving up")
}

func TestBadHelloKeepsRetrying(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]any{
		"version-unsupported": {"type": "error", "code": "version-unsupported", "versions": []string{"9.9"}},
		"not a hello":         {"type": "subscribed", "id": "x"},
		"two versions":        {"type": "hello", "versions": []string{"0.1", "0.2"}, "role": "both", "capabilities": map[string]any{}},
	}
	for name, reply := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fr := newFakeRelay(t)
			fr.onHello = func(fc *fakeConn, _ map[string]any) bool {
				fc.send(reply)
				return false
			}
			notify, ch := notifier()
			cfg := testConfig(fr.url())
			cfg.Notify = notify
			c, _ := start(t, cfg)
			fr.await("a redial", atLeast("hello", 2))
			assert.False(t, c.Connected())
			assert.ErrorIs(t, c.Err(), ErrHello)
			select {
			case <-ch:
				t.Error("Notify fired though the client never connected")
			default:
			}
		})
	}
}

func TestConnectedAndNotify(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	gotConn := make(chan *fakeConn, 4)
	fr.onHello = func(fc *fakeConn, _ map[string]any) bool {
		gotConn <- fc
		return true
	}
	notify, ch := notifier()
	cfg := testConfig(fr.url())
	cfg.Notify = notify
	c, _ := start(t, cfg)
	waitFor(t, ch, "connected", c.Connected)
	assert.NoError(t, c.Err())

	(<-gotConn).drop()
	// The client redials only after it saw the loss.
	fr.await("a redial", atLeast("hello", 2))
	waitFor(t, ch, "reconnected", c.Connected)
	assert.NoError(t, c.Err())
}
