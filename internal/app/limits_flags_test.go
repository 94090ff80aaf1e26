package app

import (
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The security limits' flags and env: documented defaults, bad values
// refused as usage errors.
func TestSecurityLimitFlags(t *testing.T) {
	t.Parallel()
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 512, c.maxConns)
	assert.Equal(t, 10*time.Second, c.headerTimeout)
	assert.Equal(t, 2*time.Minute, c.idleTimeout)
	assert.Equal(t, 20, c.pushMaxDevices)
	assert.Empty(t, c.trustedProxy, "default: web.DefaultTrustedProxies")

	c, err = parseServe([]string{"--trusted-proxy", "203.0.113.5", "--idle-timeout", "30s"}, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_PUSH_MAX_DEVICES": "5"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("203.0.113.5/32")}, c.trustedProxy)
	assert.Equal(t, 30*time.Second, c.idleTimeout)
	assert.Equal(t, 5, c.pushMaxDevices)

	for _, args := range [][]string{{"--trusted-proxy", "proxy.example"}, {"--push-max-devices", "0"}, {"--header-timeout", "0s"}, {"--idle-timeout", "-1s"}} {
		_, err := parseServe(args, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
		assert.ErrorIs(t, err, ErrUsage, "%v", args)
	}

	rs, err := embeddedRelaySettings(envMap(map[string]string{"AEP_MAX_CONNS": "64", "AEP_IDLE_TIMEOUT": "1m", "AEP_BODY_TIMEOUT": "5s"}))
	require.NoError(t, err)
	sc := rs.serverConfig(nil, time.Second)
	assert.Equal(t, 64, sc.MaxConns)
	assert.Equal(t, time.Minute, sc.IdleTimeout)
	assert.Equal(t, 5*time.Second, sc.Relay.ReadTimeout)
	_, err = embeddedRelaySettings(envMap(map[string]string{"AEP_MAX_CONNS": "0"}))
	assert.Error(t, err)
}
