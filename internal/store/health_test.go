package store

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errFull is a fake driver's disk-full error; errBad one statement's own.
var (
	errFull = errors.New("database or disk is full (13) /var/lib/aepforms/aepforms.db")
	errBad  = errors.New("CHECK constraint failed")
)

func fakeClassify(err error) FaultKind {
	if errors.Is(err, errFull) {
		return FaultFull
	}
	return FaultOther
}

// A storage fault makes the journal unready until a probe succeeds; the
// state changes it refused are kept and written in their order before
// the journal reads ready; a change refused for its own reason is not
// kept; the operator's words never carry the driver's.
func TestHealthKeepsRefusedChangesInOrderUntilTheStorageTakesWrites(t *testing.T) {
	t.Parallel()
	h := &Health{Classify: fakeClassify}
	ctx := context.Background()
	full := true
	var written []int
	change := func(i int) func() error {
		return func() error {
			if full {
				return errFull
			}
			written = append(written, i)
			return nil
		}
	}
	require.NoError(t, h.Check(ctx, nil), "ready before any write")
	for i := range 3 {
		err := h.Change("settle", change(i))
		var f *Fault
		require.ErrorAs(t, err, &f)
		assert.Equal(t, FaultFull, f.Kind)
		assert.NotContains(t, f.Explain(), "aepforms.db")
		assert.Contains(t, f.Error(), "aepforms.db", "the detail is for the log")
	}
	err := h.Change("settle", func() error { return errBad })
	require.ErrorIs(t, err, errFull, "behind the waiting ones, it waits too")
	waiting, _ := h.Backlog()
	assert.Equal(t, 4, waiting)

	probeErr := errFull
	probe := func(context.Context) error { return probeErr }
	require.Error(t, h.Check(ctx, probe), "unready while the probe fails")
	assert.Empty(t, written)

	full, probeErr = false, nil
	require.NoError(t, h.Check(ctx, probe), "ready once the probe and the waiting changes are written")
	assert.Equal(t, []int{0, 1, 2}, written, "in their order; the bad one dropped")
	waiting, dropped := h.Backlog()
	assert.Zero(t, waiting)
	assert.Zero(t, dropped)

	err = h.Change("settle", func() error { return errBad })
	require.ErrorIs(t, err, errBad)
	waiting, _ = h.Backlog()
	assert.Zero(t, waiting, "a change refused for its own reason is not kept")
	require.NoError(t, h.Check(ctx, probe), "and leaves the journal ready")
	assert.Equal(t, "The answer journal could not be written; the details are in the server's log.", Explain(err))
}

// At most MaxBacklog changes wait; the oldest go first and are counted.
func TestHealthBacklogIsBounded(t *testing.T) {
	t.Parallel()
	h := &Health{Classify: fakeClassify}
	for range MaxBacklog + 5 {
		_ = h.Change("settle", func() error { return errFull })
	}
	waiting, dropped := h.Backlog()
	assert.Equal(t, MaxBacklog, waiting)
	assert.Equal(t, 5, dropped)
}
