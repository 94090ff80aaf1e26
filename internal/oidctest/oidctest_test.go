package oidctest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The aepforms binary carries no identity provider: ZITADEL's OP is
// imported by tests only, through this package, while the binary's own
// sign-in (go-oidc) is in it.
func TestBinaryCarriesNoProvider(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/aepforms/aepforms/cmd/aepforms").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Split(string(out), "\n")
	require.Contains(t, deps, "github.com/coreos/go-oidc/v3/oidc", "the binary's own sign-in is in it")
	for _, d := range deps {
		assert.False(t, strings.HasPrefix(d, "github.com/zitadel/"), "the binary imports %s", d)
		assert.NotEqual(t, "github.com/aepforms/aepforms/internal/oidctest", d)
	}
}
