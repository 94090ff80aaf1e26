package app

import (
	"io"
	"testing"

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
