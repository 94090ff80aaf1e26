package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFeedWait(t *testing.T) {
	t.Parallel()
	f := newFeed[int]()
	f.add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	i, v, err := f.wait(ctx, 0, func(n int) bool { return n == 1 })
	require.NoError(t, err)
	assert.Equal(t, 0, i)
	assert.Equal(t, 1, v)

	got := make(chan int, 1)
	go func() {
		_, v, _ := f.wait(ctx, 1, func(n int) bool { return n > 2 })
		got <- v
	}()
	f.add(2)
	f.add(3)
	select {
	case v := <-got:
		assert.Equal(t, 3, v, "the first later item matching")
	case <-ctx.Done():
		t.Fatal("wait did not wake on add")
	}
	require.NoError(t, f.waitN(ctx, func(n int) bool { return n > 0 }, 3))
}

func TestFeedEndsAndDeadline(t *testing.T) {
	t.Parallel()
	f := newFeed[int]()
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, _, err := f.wait(short, 0, func(int) bool { return true })
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	boom := errors.New("boom")
	f.end(boom)
	assert.False(t, f.add(1), "add after end")
	_, _, err = f.wait(context.Background(), 0, func(int) bool { return true })
	assert.ErrorIs(t, err, errEnded)
	assert.ErrorContains(t, err, "boom")
	items, err := f.waitEnd(context.Background())
	assert.Empty(t, items)
	assert.ErrorIs(t, err, boom)
}
