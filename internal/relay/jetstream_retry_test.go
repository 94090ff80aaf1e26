package relay

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/relay/natstest"
)

// A redelivery goes on the stream once however often its publish is
// retried (its ack lost to a timeout, the message stored): it carries a
// Nats-Msg-Id of its own transmission. A second redelivery is stored
// again, so every node forwards it live, as the relay in memory does.
func TestRedeliveryRetriedIsStoredOnce(t *testing.T) {
	t.Parallel()
	c := natstest.StartT(t, 1)
	cfg := DefaultConfig()
	cfg.Token = "t"
	cfg.NATS = NATSConfig{URLs: c.URLs(), Replicas: 1}
	ctx, cancel := context.WithTimeout(context.Background(), natstest.ReadyTimeout)
	defer cancel()
	r, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
	})
	l := r.events.(*jsLog)
	ev, err := aep.Decode([]byte(`{"aep":"0.1","id":"e1","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://a/agent/a/session/s","agent":"a","session":"s","seq":1,"data":{}}`))
	require.NoError(t, err)
	_, err = l.append(ctx, []*aep.Event{ev})
	require.NoError(t, err)

	messages := func() uint64 {
		info, err := l.st.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs
	}
	// One redelivery, its publish retried after a lost ack.
	id := l.redeliveryID(ev)
	for range 2 {
		_, err := l.publishAgain(ctx, ev, id)
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, messages(), "the event, then its redelivery once")
	// And a first transmission retried: the stream keeps it once too.
	_, err = l.publishAgain(ctx, ev, msgID(ev))
	require.NoError(t, err)
	require.EqualValues(t, 2, messages(), "the event's first transmission again: a duplicate")

	dups, err := l.append(ctx, []*aep.Event{ev})
	require.NoError(t, err)
	require.Len(t, dups, 1)
	require.EqualValues(t, 3, messages(), "a second redelivery, kept to be forwarded live")
}
