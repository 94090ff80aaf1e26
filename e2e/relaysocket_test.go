package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// relaySocket is a test's own consumer WebSocket to the relay, after the
// hello exchange: an external AEP client beside the UI.
type relaySocket struct {
	t   *testing.T
	ctx context.Context
	c   *websocket.Conn
}

// dialRelay connects to the relay's /socket with the token as a consumer
// named agent; the connection closes when the test ends.
func (s *stack) dialRelay(t *testing.T, ctx context.Context, agent string) *relaySocket {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.token}}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.relayURL, "http")+"/socket", &websocket.DialOptions{HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	require.NoError(t, err, "dial the relay's socket")
	t.Cleanup(func() { _ = c.CloseNow() })
	c.SetReadLimit(16 << 20)
	rs := &relaySocket{t: t, ctx: ctx, c: c}
	rs.write(map[string]any{"type": "hello", "versions": []string{aep.Version}, "role": "consumer",
		"identity": map[string]string{"agent": agent, "instance": "e2e"}})
	rs.read("hello", "")
	return rs
}

func (rs *relaySocket) write(v any) {
	rs.t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(v)
		require.NoError(rs.t, err)
	}
	require.NoError(rs.t, rs.c.Write(rs.ctx, websocket.MessageText, b), "write to the relay")
}

// socketFrame is the part of a relay frame the tests read.
type socketFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Code    string `json:"code"`
	Entries []struct {
		Session string `json:"session"`
	} `json:"entries"`
}

// read returns the next frame of type typ with id id, skipping others.
func (rs *relaySocket) read(typ, id string) socketFrame {
	rs.t.Helper()
	for {
		_, b, err := rs.c.Read(rs.ctx)
		require.NoError(rs.t, err, "waiting for a %s frame from the relay", typ)
		var f socketFrame
		require.NoError(rs.t, json.Unmarshal(b, &f), "relay frame %s", b)
		if f.Type == typ && f.ID == id {
			return f
		}
	}
}

// awaitRoster waits until the relay's roster lists session (listed) or
// no longer does: whether a command to it would be routed. The relay
// announces a claim or a dropped peer to nobody, so this asks its roster
// on a short tick, with a deadline.
func (s *stack) awaitRoster(t *testing.T, session string, listed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	rs := s.dialRelay(t, ctx, "e2e-roster-probe")
	defer rs.c.CloseNow()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for n := 1; ; n++ {
		id := "probe-" + strconv.Itoa(n)
		rs.write(map[string]string{"type": "roster", "id": id})
		got := false
		for _, e := range rs.read("roster", id).Entries {
			got = got || e.Session == session
		}
		if got == listed {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the relay's roster lists session %s: %v, want %v, after %v", session, got, listed, stackWait)
		}
	}
}
