package app

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A flag's env value that does not read is refused at start, naming the
// variable, as a bad flag is: never silently the default (a typo in a
// deployment's environment would otherwise run with a setting nobody
// chose). One that reads is the flag's default.
func TestUnreadableEnvIsRefused(t *testing.T) {
	t.Parallel()
	for k, v := range map[string]string{
		"AEPFORMS_CLAIM_IDLE":              "ten",
		"AEPFORMS_UNDO_WINDOW":             "5 seconds",
		"AEPFORMS_PAGE_CARDS":              "fifty",
		"AEPFORMS_MAX_CONNS":               "lots",
		"AEP_PORT":                         "http",
		"AEPFORMS_MAX_INBOX_BYTES":         "big",
		"AEPFORMS_PUSH_MAX_DEVICES":        "2.5",
		"AEPFORMS_HEADER_TIMEOUT":          "10",
		"AEPFORMS_RESPONSE_TIMEOUT":        "-",
		"AEPFORMS_DEMO_MAX_PENDING":        "x",
		"AEPFORMS_SETTLED_KEPT":            "twenty",
		"AEPFORMS_PROMPT_BYTES":            "16 kilobytes",
		"AEPFORMS_CLAIM_SYNC":              "1 s",
		"AEPFORMS_RULE_MAX":                "none",
		"AEPFORMS_OIDC_TIMEOUT":            "soon",
		"AEPFORMS_FEED_SILENCE":            "1m30",
		"AEPFORMS_ROSTER_INTERVAL":         "often",
		"AEPFORMS_BODY_TIMEOUT":            "30",
		"AEPFORMS_IDLE_TIMEOUT":            "2 min",
		"AEPFORMS_ACK_WINDOW":              "10 s",
		"AEPFORMS_RULE_MAX_RATE":           "1e3",
		"AEPFORMS_MAX_CONTROLS":            "2k",
		"AEPFORMS_MAX_PENDING":             "5,000",
		"AEPFORMS_PAGE_ROWS":               "500 rows",
		"AEPFORMS_MAX_STREAMS_PER_SESSION": "eight",
	} {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			_, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), k: v}), io.Discard)
			require.ErrorIs(t, err, ErrUsage, "%s=%q is refused", k, v)
			assert.Contains(t, err.Error(), k+`="`+v+`"`, "the error names the variable and its value")
		})
	}
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_CLAIM_IDLE": "10m", "AEPFORMS_PAGE_CARDS": "20"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, c.claimIdle, "a value that reads is the default")
	assert.Equal(t, 20, c.pageCards)
}
