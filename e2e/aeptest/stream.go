package aeptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aepforms/aepforms/internal/aep"
)

// Cross-event rule violations StreamChecker reports (wrapped in *StreamError).
var (
	ErrIDCollision      = errors.New("aeptest: id reused for a different event")
	ErrSeqRegression    = errors.New("aeptest: seq regression")
	ErrEpochRegression  = errors.New("aeptest: epoch regression")
	ErrSecondTerminal   = errors.New("aeptest: second run terminal")
	ErrSecondSessionEnd = errors.New("aeptest: second session.ended")
	ErrSecondAck        = errors.New("aeptest: second ack for one command")
	ErrConflictingAck   = errors.New("aeptest: conflicting ack decisions for one command")
	ErrPendingAtEnd     = errors.New("aeptest: attention request pending at session.ended")
	ErrInvalidAnswer    = errors.New("aeptest: answer breaks its form's values rule")
)

// StreamError is a cross-event rule violation: Err is one of the sentinels
// above, Attr the attribute (or payload path) at fault, Detail the specifics.
type StreamError struct {
	Err    error
	Attr   string
	Detail string
}

func (e *StreamError) Error() string { return e.Err.Error() + ": " + e.Attr + ": " + e.Detail }

// Unwrap returns the sentinel, for errors.Is.
func (e *StreamError) Unwrap() error { return e.Err }

// StreamChecker applies the rules that span events of one stream, in the
// order the events were emitted (a session log, a conformance run, an
// emitter's own output): (source, id) unique per content, with redelivery of
// the same event ignored; positions strictly increasing within an epoch and
// epochs never going back, per (source, session); at most one run terminal
// per (session, run) and one session.ended per session; one ack decision per
// command; no attention request still open (no resolved or timeout) at
// session.ended; and attention.answered values that keep the form's
// MUST-reject rule (no non-choice string on a select without other).
//
// A consumer reading through relays must not use it to refuse events:
// backfill below the high-water mark is legal there (AEP-0001 §7 rule 2).
// It remembers every event it accepted, so memory grows with the stream.
// Safe for concurrent use.
type StreamChecker struct {
	mu       sync.Mutex
	seen     map[aep.Key][]byte
	high     map[aep.SessionKey]aep.Position
	runEnds  map[runKey]string
	ended    map[aep.SessionKey]bool
	requests map[requestKey][]aep.FieldSpec
	open     map[aep.SessionKey]map[string]bool
	acks     map[requestKey]string // (session, command id) -> ack type
}

type runKey struct {
	aep.SessionKey
	Run string
}

type requestKey struct {
	aep.SessionKey
	ID string
}

// NewStreamChecker returns an empty checker.
func NewStreamChecker() *StreamChecker {
	return &StreamChecker{
		seen:     make(map[aep.Key][]byte),
		high:     make(map[aep.SessionKey]aep.Position),
		runEnds:  make(map[runKey]string),
		ended:    make(map[aep.SessionKey]bool),
		requests: make(map[requestKey][]aep.FieldSpec),
		open:     make(map[aep.SessionKey]map[string]bool),
		acks:     make(map[requestKey]string),
	}
}

