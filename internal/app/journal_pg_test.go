package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// --db (or AEPFORMS_DB) with a postgres:// URL picks the PostgreSQL
// journal; the URL's password, like every secret in the environment, is
// never printed by -h.
func TestDBChoosesPostgresAndHelpHidesItsPassword(t *testing.T) {
	t.Parallel()
	const url = "postgres://ui:hunter2@db.internal/aepforms"
	c, err := parseServe(nil, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB": url}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, url, c.db)
	assert.True(t, isPostgresURL(c.db))
	c, err = parseServe([]string{"--db", "/tmp/x.db"}, envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB": url}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "/tmp/x.db", c.db, "the flag wins over the environment")
	assert.False(t, isPostgresURL(c.db))

	var stderr strings.Builder
	_ = Run(t.Context(), []string{"serve", "-h"}, envMap(map[string]string{"HOME": "/home/x", "AEPFORMS_DB": url}), nil, io.Discard, &stderr)
	assert.Contains(t, stderr.String(), "postgres://", "-h says a database URL is accepted")
	assert.NotContains(t, stderr.String(), "hunter2")
}

// Two serve replicas on one PostgreSQL database share its one command
// source, never log the URL's password, and /readyz reports the database.
func TestServeReplicasShareThePostgresJournal(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	// Trust authentication ignores the password; it stands for a real one.
	db = strings.Replace(db, "postgres@", "postgres:hunter2@", 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type replica struct {
		out  *notifyBuffer
		done chan error
	}
	replicas := make([]replica, 2)
	for i := range replicas {
		r := replica{out: newNotifyBuffer(), done: make(chan error, 1)}
		replicas[i] = r
		go func() {
			r.done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--relay-port", "0"},
				envMap(map[string]string{"HOME": t.TempDir(), "AEPFORMS_DB": db}), nil, r.out, r.out)
		}()
	}
	sourceOf := regexp.MustCompile(`source=(aep://\S+/ui/aepforms/\S+)`)
	var sources []string
	for _, r := range replicas {
		r.out.waitFor(t, "aepforms UI listening on http://")
		log := r.out.String()
		assert.NotContains(t, log, "hunter2", "the log never holds the database password")
		assert.Contains(t, log, "answer journal: PostgreSQL")
		m := sourceOf.FindStringSubmatch(log)
		require.Len(t, m, 2, "the log names the command source: %s", log)
		sources = append(sources, m[1])

		base := regexp.MustCompile(`aepforms UI listening on (http://[^\s"]+)`).FindStringSubmatch(log)[1]
		resp, err := http.Get(base + "readyz")
		require.NoError(t, err)
		var body map[string]bool
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		assert.True(t, body["database"], "/readyz checks the database: %v", body)
	}
	assert.Equal(t, sources[0], sources[1], "replicas send from one source")
	cancel()
	for _, r := range replicas {
		require.NoError(t, <-r.done)
	}
}
