package app

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --rule-max / AEPFORMS_RULE_MAX: 500 by default, the env read, the flag
// over the env, and less than 1 a usage error.
func TestRuleMaxFlag(t *testing.T) {
	t.Parallel()
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 500, c.ruleMax)
	c, err = parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_RULE_MAX": "20"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 20, c.ruleMax)
	c, err = parseServe([]string{"--rule-max", "7"}, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_RULE_MAX": "20"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 7, c.ruleMax)
	_, err = parseServe([]string{"--rule-max", "0"}, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	assert.ErrorIs(t, err, ErrUsage)
}

// --rule-retry-interval / AEPFORMS_RULE_RETRY_INTERVAL: 2s by default,
// the env read, the flag over the env, and not positive a usage error.
func TestRuleRetryIntervalFlag(t *testing.T) {
	t.Parallel()
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, c.ruleRetry)
	c, err = parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_RULE_RETRY_INTERVAL": "500ms"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 500*time.Millisecond, c.ruleRetry)
	c, err = parseServe([]string{"--rule-retry-interval", "5s"}, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_RULE_RETRY_INTERVAL": "500ms"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, c.ruleRetry)
	_, err = parseServe([]string{"--rule-retry-interval", "0s"}, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	assert.ErrorIs(t, err, ErrUsage)
}

func TestDBWriteTimeoutFlag(t *testing.T) {
	t.Parallel()
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, c.dbWriteTimeout)
	c, err = parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB_WRITE_TIMEOUT": "3s"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, c.dbWriteTimeout)
	c, err = parseServe([]string{"--db-write-timeout", "1s"}, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB_WRITE_TIMEOUT": "3s"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, time.Second, c.dbWriteTimeout)
	_, err = parseServe([]string{"--db-write-timeout", "0s"}, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
	assert.ErrorIs(t, err, ErrUsage)
}
