package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePruner records the cutoffs it is asked for.
type fakePruner struct {
	mu      sync.Mutex
	cutoffs []time.Time
	err     error
}

func (p *fakePruner) Prune(_ context.Context, before time.Time) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutoffs = append(p.cutoffs, before)
	return 3, p.err
}

// RunRetention prunes at once, then every interval, cutting at now minus
// Keep; a failure is reported and tried again.
func TestRunRetentionPrunesOnItsInterval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	p := &fakePruner{err: errors.New("disk busy")}
	type outcome struct {
		n   int64
		err error
	}
	pruned := make(chan outcome, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunRetention(ctx, p, Retention{
			Keep: 90 * 24 * time.Hour, Every: time.Millisecond, Now: func() time.Time { return now },
			Pruned: func(n int64, err error) { pruned <- outcome{n, err} },
		})
	}()
	for range 2 {
		select {
		case o := <-pruned:
			assert.Equal(t, int64(3), o.n)
			assert.EqualError(t, o.err, "disk busy", "a failed prune is reported")
		case <-time.After(10 * time.Second):
			t.Fatal("no prune reported")
		}
	}
	cancel()
	require.NoError(t, <-done)
	p.mu.Lock()
	defer p.mu.Unlock()
	require.GreaterOrEqual(t, len(p.cutoffs), 2, "tried again after the failure")
	assert.Equal(t, now.Add(-90*24*time.Hour), p.cutoffs[0])
}

// Keep 0 keeps everything: nothing is pruned.
func TestRunRetentionZeroKeepsEverything(t *testing.T) {
	t.Parallel()
	p := &fakePruner{}
	require.NoError(t, RunRetention(context.Background(), p, Retention{}))
	assert.Empty(t, p.cutoffs)
}

func TestNewSource(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "aep://build-01/ui/aepforms/01ABC", NewSource("build-01", "01ABC"))
	assert.Equal(t, "aep://we%20ird/ui/aepforms/01ABC", NewSource("we ird", "01ABC"), "the host is escaped as the old source escaped it")
}
