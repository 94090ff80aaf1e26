package store

import (
	"context"
	"errors"
	"sync"
)

// FaultKind is what kind of storage trouble a Fault is, in the terms the
// operator can act on.
type FaultKind int

// The kinds of Fault.
const (
	// FaultOther is a database error of no kind below.
	FaultOther FaultKind = iota
	// FaultFull: the disk (or the database's quota) is full.
	FaultFull
	// FaultUnavailable: the database does not answer (down, unreachable,
	// shutting down, timed out).
	FaultUnavailable
	// FaultReadOnly: the database or its file may not be written.
	FaultReadOnly
)

// Fault is a database error with the operator's words beside it: Error
// is the detail, for the log (it may name the file, the database, its
// user and host); Explain is what a page may show.
type Fault struct {
	Kind FaultKind
	// Op is what was being done ("settle", "record").
	Op  string
	Err error
}

func (f *Fault) Error() string { return "journal: " + f.Op + ": " + f.Err.Error() }
func (f *Fault) Unwrap() error { return f.Err }

// Explain is the fault in the operator's words, without any detail of
// the database: what is wrong and what it means for their answers.
func (f *Fault) Explain() string {
	switch f.Kind {
	case FaultFull:
		return "The disk that holds the answer journal is full: new answers cannot be kept until space is freed."
	case FaultUnavailable:
		return "The answer journal's database does not answer: new answers cannot be kept until it is back."
	case FaultReadOnly:
		return "The answer journal cannot be written (it is read-only): new answers cannot be kept."
	default:
		return "The answer journal could not be written; the details are in the server's log."
	}
}

// Storage reports whether the fault is the storage's state (full,
// unavailable, read-only) rather than one statement's: such a fault
// makes the journal unready until a write succeeds again.
func (f *Fault) Storage() bool { return f.Kind != FaultOther }

// MaxBacklog is the most writes Health keeps while the storage refuses
// them (oldest dropped first).
const MaxBacklog = 10000

// Health is a journal's ability to write, as its writes find it: the
// last storage fault a write met, until a write succeeds again, and the
// state changes (settles, what the agent recorded) that fault refused,
// kept in order to be written when the storage takes writes again, so an
// answer the agent executed while the disk was full does not read
// "sending" once it is not. Its methods are safe for concurrent use; the
// zero value is ready, classifying every error as FaultOther.
type Health struct {
	// Classify is the backend's reading of its driver's errors; nil
	// classifies every error as FaultOther.
	Classify func(error) FaultKind

	mu      sync.Mutex // held while the backlog is written, so its order holds
	fault   *Fault
	backlog []func() error
	dropped int
}

// Wrap is err, met doing op, as a *Fault (nil stays nil; an error that
// already holds a Fault is returned as it is).
func (h *Health) Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var f *Fault
	if errors.As(err, &f) || errors.Is(err, ErrDuplicate) || errors.Is(err, ErrLive) {
		return err // a refusal by the database's rules: it answered
	}
	kind := FaultOther
	if h.Classify != nil {
		kind = h.Classify(err)
	}
	return &Fault{Kind: kind, Op: op, Err: err}
}

// Wrote notes the outcome of a write done as op: a storage fault makes
// the journal unready, a success makes it ready again. It returns err
// wrapped as Wrap does.
func (h *Health) Wrote(op string, err error) error {
	err = h.Wrap(op, err)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.note(err)
	return err
}

// note keeps err's storage fault, or clears the fault on success. The
// caller holds mu.
func (h *Health) note(err error) {
	var f *Fault
	switch {
	case err == nil:
		h.fault = nil
	case errors.As(err, &f) && f.Storage():
		h.fault = f
	}
}

// Change writes a state change (write, done as op) that must not be lost
// to a passing storage fault: changes refused earlier are written first,
// in order; if the storage refuses this one too it is kept behind them
// to be written by the next Change or Check, and its fault returned.
func (h *Health) Change(op string, write func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.flush(); err != nil {
		h.keep(write)
		return err
	}
	err := h.Wrap(op, write())
	h.note(err)
	var f *Fault
	if errors.As(err, &f) && f.Storage() {
		h.keep(write)
	}
	return err
}

// keep puts write at the back of the backlog (at most MaxBacklog, the
// oldest dropped). The caller holds mu.
func (h *Health) keep(write func() error) {
	h.backlog = append(h.backlog, write)
	if over := len(h.backlog) - MaxBacklog; over > 0 {
		h.backlog = append(h.backlog[:0:0], h.backlog[over:]...)
		h.dropped += over
	}
}

// flush writes the backlog in order, stopping at the first storage
// fault, which it returns; a change refused for any other reason (its
// own) is dropped. The caller holds mu.
func (h *Health) flush() error {
	for len(h.backlog) > 0 {
		err := h.Wrap("backlog", h.backlog[0]())
		h.note(err)
		var f *Fault
		if errors.As(err, &f) && f.Storage() {
			return err
		}
		h.backlog[0] = nil
		h.backlog = h.backlog[1:]
	}
	h.backlog = nil
	return nil
}

// Check is nil when the journal takes writes: when the last write met a
// storage fault, probe (a small write) is tried and, if it succeeds, the
// backlog is written; the fault is returned while either fails.
func (h *Health) Check(ctx context.Context, probe func(context.Context) error) error {
	h.mu.Lock()
	fault, waiting := h.fault, len(h.backlog)
	h.mu.Unlock()
	if fault == nil && waiting == 0 {
		return nil
	}
	if fault != nil {
		// Not under mu: a probe of a database that does not answer waits
		// for ctx, and the writes need not wait for it.
		if err := h.Wrap("probe", probe(ctx)); err != nil {
			var f *Fault
			if errors.As(err, &f) && f.Storage() {
				h.mu.Lock()
				h.note(err)
				h.mu.Unlock()
				return err
			}
			return fault
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fault = nil
	return h.flush()
}

// Backlog is how many state changes wait for the storage to take writes
// again, and how many were dropped because more than MaxBacklog did.
func (h *Health) Backlog() (waiting, dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.backlog), h.dropped
}

// Explain is err in the operator's words: a Fault's Explain, else
// FaultOther's.
func Explain(err error) string {
	var f *Fault
	if errors.As(err, &f) {
		return f.Explain()
	}
	return (&Fault{}).Explain()
}
