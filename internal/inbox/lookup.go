package inbox

import (
	"slices"

	"github.com/aepforms/aepforms/internal/aep"
)

// Journal reads made before the lock is taken (journalwriter.go).
//
// A command from this UI's own source that the inbox does not know (sent
// before a restart), and an ack of a command it does not know, are
// looked up in the journal; Apply does that before it takes the lock, and
// the answer waits in lookups for the handler that needs it (onCommand,
// adoptCommand), which may run in that Apply or later, when an event held
// for its request (orphan.go) is applied.

// maxLookups bounds the journal answers kept for handlers.
const maxLookups = 256

// lookup is the journal's answer about one command id.
type lookup struct {
	s   Submission
	ok  bool
	err error
}

// lookupOwn asks the journal, before the lock is taken, about the command
// e names when the handler of e may need it: e is a command from one of
// Options.OwnSources, or an ack, whose command id the inbox does not know.
func (in *Inbox) lookupOwn(e *aep.Event) {
	var id string
	switch e.Type() {
	case "control.attention.respond":
		if slices.Contains(in.opts.OwnSources, e.Source()) {
			id = e.ID()
		}
	case "control.accepted", "control.rejected":
		id = e.Cause()
	}
	if id == "" {
		return
	}
	in.mu.Lock()
	_, known := in.ours[id]
	_, linked := in.links[subjKey{e.Session(), id}]
	_, asked := in.lookups.get(id)
	in.mu.Unlock()
	if known || linked || asked {
		return
	}
	s, ok, err := in.opts.Journal.Lookup(id)
	in.mu.Lock()
	in.lookups.put(id, lookup{s: s, ok: ok, err: err})
	in.mu.Unlock()
}

// journaled returns the journal's submission of command id, as looked up
// before the lock was taken (lookupOwn). A journal that could not answer
// is noted (Status), and a command not looked up (the inbox changed in
// between, or the answer was dropped) is taken as not held: its card is
// locked while it is in flight, never left open. The caller holds the
// lock.
func (in *Inbox) journaled(id string) (Submission, bool) {
	l, found := in.lookups.get(id)
	if !found {
		return Submission{}, false
	}
	if l.err != nil {
		in.opts.Logger.Error("inbox: journal lookup", "command", id, "err", l.err)
		in.addNotice(Notice{Message: "The answer journal could not be read. " + journalWords(l.err), At: in.opts.Now()})
		in.lookups.delete(id) // asked again when the command comes again
		return Submission{}, false
	}
	return l.s, l.ok
}
