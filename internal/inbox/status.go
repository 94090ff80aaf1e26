package inbox

import (
	"errors"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Notice is a warning the operator should see beside the cards, such as a
// possible gap in a session's events.
type Notice struct {
	Session  string       // the session concerned (agent-controlled: encode before display)
	Earliest aep.Position // for replay-exhausted: the earliest position the relay still held
	Message  string       // in words, e.g. "events may be missing for session s_1"
	At       time.Time    // when it was raised (inbox clock)
	// Storage is true for a state change the journal's storage refused
	// (the disk full, the database down), which the journal keeps to
	// write once it takes writes again: the notice goes when a write
	// succeeds (JournalWrites).
	Storage bool
}

// DefaultConnectGrace is Options.ConnectGrace's default: the AEP
// reference relay's ping bound (it sends /stream's headers with its first
// ping, up to 25 s after the request), with a margin.
const DefaultConnectGrace = 30 * time.Second

// Status is the inbox's view of its feed.
type Status struct {
	FeedConnected bool
	// FeedConnecting is true while the feed has never connected and
	// Options.ConnectGrace has not passed since the inbox was made: the
	// relay may simply not have sent its headers yet, so the page says
	// "connecting", not "relay lost".
	FeedConnecting bool
	FeedError      string // the last feed error, "" when none
	Notices        []Notice
	Pending        int // open cards (pending or routed)
	// Dropped counts the open requests let go to keep the inbox within
	// its bounds (Options.MaxPending, MaxBytes), by agent, most first;
	// DroppedOthers those of agents past the first 1024 to lose one.
	Dropped       []Dropped
	DroppedOthers uint64
	// Invalid counts the events that broke the AEP envelope rules and
	// changed no card (an invalid request is shown malformed).
	Invalid uint64
}

// Status returns the feed state, the notices (oldest first) and the number
// of open cards.
func (in *Inbox) Status() Status {
	in.mu.Lock()
	defer in.mu.Unlock()
	return Status{
		FeedConnected:  in.feedConnected,
		FeedConnecting: in.connectingLocked(in.opts.Now()),
		FeedError:      in.feedError,
		Notices:        append([]Notice(nil), in.notices...),
		Pending:        len(in.byID) - len(in.settled),
		Dropped:        in.droppedLocked(),
		DroppedOthers:  in.droppedOthers,
		Invalid:        in.invalid,
	}
}

// FeedState records whether the feed is connected and its last error; a
// change publishes a ChangeStatus.
func (in *Inbox) FeedState(connected bool, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.feedEver = in.feedEver || connected
	if in.feedConnected == connected && in.feedError == msg {
		return
	}
	in.feedConnected, in.feedError = connected, msg
	in.publish(Change{Kind: ChangeStatus})
}

// ReplayExhausted records that the relay no longer held the events of
// session before earliest: the notice "events may be missing for session
// X" (one per session, the latest kept; at most MaxNotices).
func (in *Inbox) ReplayExhausted(session string, earliest aep.Position) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, n := range in.notices {
		if n.Session != session {
			continue
		}
		if n.Earliest == earliest {
			return
		}
		in.notices = append(in.notices[:i], in.notices[i+1:]...)
		break
	}
	in.addNotice(Notice{
		Session:  session,
		Earliest: earliest,
		Message:  "events may be missing for session " + session,
		At:       in.opts.Now(),
	})
}

// addNotice records a notice (at most MaxNotices, oldest dropped) and
// publishes the status change. The caller holds the lock.
func (in *Inbox) addNotice(n Notice) {
	in.notices = append(in.notices, n)
	if over := len(in.notices) - in.opts.MaxNotices; over > 0 {
		in.notices = append(in.notices[:0:0], in.notices[over:]...)
	}
	in.publish(Change{Kind: ChangeStatus})
}

// noteJournalError records that a state change could not be kept in the
// journal: the card still shows it, but it would not outlast a restart.
// The caller holds the lock.
func (in *Inbox) noteJournalError(err error) {
	in.opts.Logger.Error("inbox: an answer's state not journaled", "err", err)
	n := Notice{Message: "An answer's state could not be recorded. " + journalWords(err), At: in.opts.Now()}
	var f interface{ Storage() bool }
	if errors.As(err, &f) && f.Storage() {
		// One notice says it, however many writes the fault refuses.
		n.Storage = true
		in.dropStorageNotices()
		in.storageFault.Store(true)
	}
	in.addNotice(n)
}

// JournalFault reports whether a notice says the journal's storage
// refused a state change (Notice.Storage): the app then checks whether
// it takes writes again (JournalWrites).
func (in *Inbox) JournalFault() bool { return in.storageFault.Load() }

// JournalWrites records that the journal took a write again (one of the
// inbox's, or the check that writes what its storage refused): the
// notices of the changes its storage refused go, since it has kept
// them since. A fault met after it raises a notice again.
func (in *Inbox) JournalWrites() {
	if !in.storageFault.Load() {
		return // the writer's every success: no lock taken
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.storageFault.Store(false)
	if in.dropStorageNotices() {
		in.publish(Change{Kind: ChangeStatus})
	}
}

// dropStorageNotices removes the Storage notices and reports whether
// there were any. The caller holds the lock.
func (in *Inbox) dropStorageNotices() bool {
	kept := in.notices[:0]
	for _, n := range in.notices {
		if !n.Storage {
			kept = append(kept, n)
		}
	}
	dropped := len(kept) < len(in.notices)
	clear(in.notices[len(kept):])
	in.notices = kept
	return dropped
}

// journalWords is a journal error in the operator's words: the error's
// own Explain when it has one (the disk full, the database down),
// else a general sentence. The detail (file, database, user, host) is
// for the log only.
func journalWords(err error) string {
	if errors.Is(err, ErrJournalBehind) {
		return "The answer journal is not keeping up: the latest states are shown here but would not outlast a restart."
	}
	var e interface{ Explain() string }
	if errors.As(err, &e) {
		return e.Explain()
	}
	return "The details are in the server's log."
}

// connectingLocked reports whether the feed is still connecting for the
// first time, within Options.ConnectGrace. The caller holds the lock.
func (in *Inbox) connectingLocked(now time.Time) bool {
	return !in.feedConnected && !in.feedEver && now.Sub(in.started) < in.opts.ConnectGrace
}

// sweepGrace publishes a status change once, when Options.ConnectGrace
// passes with the feed never connected: the page turns from
// "connecting" to "relay lost". The caller holds the lock.
func (in *Inbox) sweepGrace(now time.Time) {
	if in.graceOver || now.Sub(in.started) < in.opts.ConnectGrace {
		return
	}
	in.graceOver = true
	if !in.feedEver {
		in.publish(Change{Kind: ChangeStatus})
	}
}
