package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The journal off the inbox lock.
//
// No journal or database call runs under the inbox lock: a disk sync, or
// a round trip to PostgreSQL, must hold up neither the feed's events nor
// the pages and posts of other cards. The writes the lock's holder decides
// on (Settle, KeepRecorded) are queued, in the order they were decided,
// and one writer goroutine makes them in that order, so the journal keeps
// a card's states in the order they happened. Record, which must be kept
// before anything is sent, runs outside the lock in BeginSubmission and
// precedes every queued write of its command (nothing settles a command
// before it is on its card). A journal in memory (MemoryJournal: no I/O,
// it never blocks) is written in line, under the lock, as before. Reads the lock's holder needs (Lookup, a
// lease's Claim) are made before the lock is taken (apply.go's
// lookupOwn, Resume).

// ErrJournalBehind is the notice raised when the journal falls
// Options.JournalQueue writes behind: the state changes past that are
// shown on their cards but not kept (they would not outlast a restart).
var ErrJournalBehind = errors.New("inbox: the answer journal is not keeping up")

// DefaultJournalQueue is Options.JournalQueue's default.
const DefaultJournalQueue = 1 << 16

// journalWrite is one queued write.
type journalWrite func(Journal) error

// journalWriter makes the queued writes, in order, on its own goroutine,
// which runs while there is something to write and ends when the queue is
// empty (Flush waits for that).
type journalWriter struct {
	j      Journal
	inline bool // j is in memory: written at once by the caller
	max    int
	failed func(error) // called without the inbox lock held
	wrote  func()      // called after each write made, without the lock

	mu      sync.Mutex
	queue   []journalWrite
	running bool
	idle    chan struct{} // closed when the running writer has emptied the queue
}

// push queues w, or makes it at once on a journal in memory; an error is
// a full queue or the memory journal's refusal (the caller notes it).
func (jw *journalWriter) push(w journalWrite) error {
	if jw.inline {
		return w(jw.j)
	}
	jw.mu.Lock()
	defer jw.mu.Unlock()
	if len(jw.queue) >= jw.max {
		return fmt.Errorf("%w: %d writes queued", ErrJournalBehind, jw.max)
	}
	jw.queue = append(jw.queue, w)
	if !jw.running {
		jw.running = true
		jw.idle = make(chan struct{})
		go jw.run()
	}
	return nil
}

// run makes the queued writes in order until the queue is empty.
func (jw *journalWriter) run() {
	for {
		jw.mu.Lock()
		if len(jw.queue) == 0 {
			jw.queue = nil // give back a backing array grown by a burst
			jw.running = false
			close(jw.idle)
			jw.mu.Unlock()
			return
		}
		w := jw.queue[0]
		jw.queue[0] = nil
		jw.queue = jw.queue[1:]
		jw.mu.Unlock()
		if err := w(jw.j); err != nil {
			jw.failed(err)
		} else {
			jw.wrote()
		}
	}
}

// flush waits until every write queued before it is made, or ctx ends.
func (jw *journalWriter) flush(ctx context.Context) error {
	jw.mu.Lock()
	if !jw.running {
		jw.mu.Unlock()
		return nil
	}
	idle := jw.idle
	jw.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("inbox: journal writes still queued: %w", ctx.Err())
	}
}

// Flush waits until every journal write the inbox has queued so far is
// made (or ctx ends): call it before closing the journal, once nothing
// feeds the inbox any more, so the last states are kept.
func (in *Inbox) Flush(ctx context.Context) error { return in.journalQ.flush(ctx) }

// queueJournal queues w; a full queue is noted (Status). The caller holds
// the lock.
func (in *Inbox) queueJournal(w journalWrite) {
	if err := in.journalQ.push(w); err != nil {
		in.noteJournalError(err)
	}
}

// queueSettle queues the journal's record of command commandID moving to
// state. The caller holds the lock.
func (in *Inbox) queueSettle(commandID string, state SubmissionState, reason, detail string, at time.Time) {
	in.queueJournal(func(j Journal) error { return j.Settle(commandID, state, reason, detail, at) })
}

// journalFailed notes a queued write the journal refused (Status); it is
// the writer's failed callback and takes the lock.
func (in *Inbox) journalFailed(err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.noteJournalError(err)
}
