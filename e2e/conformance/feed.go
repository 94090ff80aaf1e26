package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// maxFeed bounds what one connection's log holds; a peer that sends more
// within one check is itself a failure.
const maxFeed = 200000

// errFeedFull ends a log that reached maxFeed.
var errFeedFull = errors.New("conformance: more than 200000 items on one connection")

// feed is the log of what one connection delivered, in arrival order, with
// a way to wait for an item without polling: each add closes the channel
// waiters hold and replaces it.
type feed[T any] struct {
	mu    sync.Mutex
	items []T
	ch    chan struct{}
	ended bool
	err   error
}

func newFeed[T any]() *feed[T] { return &feed[T]{ch: make(chan struct{})} }

func (f *feed[T]) add(v T) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return false
	}
	if len(f.items) >= maxFeed {
		f.endLocked(errFeedFull)
		return false
	}
	f.items = append(f.items, v)
	close(f.ch)
	f.ch = make(chan struct{})
	return true
}

// end marks the feed finished (the connection is gone); err says why, nil
// for an orderly end.
func (f *feed[T]) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endLocked(err)
}

func (f *feed[T]) endLocked(err error) {
	if f.ended {
		return
	}
	f.ended, f.err = true, err
	close(f.ch)
	f.ch = make(chan struct{})
}

// all returns a copy of the items so far.
func (f *feed[T]) all() []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]T(nil), f.items...)
}

// state returns the items so far, whether the feed ended and why, and the
// channel closed at the next change.
func (f *feed[T]) state() ([]T, bool, error, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.items, f.ended, f.err, f.ch
}

// errEnded is returned by wait when the connection ended before a match.
var errEnded = errors.New("connection ended")

// wait returns the first item at index >= from that pred accepts, and its
// index. It fails when ctx ends or the feed ends first.
func (f *feed[T]) wait(ctx context.Context, from int, pred func(T) bool) (int, T, error) {
	var zero T
	for {
		items, ended, err, ch := f.state()
		for i := from; i < len(items); i++ {
			if pred(items[i]) {
				return i, items[i], nil
			}
		}
		from = max(from, len(items))
		if ended {
			if err != nil {
				return -1, zero, fmt.Errorf("%w: %v", errEnded, err)
			}
			return -1, zero, errEnded
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return -1, zero, ctx.Err()
		}
	}
}

// waitEnd waits for the feed to end and returns everything it held.
func (f *feed[T]) waitEnd(ctx context.Context) ([]T, error) {
	for {
		items, ended, err, ch := f.state()
		if ended {
			return append([]T(nil), items...), err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return append([]T(nil), items...), ctx.Err()
		}
	}
}

// waitN waits until n items match pred.
func (f *feed[T]) waitN(ctx context.Context, pred func(T) bool, n int) error {
	count, from := 0, 0
	for count < n {
		i, _, err := f.wait(ctx, from, pred)
		if err != nil {
			return err
		}
		count, from = count+1, i+1
	}
	return nil
}
