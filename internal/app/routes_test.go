package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A routes file that does not read stops serve at start, naming the
// file and the problem, before anything listens.
func TestServeRefusesAnInvalidRoutesFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "routes.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"teams": {"oncall": {"remind": "soon"}}, "routes": [{"team": "oncall"}]}`), 0o600))
	stderr := newNotifyBuffer()
	err := Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--routes", p},
		envMap(map[string]string{"HOME": t.TempDir()}), nil, stderr, stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--routes: "+p)
	assert.Contains(t, err.Error(), `team "oncall": remind "soon" is not a positive duration`)
	assert.NotContains(t, stderr.String(), "listening on", "nothing started")
}
