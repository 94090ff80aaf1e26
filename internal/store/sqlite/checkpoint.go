package sqlite

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The write-ahead log's checkpoints, off the writes' way.
//
// SQLite checkpoints its log by itself in the commit that grows it past
// a limit (wal_autocheckpoint): whichever write that is, a post's Record
// included, then copies the log into the database file and syncs it, a
// few milliseconds that the operator's 303 would wait for (or, for a
// Settle, the next Record, queued behind it on writeMu). The journal's
// connections turn that off (dsn), and a goroutine of the journal makes
// a PASSIVE checkpoint every Options.CheckpointEvery writes instead: it
// takes no write lock, so the writes go on beside it; it copies what no
// reader still needs and the log starts over once all of it was copied.

// checkpointer is the journal's checkpoint goroutine and its count.
type checkpointer struct {
	every  int64
	writes atomic.Int64
	kick   chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	// made counts the checkpoints made, and first is closed by the
	// first one (tests).
	made      atomic.Int64
	first     chan struct{}
	firstOnce sync.Once
}

// startCheckpoints starts the checkpointer: every writes (0: the
// default; negative: none).
func (j *Journal) startCheckpoints(every int) {
	if every == 0 {
		every = DefaultCheckpointEvery
	}
	if every < 0 {
		return
	}
	j.ckpt.every = int64(every)
	j.ckpt.kick = make(chan struct{}, 1)
	j.ckpt.stop = make(chan struct{})
	j.ckpt.first = make(chan struct{})
	j.ckpt.wg.Go(func() {
		for {
			select {
			case <-j.ckpt.stop:
				return
			case <-j.ckpt.kick:
				j.checkpoint()
			}
		}
	})
}

// stopCheckpoints ends the checkpointer and waits for it (Close).
func (j *Journal) stopCheckpoints() {
	if j.ckpt.stop == nil {
		return
	}
	close(j.ckpt.stop)
	j.ckpt.wg.Wait()
	j.ckpt.stop = nil
}

// wrote counts one write made (its write lock let go) and wakes the
// checkpointer every so many. It never blocks.
func (j *Journal) wrote() {
	if j.ckpt.kick == nil || j.ckpt.writes.Add(1)%j.ckpt.every != 0 {
		return
	}
	select {
	case j.ckpt.kick <- struct{}{}:
	default: // one is due already
	}
}

// checkpointWait bounds one checkpoint (it waits for no lock, only for
// the disk).
const checkpointWait = time.Minute

// checkpoint makes one PASSIVE checkpoint of the log. A failure is left
// for the next one (the log only grows meanwhile; a write's own error
// says what is wrong with the disk).
func (j *Journal) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), checkpointWait)
	defer cancel()
	if _, err := j.lazy.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err == nil {
		j.ckpt.made.Add(1)
		j.ckpt.firstOnce.Do(func() { close(j.ckpt.first) })
	}
}
