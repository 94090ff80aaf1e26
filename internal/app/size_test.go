package app

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"16384": 16384, "16KiB": 16 << 10, "64MiB": 64 << 20, "64 mb": 64 << 20, "1G": 1 << 30, "10b": 10} {
		got, err := parseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0", "-1", "lots", "1.5MiB", "16TiB"} {
		_, err := parseSize(in)
		assert.Error(t, err, "%q", in)
	}
}

// The budget flags take their defaults, then env, then the flag.
func TestServeBudgetFlags(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) Env { return func(k string) string { return m[k] } }
	c, err := parseServe(nil, env(nil), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 5000, c.maxPending)
	assert.Equal(t, sizeFlag(64<<20), c.maxBytes)
	assert.Equal(t, 2000, c.maxControls)
	assert.Equal(t, sizeFlag(16<<10), c.promptBytes)

	c, err = parseServe([]string{"--max-inbox-bytes", "8MiB", "--max-controls", "500"},
		env(map[string]string{"AEPFORMS_MAX_PENDING": "100", "AEPFORMS_PROMPT_BYTES": "4KiB", "AEPFORMS_MAX_CONTROLS": "900"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 100, c.maxPending)
	assert.Equal(t, sizeFlag(8<<20), c.maxBytes)
	assert.Equal(t, 500, c.maxControls, "the flag wins over env")
	assert.Equal(t, sizeFlag(4<<10), c.promptBytes)

	_, err = parseServe([]string{"--max-pending", "0"}, env(nil), io.Discard)
	assert.ErrorIs(t, err, ErrUsage)
	_, err = parseServe([]string{"--prompt-bytes", "lots"}, env(nil), io.Discard)
	assert.Error(t, err)
}
