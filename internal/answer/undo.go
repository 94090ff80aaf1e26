package answer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Undo: a sent answer's command waits Config.UndoWindow before it leaves,
// so the operator can take it back. The answer is journaled at once (as
// sending); only the command waits, here, in this process: a crash
// meanwhile leaves it journaled, and the restart sends it. Another
// replica sharing the journal takes it over as it takes any answer whose
// replica stopped (its lease), and this replica's Undo is the only one.

// ErrNotHeld: Undo came too late, or to the wrong instance: the answer's
// command has left (its window passed), or this instance does not hold
// it (another replica does). Nothing was taken back.
var ErrNotHeld = inbox.ErrNotHeld

// Held is one answer to take back: its card and command, and who asks
// (By, the signed-in operator; "" without sign-in): only the operator who
// sent an answer may take it back.
type Held struct {
	Card    inbox.CardID
	Command string
	By      string
}

// holds are the commands a Service holds for Undo, by command id.
type holds struct {
	mu sync.Mutex
	m  map[string]*heldAnswer
}

// heldAnswer is one held command: its answer and the timer that lets it go.
type heldAnswer struct {
	a    Answer
	ctx  context.Context
	stop func() bool
}

// waits reports whether Send holds a's command for Undo: an undo window
// is set and the answer is the operator's (a rule's Service has none).
func (s *Service) waits() bool {
	_, ok := s.cfg.Inbox.(Holder)
	return s.cfg.UndoWindow > 0 && ok
}

// holdForUndo keeps a's command for the undo window, marks its card held
// (the page offers Undo), and lets it go when the window passes.
func (s *Service) holdForUndo(ctx context.Context, a Answer) {
	sub := a.Submission
	h := &heldAnswer{a: a, ctx: ctx}
	s.holds.mu.Lock()
	if s.holds.m == nil {
		s.holds.m = make(map[string]*heldAnswer)
	}
	s.holds.m[sub.CommandID] = h
	s.inbox().Hold(sub.Card, sub.CommandID, s.cfg.Now().Add(s.cfg.UndoWindow))
	h.stop = s.cfg.AfterFunc(s.cfg.UndoWindow, func() { s.letGo(sub.CommandID) })
	s.holds.mu.Unlock()
}

// letGo sends a held command whose window passed, unless it was taken
// back meanwhile.
func (s *Service) letGo(cmd string) {
	s.holds.mu.Lock()
	h, ok := s.holds.m[cmd]
	delete(s.holds.m, cmd)
	s.holds.mu.Unlock()
	if !ok {
		return
	}
	sub := h.a.Submission
	if s.stopping() {
		// Journaled as sending: the next serve on the journal sends it.
		s.cfg.Logger.Info("answer: held answer left for the next start", "card", string(sub.Card), "command", cmd)
		return
	}
	s.inbox().Unhold(sub.Card, cmd)
	if err := s.cfg.Submitter.Submit(h.ctx, sub); err != nil && !s.stopping() {
		s.unsent(h.a, err)
	}
}

// stopping reports whether the UI is stopping (Config.Stopping).
func (s *Service) stopping() bool { return s.cfg.Stopping != nil && s.cfg.Stopping() }

// Undo takes back each of held, still held by this Service: its command
// is never sent, its answer journaled as withdrawn, and its card takes an
// answer again, the operator's choice kept in its form. It returns one
// error per item (nil: taken back): ErrNotHeld when the command left,
// another instance holds it or another operator sent it, inbox.ErrNotRecorded when the journal could
// not write the withdrawal in time (it is taken back all the same).
func (s *Service) Undo(held []Held) []error {
	errs := make([]error, len(held))
	for i, h := range held {
		errs[i] = s.undoOne(h)
	}
	return errs
}

// HeldOf is each answer of batch (its id: the batch form's token,
// Batch.Token) this Service holds for Undo, that by sent ("" without
// sign-in: anyone's), by card, as Undo takes them back: a batch's Undo
// names the batch, not each of its answers.
func (s *Service) HeldOf(batch, by string) []Held {
	if batch == "" {
		return nil
	}
	var out []Held
	s.holds.mu.Lock()
	for cmd, h := range s.holds.m {
		sub := h.a.Submission
		if rest, ok := strings.CutPrefix(sub.Token, batch+"."); ok && rest == string(sub.Card) && (by == "" || sub.By == by) {
			out = append(out, Held{Card: sub.Card, Command: cmd, By: by})
		}
	}
	s.holds.mu.Unlock()
	slices.SortFunc(out, func(a, b Held) int { return strings.Compare(string(a.Card), string(b.Card)) })
	return out
}

func (s *Service) undoOne(h Held) error {
	s.holds.mu.Lock()
	hd, ok := s.holds.m[h.Command]
	if ok && (hd.a.Submission.Card != h.Card || h.By != "" && hd.a.Submission.By != h.By) {
		ok = false
	}
	if ok {
		delete(s.holds.m, h.Command)
		hd.stop()
	}
	s.holds.mu.Unlock()
	if !ok {
		return ErrNotHeld
	}
	err := s.inbox().Withdraw(h.Card, h.Command)
	if errors.Is(err, inbox.ErrNotHeld) {
		// The card no longer has it as its answer (gone, or settled by
		// the request's own end): nothing is sent, nothing to reopen.
		return nil
	}
	return err
}

// inbox is the Config's inbox as a Holder (waits: it is one).
func (s *Service) inbox() Holder { return s.cfg.Inbox.(Holder) }

// Holder is what the Service marks of a card while it holds its answer
// for Undo (*inbox.Inbox).
type Holder interface {
	Hold(id inbox.CardID, commandID string, until time.Time) bool
	Unhold(id inbox.CardID, commandID string)
	Withdraw(id inbox.CardID, commandID string) error
}

// hitHeld is the crash point of a held command, after its response.
func hitHeld() { crashpoint.Hit(crashpoint.Held) }
