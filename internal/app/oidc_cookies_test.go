package app

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// TestHTTPSPublicURLMarksCookiesSecure: a --public-url of https:// says
// browsers reach the UI over TLS (a proxy terminating it), so the session
// and sign-in cookies are Secure without --trust-proxy; an http:// one on
// loopback leaves them as they were.
func TestHTTPSPublicURLMarksCookiesSecure(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("s3cret\n"), 0o600))
	parse := func(public string) bool {
		c, err := parseServe([]string{"--oidc-issuer", "https://login.example.com/realms/ops", "--oidc-client-id", "aepforms",
			"--oidc-client-secret-file", secretFile, "--public-url", public}, envMap(nil), io.Discard)
		require.NoError(t, err)
		return webConfig(c, "", inbox.Viewer{}, slog.New(slog.DiscardHandler)).SecureCookies
	}
	assert.True(t, parse("https://forms.example.com"), "browsers reach it over https")
	assert.False(t, parse("http://127.0.0.1:8080"), "a plain http:// UI on loopback cannot keep a Secure cookie")
}
