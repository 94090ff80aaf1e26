package app

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/web"
)

// TestOIDCFlags: the provider's flags and env, the client secret from its
// file or env, and the refusals: an http:// issuer off loopback, a
// missing client id, secret or public URL, a public URL with a path, and
// the provider's flags without an issuer.
func TestOIDCFlags(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("s3cret\n"), 0o600))
	good := []string{"--oidc-issuer", "https://login.example.com/realms/ops", "--oidc-client-id", "aepforms",
		"--oidc-client-secret-file", secretFile, "--public-url", "https://forms.example.com"}

	c, err := parseServe(append(good, "--oidc-role", "admin=aepforms-admins", "--oidc-role", "answerer=oncall", "--oidc-role", "answerer=sre"), envMap(nil), io.Discard)
	require.NoError(t, err)
	o := c.oidc()
	assert.Equal(t, "groups", o.RolesClaim)
	assert.Equal(t, map[web.Role][]string{web.RoleAdmin: {"aepforms-admins"}, web.RoleAnswerer: {"oncall", "sre"}}, o.Roles)
	require.NotNil(t, o)
	assert.Equal(t, "s3cret", o.ClientSecret, "read from the file, trimmed")
	assert.Equal(t, []string{"preferred_username", "email"}, o.NameClaims)
	assert.Equal(t, 10*time.Second, o.Timeout)
	assert.Equal(t, "https://forms.example.com", o.PublicURL)

	c, err = parseServe([]string{"--addr", "0.0.0.0:8080"}, envMap(map[string]string{
		"AEPFORMS_OIDC_ISSUER": "http://127.0.0.1:9998", "AEPFORMS_OIDC_CLIENT_ID": "ui", "AEPFORMS_OIDC_CLIENT_SECRET": "from-env",
		"AEPFORMS_PUBLIC_URL": "http://localhost:8080", "AEPFORMS_OIDC_NAME_CLAIM": "email",
		"AEPFORMS_OIDC_ROLES_CLAIM": "roles", "AEPFORMS_OIDC_ROLES": "admin=ops-leads,viewer=audit"}), io.Discard)
	require.NoError(t, err, "from env; an identity provider is a sign-in, so off loopback is allowed")
	assert.Equal(t, "from-env", c.oidc().ClientSecret)
	assert.Equal(t, []string{"email"}, c.oidc().NameClaims)
	assert.Equal(t, "roles", c.oidc().RolesClaim)
	assert.Equal(t, map[web.Role][]string{web.RoleAdmin: {"ops-leads"}, web.RoleViewer: {"audit"}}, c.oidc().Roles)

	c, err = parseServe(nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	assert.Nil(t, c.oidc(), "no issuer: no provider")

	with := func(extra ...string) []string { return append(append([]string{}, good...), extra...) }
	for _, bad := range [][]string{
		with("--oidc-issuer", "http://login.example.com"),
		with("--oidc-issuer", "ftp://login.example.com"),
		with("--oidc-client-id", ""),
		with("--oidc-client-secret-file", filepath.Join(t.TempDir(), "missing")),
		with("--public-url", ""),
		with("--public-url", "https://forms.example.com/forms/"),
		with("--public-url", "http://forms.example.com"),
		with("--oidc-timeout", "0s"),
		with("--oidc-role", "boss=x"),
		with("--oidc-role", "admin"),
		with("--oidc-role", "admin="),
		{"--oidc-client-id", "aepforms"},
		{"--public-url", "https://forms.example.com"},
	} {
		_, err := parseServe(bad, envMap(nil), io.Discard)
		assert.ErrorIs(t, err, ErrUsage, "%v", bad)
	}
}

// The panel's sign-in through a window of its own takes its times from
// flags (and env), handed to the UI; each must be positive, and each
// needs --oidc-issuer.
func TestPanelSignInFlags(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("s3cret\n"), 0o600))
	good := []string{"--oidc-issuer", "https://login.example.com/realms/ops", "--oidc-client-id", "aepforms",
		"--oidc-client-secret-file", secretFile, "--public-url", "https://forms.example.com"}

	c, err := parseServe(good, envMap(nil), io.Discard)
	require.NoError(t, err)
	wc := webConfig(c, "", inbox.Viewer{}, slog.New(slog.DiscardHandler))
	assert.Equal(t, []time.Duration{10 * time.Minute, 15 * time.Second, 400 * time.Millisecond, 250 * time.Millisecond},
		[]time.Duration{wc.HandoffMaxAge, wc.SignInWindowWait, wc.SignInWindowPoll, wc.URLEvery}, "the defaults")

	c, err = parseServe(append(good, "--panel-signin-max-age", "3m", "--panel-signin-poll", "1s", "--url-every", "1s"),
		envMap(map[string]string{"AEPFORMS_PANEL_SIGNIN_WAIT": "30s"}), io.Discard)
	require.NoError(t, err)
	wc = webConfig(c, "", inbox.Viewer{}, slog.New(slog.DiscardHandler))
	assert.Equal(t, []time.Duration{3 * time.Minute, 30 * time.Second, time.Second, time.Second},
		[]time.Duration{wc.HandoffMaxAge, wc.SignInWindowWait, wc.SignInWindowPoll, wc.URLEvery}, "as given")

	for _, args := range [][]string{
		append(slices.Clone(good), "--panel-signin-max-age", "0s"),
		append(slices.Clone(good), "--panel-signin-wait", "-1s"),
		append(slices.Clone(good), "--panel-signin-poll", "0s"),
		{"--url-every", "0s"},
		{"--panel-signin-wait", "30s"},
	} {
		_, err := parseServe(args, envMap(map[string]string{"HOME": t.TempDir()}), io.Discard)
		assert.ErrorIs(t, err, ErrUsage, "%v", args)
	}
}
