package app

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/web"
	"golang.org/x/crypto/bcrypt"
)

var printedSecret = regexp.MustCompile(`(?m)^  ([0-9a-f]{64})$`)

// addOp runs `aepforms operator add` with args and returns the secret it
// printed.
func addOp(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out, errOut := newNotifyBuffer(), newNotifyBuffer()
	err := Run(context.Background(), append([]string{"operator", "add"}, args...), envMap(env), nil, out, errOut)
	require.NoError(t, err, "operator add %v: %s", args, errOut.String())
	m := printedSecret.FindStringSubmatch(out.String())
	require.NotNil(t, m, "a secret is printed: %q", out.String())
	return m[1]
}

// `operator add NAME` appends the name and the hash of a fresh secret to
// the operators file (mode 0600) and prints the secret once; the same
// name twice is refused.
func TestOperatorAdd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "conf", "operators")
	ann := addOp(t, nil, "Ann", "--operators-file", path)
	bo := addOp(t, map[string]string{"AEPFORMS_OPERATORS_FILE": path}, "Bo Li", "--role", "admin", "--team", "leads,oncall")
	assert.NotEqual(t, ann, bo)

	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "only the user may read the operators file")
	ops, err := loadOperators(path)
	require.NoError(t, err)
	require.Len(t, ops, 2)
	assert.Equal(t, "Ann", ops[0].Name)
	assert.Equal(t, "Bo Li", ops[1].Name)
	assert.Equal(t, web.Role(""), ops[0].Role, "answerer by default: the line names no role")
	assert.Equal(t, web.RoleAdmin, ops[1].Role, "--role admin")
	assert.Nil(t, ops[0].Teams, "no --team: in no team")
	assert.Equal(t, []string{"leads", "oncall"}, ops[1].Teams, "--team leads,oncall")
	assert.NoError(t, bcrypt.CompareHashAndPassword([]byte(ops[0].Hash), []byte(ann)), "the file keeps the hash of the printed secret")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), ann, "never the secret itself")

	errOut := newNotifyBuffer()
	err = Run(context.Background(), []string{"operator", "add", "--operators-file", path, "Ann"}, envMap(nil), nil, errOut, errOut)
	require.Error(t, err)
	assert.Contains(t, errOut.String(), "already names an operator")
	after, _ := os.ReadFile(path)
	assert.Equal(t, string(b), string(after), "the file is unchanged")

	for name, args := range map[string][]string{
		"no name":       {"--operators-file", path},
		"unknown role":  {"Cy", "--role", "boss", "--operators-file", path},
		"bad team":      {"Cy", "--team", "on call", "--operators-file", path},
		"no file":       {"Cy"},
		"control chars": {"C\x01y", "--operators-file", path},
	} {
		err := Run(context.Background(), append([]string{"operator", "add"}, args...), envMap(nil), nil, errOut, errOut)
		assert.Equal(t, 2, ExitCode(err), "%s: a usage error: %v", name, err)
	}
}

// serve with an operators file: each operator signs in with their own
// name and secret; the shared secret cannot be given as well, and a file
// others can read is refused.
func TestServeWithNamedOperators(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "operators")
	ann := addOp(t, nil, "Ann", "--operators-file", path)

	stderr := newNotifyBuffer()
	err := Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--operators-file", path, "--operator-token", strings.Repeat("x", 20)},
		envMap(map[string]string{"HOME": dir}), nil, stderr, stderr)
	assert.Equal(t, 2, ExitCode(err), "both at once: %v", err)

	open := filepath.Join(dir, "open")
	b, _ := os.ReadFile(path)
	require.NoError(t, os.WriteFile(open, b, 0o644))
	stderr = newNotifyBuffer()
	err = Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--operators-file", open},
		envMap(map[string]string{"HOME": dir}), nil, stderr, stderr)
	require.Error(t, err)
	assert.Contains(t, stderr.String(), "chmod 600")

	stderr = newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0"},
			envMap(map[string]string{"HOME": dir, "AEPFORMS_OPERATORS_FILE": path}), nil, stderr, stderr)
	}()
	stderr.waitFor(t, "aepforms UI listening on http://")
	base := regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(stderr.String())[1]
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn := func(name, secret string) int {
		req, err := http.NewRequest(http.MethodPost, base+"signin", strings.NewReader(url.Values{"name": {name}, "token": {secret}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", strings.TrimSuffix(base, "/"))
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, signIn("Bo", ann), "another name with Ann's secret")
	assert.Equal(t, http.StatusSeeOther, signIn("Ann", ann), "Ann with her own secret")
	cancel()
	require.NoError(t, <-done)
}