// Check applies the cross-event rules to the next event of the stream. It
// returns nil or a *StreamError; an event that fails leaves the checker's
// state as it was. Envelope and payload rules are ValidateEvent's.
func (c *StreamChecker) Check(e *aep.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.seen[e.Key()]; ok {
		if sameEvent(prev, e.Raw()) {
			return nil // redelivery: dedupe, nothing changes
		}
		return &StreamError{ErrIDCollision, "id", fmt.Sprintf("%q from %q already named a different event", e.ID(), e.Source())}
	}
	sk := e.SessionKey()
	pos, sequenced := e.Position()
	if sequenced {
		if hw, ok := c.high[sk]; ok {
			switch {
			case pos.Epoch < hw.Epoch:
				return &StreamError{ErrEpochRegression, "epoch", fmt.Sprintf("epoch %d after epoch %d in session %q", pos.Epoch, hw.Epoch, e.Session())}
			case pos.Epoch == hw.Epoch && pos.Seq <= hw.Seq:
				return &StreamError{ErrSeqRegression, "seq", fmt.Sprintf("seq %d at or below %d in epoch %d of session %q", pos.Seq, hw.Seq, pos.Epoch, e.Session())}
			}
		}
	}
	var fields []aep.FieldSpec
	switch e.Type() {
	case "run.finished", "run.failed", "run.cancelled":
		if prev, ok := c.runEnds[runKey{sk, e.Run()}]; ok && e.Run() != "" {
			return &StreamError{ErrSecondTerminal, "type", fmt.Sprintf("run %q already ended with %s", e.Run(), prev)}
		}
	case "session.ended":
		if c.ended[sk] {
			return &StreamError{ErrSecondSessionEnd, "type", fmt.Sprintf("session %q already ended", e.Session())}
		}
		if open := c.open[sk]; len(open) > 0 {
			ids := make([]string, 0, len(open))
			for id := range open {
				ids = append(ids, fmt.Sprintf("%q", id))
			}
			slices.Sort(ids)
			return &StreamError{ErrPendingAtEnd, "type", fmt.Sprintf("session %q ends with request %s neither resolved nor timed out", e.Session(), strings.Join(ids, ", "))}
		}
	case "control.accepted", "control.rejected":
		if prev, ok := c.acks[requestKey{sk, e.Cause()}]; ok && e.Cause() != "" {
			if prev == e.Type() {
				return &StreamError{ErrSecondAck, "cause", fmt.Sprintf("command %q was already acked (%s)", e.Cause(), prev)}
			}
			return &StreamError{ErrConflictingAck, "cause", fmt.Sprintf("command %q was already decided %s, now %s", e.Cause(), prev, e.Type())}
		}
	case "attention.requested":
		var r aep.Request
		if e.DecodeData(&r) == nil {
			fields = r.Fields
		}
	case "attention.answered":
		if err := c.checkAnswer(e, sk); err != nil {
			return err
		}
	}

	// Every rule holds: record the event.
	c.seen[e.Key()] = e.Raw()
	if sequenced {
		c.high[sk] = pos
	}
	switch e.Type() {
	case "run.finished", "run.failed", "run.cancelled":
		if e.Run() != "" {
			c.runEnds[runKey{sk, e.Run()}] = e.Type()
		}
	case "session.ended":
		c.ended[sk] = true
	case "control.accepted", "control.rejected":
		if e.Cause() != "" {
			c.acks[requestKey{sk, e.Cause()}] = e.Type()
		}
	case "attention.requested":
		c.requests[requestKey{sk, e.ID()}] = fields
		if c.open[sk] == nil {
			c.open[sk] = make(map[string]bool)
		}
		c.open[sk][e.ID()] = true
	case "attention.resolved", "attention.timeout":
		delete(c.open[sk], e.Subject())
	}
	return nil
}

// checkAnswer applies the values rule to an attention.answered whose
// request (by subject) is a form this checker has seen. Only the non-choice
// rule binds here: a missing required value may be capture gating at work.
func (c *StreamChecker) checkAnswer(e *aep.Event, sk aep.SessionKey) error {
	fields := c.requests[requestKey{sk, e.Subject()}]
	if len(fields) == 0 {
		return nil
	}
	var a aep.Answered
	if e.DecodeData(&a) != nil {
		return nil // the payload schema reports a malformed answer
	}
	for _, p := range aep.ValidateValues(fields, a.Answer.Values) {
		if p.Code == aep.ProblemNotAChoice {
			return &StreamError{ErrInvalidAnswer, "data.answer.values." + p.Field,
				fmt.Sprintf("field %q of request %q is a select without other, and the answer is not one of its choice ids", p.Field, e.Subject())}
		}
	}
	return nil
}

// sameEvent reports whether two encodings carry the same event: the same
// bytes, or the same JSON value (a re-encoding by some hop).
func sameEvent(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if decodeNumbers(a, &x) != nil || decodeNumbers(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
