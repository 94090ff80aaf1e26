package relay_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a log sink safe for the relay's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An orderly close by the peer is not a slow consumer: nothing about one
// is logged as a warning.
func TestOrderlyCloseIsNotLoggedAsSlowConsumer(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	c := cfg()
	c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tr := startRelay(t, c)
	rl := tr.Relay
	w := tr.dial(t)
	w.send(t, hello("consumer"))
	w.expect(t, "hello")
	require.NoError(t, w.c.Close(websocket.StatusNormalClosure, "bye"))

	// The connection is counted until its handler has ended, after any
	// warning it would have logged.
	require.Eventually(t, func() bool { return rl.Stats().Connections == 0 }, wait, time.Millisecond,
		"the relay still counts the closed connection")
	assert.NotContains(t, logs.String(), "too slow", "got a slow-consumer warning for an orderly close")
}
