package pgtest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// A cluster serves SQL on its loopback port, runs as an unprivileged
// user (the postgres user when the tests run as root), gives each caller
// its own database, and is gone, process and files, after Stop.
func TestClusterStartsServesAndIsRemoved(t *testing.T) {
	Need(t) // skips (or fails under CI) without PostgreSQL, like its users
	c, err := Start()
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			c.Stop()
		}
	})

	st, err := os.Stat(filepath.Join(c.dir, "data"))
	require.NoError(t, err)
	owner := st.Sys().(*syscall.Stat_t).Uid
	if os.Geteuid() == 0 {
		assert.NotZero(t, owner, "the cluster is not root's")
	}

	a, b := c.NewDatabase(t), c.NewDatabase(t)
	assert.NotEqual(t, a, b)
	conn, err := pgx.Connect(context.Background(), a)
	require.NoError(t, err)
	var one int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT 1").Scan(&one))
	assert.Equal(t, 1, one)
	require.NoError(t, conn.Close(context.Background()))

	dir := c.dir
	c.Stop()
	stopped = true
	<-c.done // the server process has exited
	_, err = os.Stat(dir)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "the cluster's directory is removed: %v", err)
}
