package relay_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A peer that stopped reading (a stopped process) never answers the
// relay's close frame: the drain drops its connection after CloseWait,
// not after the WebSocket library's own 5 s wait for the answer.
func TestShutdownDropsAPeerThatStoppedReading(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.CloseWait = 50 * time.Millisecond
	tr := startRelay(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	u := "ws" + strings.TrimPrefix(tr.url("/socket", url.Values{"access_token": {tr.token}}), "http")
	ws, resp, err := websocket.Dial(ctx, u, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.CloseNow() })
	b, err := json.Marshal(hello("consumer"))
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, b))
	_, _, err = ws.Read(ctx) // the relay's hello: nothing is read after it
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, tr.Shutdown(ctx), "the drain ends")
	assert.Less(t, time.Since(start), time.Second, "the drain's wait for a peer that does not read")
}
