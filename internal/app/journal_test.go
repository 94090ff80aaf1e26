package app

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve keeps its answers in a journal under $XDG_STATE_HOME; a second
// serve on the same journal refuses to start and names --db; the
// journal's command source outlives a restart.
func TestServeOwnsItsJournal(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := envMap(map[string]string{"HOME": t.TempDir(), "XDG_STATE_HOME": state})
	path := filepath.Join(state, "aepforms", "aepforms.db")
	first := newNotifyBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0"}, env, nil, first, first)
	}()
	first.waitFor(t, "aepforms UI listening on http://")
	assert.Contains(t, first.String(), path, "the log names the journal")
	st, err := os.Stat(path)
	require.NoError(t, err, "the journal is made under $XDG_STATE_HOME/aepforms")
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	source := regexp.MustCompile(`source=(aep://\S+/ui/aepforms/\S+)`).FindStringSubmatch(first.String())
	require.Len(t, source, 2, "the log names the journal's command source: %s", first.String())

	second := newNotifyBuffer()
	err = Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", path},
		envMap(map[string]string{"HOME": t.TempDir()}), nil, second, second)
	require.Error(t, err, "a second serve on the same journal must not start")
	assert.Equal(t, 1, ExitCode(err))
	assert.Contains(t, second.String(), path, "names the journal")
	assert.Contains(t, second.String(), "--db", "names the way to another journal")
	assert.NotContains(t, second.String(), "listening", "nothing started")

	cancel()
	require.NoError(t, <-done)

	again := newNotifyBuffer()
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", path}, env, nil, again, again)
	}()
	again.waitFor(t, "aepforms UI listening on http://")
	assert.Contains(t, again.String(), "source="+source[1], "a restart sends from the same source")
	cancel()
	require.NoError(t, <-done)
}

// A damaged journal stops serve before anything listens, naming the file
// and the way out; the file is left as it was.
func TestServeStopsOnADamagedJournal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "answers.db")
	garbage := []byte("this is not a database, but it is someone's file\n")
	require.NoError(t, os.WriteFile(path, append(garbage, make([]byte, 4096)...), 0o600))
	stderr := newNotifyBuffer()
	err := Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", path},
		envMap(map[string]string{"HOME": t.TempDir()}), nil, stderr, stderr)
	require.Error(t, err)
	assert.Contains(t, stderr.String(), path)
	assert.Contains(t, stderr.String(), "move it aside")
	assert.NotContains(t, stderr.String(), "listening", "nothing started")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, garbage, b[:len(garbage)], "never replaced")
}

// An empty (0-byte) journal stops serve like a damaged one: it is not
// taken for a new journal with a new identity.
func TestServeStopsOnAnEmptyJournal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "answers.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	stderr := newNotifyBuffer()
	err := Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", path},
		envMap(map[string]string{"HOME": t.TempDir()}), nil, stderr, stderr)
	require.Error(t, err)
	assert.Contains(t, stderr.String(), path)
	assert.Contains(t, stderr.String(), "is empty (0 bytes)")
	assert.NotContains(t, stderr.String(), "listening", "nothing started")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "left as it was")
}

// A key=value PostgreSQL connection string in --db or AEPFORMS_DB is
// PostgreSQL's: never a SQLite file made under that name, and its
// password is never printed (here the server is unreachable).
func TestServeTakesAKeyValueConnectionStringAsPostgres(t *testing.T) {
	t.Parallel()
	const dsn = "host=127.0.0.1 port=1 user=ui password=hunter2 dbname=answers connect_timeout=2"
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB": dsn}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, dsn, c.db, "taken from the environment as a database")

	for name, args := range map[string][]string{
		"flag": {"serve", "--addr", "127.0.0.1:0", "--relay-port", "0", "--db", dsn},
		"env":  {"serve", "--addr", "127.0.0.1:0", "--relay-port", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := newNotifyBuffer()
			err := Run(context.Background(), args, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB": dsn}), nil, out, out)
			require.Error(t, err, "the database does not answer")
			assert.NotContains(t, out.String(), "hunter2", "the password is never printed")
			assert.Contains(t, out.String(), "password=xxxxx", "the connection string is named without it")
			_, err = os.Stat(dsn)
			assert.ErrorIs(t, err, fs.ErrNotExist, "no SQLite file by that name")
		})
	}
}

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"90d": 90 * 24 * time.Hour, "1d": 24 * time.Hour, "720h": 720 * time.Hour, "0": 0, "0d": 0} {
		got, err := parseRetention(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"-1d", "-5h", "ninety", "d", "1.5d", ""} {
		_, err := parseRetention(in)
		assert.Error(t, err, in)
	}
}
