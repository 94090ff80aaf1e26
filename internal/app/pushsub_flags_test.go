package app

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --push-subscribe-timeout (AEPFORMS_PUSH_SUBSCRIBE_TIMEOUT) is how long
// an open page waits for the browser's push service: 15 s by default, the
// flag over the env, never zero.
func TestPushSubscribeTimeoutFlag(t *testing.T) {
	t.Parallel()
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, c.pushSubTimeout)

	c, err = parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_PUSH_SUBSCRIBE_TIMEOUT": "40s"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 40*time.Second, c.pushSubTimeout)

	c, err = parseServe([]string{"--push-subscribe-timeout", "3s"}, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_PUSH_SUBSCRIBE_TIMEOUT": "40s"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, c.pushSubTimeout)

	_, err = parseServe([]string{"--push-subscribe-timeout", "0s"}, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	assert.ErrorIs(t, err, ErrUsage)
}
