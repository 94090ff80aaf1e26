package sqlite

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// Prune removes the entries' states with them, and the removed text is
// gone from the files (secure_delete, then a truncating checkpoint).
// What Prune removes and keeps is storetest's.
func TestPruneRemovesOldEntriesForGood(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	j := openAt(t, path, Options{})
	const secret = "old-secret-answer-7f3a"
	for i := range 10 {
		s := submission(cmdID(i), t0.Add(time.Duration(i)*time.Hour))
		if i < 4 {
			s.Question = secret
		}
		require.NoError(t, j.Record(s))
		require.NoError(t, j.Settle(cmdID(i), inbox.SubmissionAccepted, "", "", s.At.Add(time.Second)))
	}

	n, err := j.Prune(context.Background(), t0.Add(4*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)
	var states int
	require.NoError(t, j.db.QueryRow(`SELECT count(*) FROM submission_states`).Scan(&states))
	assert.Equal(t, 12, states, "the removed entries' states went with them")

	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.False(t, strings.Contains(string(b), secret), "%s still holds pruned text", p)
	}
}
