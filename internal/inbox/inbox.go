package inbox

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Options configures an Inbox. Zero values take the documented defaults.
type Options struct {
	// Journal keeps the operator's answers; nil keeps them in memory.
	Journal Journal
	// Command builds a submission's exact command bytes (the respond
	// path's Build). BeginSubmission calls it before the submission is
	// journaled, so the journal keeps the bytes that are sent, and sent
	// again after a restart. nil: no bytes are kept (Submission.Command
	// stays empty and the respond path builds the command itself).
	Command func(Submission) ([]byte, error)
	// Now is the inbox clock (expires_at, ReceivedAt, submission times).
	// Default time.Now.
	Now func() time.Time
	// MaxSettled bounds the settled cards kept; the oldest settled is
	// evicted first. Default 200.
	MaxSettled int
	// RestoreSettled is how many settled cards Restore brings back from
	// the journal after a restart: the latest answers of this UI the
	// agent recorded, shown read-only even when the relay no longer holds
	// their events (older ones are in the history). Default 20; negative
	// brings none back. At most MaxSettled.
	RestoreSettled int
	// MaxPending bounds the open cards kept, against an emitter that asks
	// without end. Past it the oldest open card of the agent holding the
	// most open cards is dropped (fair share: a flooding agent loses its
	// own questions first), never one with an answer in flight; drops are
	// counted per agent (Status.Dropped). Default 5000.
	MaxPending int
	// MaxBytes bounds the raw bytes of the requests kept (open and
	// settled cards, as their attention.requested arrived). Past it the
	// agent holding the most bytes loses its oldest settled card, else
	// its oldest open one, never one with an answer in flight. Default
	// 64 MiB.
	MaxBytes int64
	// MaxControls is the most form controls one card may need (the
	// choices of every select field, plus one per other field and one
	// per option) for this inbox to offer it as a form. A request over it
	// is kept and shown read-only (Card.OverBudget; CanAnswer says
	// ErrTooManyControls): it is answered in the agent's own interface.
	// Default 2000.
	MaxControls int
	// History is how many changes are kept for Since (a dropped browser
	// catches up from them instead of reloading). Default 4096.
	History int
	// MaxNotices bounds Status().Notices (oldest dropped). Default 20.
	MaxNotices int
	// MaxOrphans bounds the lifecycle events held for a request not seen
	// yet (out-of-order delivery); the oldest is dropped first. Default 4096.
	MaxOrphans int
	// MaxOrphanBytes bounds the raw bytes of those held events (one event
	// may be as large as the relay takes); the oldest is dropped first.
	// Default 8 MiB.
	MaxOrphanBytes int64
	// MaxSeen bounds the (source, id) pairs remembered for dedupe and the
	// ended sessions remembered. Default 65536.
	MaxSeen int
	// MaxFormItems is the most fields, options, or choices in one field a
	// request may carry before it is shown as malformed. Default 1000.
	MaxFormItems int
	// QueueMaxAge is the oldest a queued answer (SubmissionQueued: posted
	// while the relay was away) may be and still be sent when the relay is
	// back, measured from its post on the inbox clock; older ones are not
	// sent (SubmissionNotSent, ReasonTooOld), on the next Sweep or when
	// the respond path asks (ReleaseQueued). The app passes
	// --resend-max-age. Zero: no limit.
	QueueMaxAge time.Duration
	// ConnectGrace is how long after New the page says "connecting to the
	// relay" rather than "relay lost" while the feed has never connected
	// (Status.FeedConnecting): the AEP reference relay sends /stream's
	// headers only with its first ping, up to 25 s after the request.
	// Default DefaultConnectGrace (30 s, that ping bound).
	ConnectGrace time.Duration
	// OwnSources are the sources of this UI's own commands: the one it
	// sends with now, and any it sent with before (the host-derived source
	// of releases before the journal). Commands from them seen on the feed
	// (sent before a restart, so unknown to this inbox) are not shown as
	// another sender answering. Empty: none are ours but those
	// BeginSubmission recorded.
	OwnSources []string
	// AckWindow is how long a command on the feed that no submission of
	// this inbox sent (Card.Responders: another sender's, or one from
	// OwnSources the journal does not hold) locks its card's form
	// without an ack: past it, with no control.accepted or
	// control.rejected seen, the agent did not take it and the form
	// opens again. It is asked per session (the target's declared
	// ack_window_ms, as the respond path knows it) under the inbox's
	// lock: it must not call the inbox. Nil: DefaultAckWindow.
	AckWindow func(session string) time.Duration
	// JournalQueue bounds the journal writes queued behind a slow journal
	// (journalwriter.go: they are made off the inbox lock, in order).
	// Past it a state change is shown on its card but not kept, and
	// Status notes ErrJournalBehind. Default DefaultJournalQueue (65536).
	JournalQueue int
	// ClaimIdle is how long a claim holds without its operator's
	// activity (Claim). Default DefaultClaimIdle (10 min).
	ClaimIdle time.Duration
	// Logger receives what the operator does not see on a card (an event
	// that breaks the envelope rules, once per source). Nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Journal == nil {
		o.Journal = NewMemoryJournal()
	}
	if o.AckWindow == nil {
		o.AckWindow = func(string) time.Duration { return DefaultAckWindow }
	}
	o.OwnSources = slices.Clone(o.OwnSources)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxSettled, 200)
	if o.RestoreSettled == 0 {
		o.RestoreSettled = 20
	}
	o.RestoreSettled = min(o.RestoreSettled, o.MaxSettled)
	def(&o.MaxPending, 5000)
	def(&o.History, 4096)
	def(&o.MaxNotices, 20)
	def(&o.MaxOrphans, 4096)
	def(&o.MaxSeen, 65536)
	def(&o.MaxFormItems, 1000)
	def(&o.JournalQueue, DefaultJournalQueue)
	if o.ClaimIdle <= 0 {
		o.ClaimIdle = DefaultClaimIdle
	}
	if o.ConnectGrace <= 0 {
		o.ConnectGrace = DefaultConnectGrace
	}
	def(&o.MaxControls, 2000)
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.MaxOrphanBytes <= 0 {
		o.MaxOrphanBytes = 8 << 20
	}
	return o
}

// DefaultAckWindow is the ack window of AEP-0004 when the target
// declares none (Options.AckWindow).
const DefaultAckWindow = 10 * time.Second

// subjKey locates a request (or an event linked to one) the way lifecycle
// events from any source name it: (session, id).
type subjKey struct{ session, id string }

// endMark is where a session ended: requests asked before it are ended.
type endMark struct {
	pos       aep.Position
	sequenced bool
}

// entry is one card and the facts its state is derived from.
type entry struct {
	card Card

	reqPos       aep.Position
	reqSequenced bool
	arrival      uint64 // creation order, the last tiebreak when sorting
	settledOrder uint64 // order in which it settled; 0 while open
	fresh        bool   // created in the current transaction
	// journaled is true for a settled card brought back from the journal
	// (Restore) whose attention.requested the feed has not brought (yet):
	// its request is what the journal kept.
	journaled bool

	answeredAt, resolvedAt, timeoutAt factPos
	resolved, timedOut                bool

	applied map[aep.Key]bool // lifecycle events applied (idempotence past dedupe eviction)
	ownIDs  map[string]bool  // our command ids and their acks' ids
	// subs are every submission of this inbox on the card by command id,
	// the latest (card.Submission) among them: an ack or record settles
	// the command it names, not whichever is latest (outcome.go).
	subs map[string]*Submission
	// ackOf maps our commands' acks' ids to their command ids, so a
	// record caused by an ack credits that command.
	ackOf  map[string]string
	tokens map[string]bool // form tokens of every submission made
	// reserved is the post being journaled outside the lock
	// (BeginSubmission): the card takes no other answer meanwhile.
	reserved *Submission
	// replacing is the owed answer the reserved post replaces ("Answer
	// differently"), settled failed/replaced while it is journaled, and
	// was its state before, put back if the journal refuses the post.
	replacing *Submission
	was       Submission
	// journaledDone is closed when the reservation ends (confirm), so the
	// same form posted again meanwhile waits for the first post's fate.
	journaledDone chan struct{}
	links         []subjKey // keys in Inbox.links pointing here
	// claimedOnce is true once the card was claimed (the time to first
	// claim is measured once).
	claimedOnce bool

	size         int64      // raw bytes of the attention.requested (Options.MaxBytes)
	load         *agentLoad // the agent's share of the inbox this card counts in
	older, newer *entry     // the agent's cards in arrival order (share.go)
}

// Inbox holds the cards derived from a feed of AEP events, the operator's
// submissions, and the subscribers to its changes. It is safe for
// concurrent use.
type Inbox struct {
	opts     Options
	journalQ *journalWriter // the journal's writes, off the lock, in order
	// lookups (under mu) are the journal's answers, asked before the
	// lock is taken (lookup.go).
	lookups *fifo[string, lookup]
	// leases (under mu) are the resend leases Resume took, by command id
	// (claimLeases).
	leases map[string]bool

	mu        sync.Mutex
	byID      map[CardID]*entry
	bySubject map[subjKey][]*entry
	links     map[subjKey]*entry // (session, event id) -> the card that event belongs to
	ours      map[string]*entry  // our command ids -> card
	reserving map[string]*entry  // command ids being journaled -> card (BeginSubmission)
	seen      *fifo[seenKey, struct{}]
	tools     *fifo[seenKey, string]  // tool.requested: the tool's name by (source, id)
	ended     *fifo[seenKey, endMark] // by sessionDigest
	orphans   *fifo[aep.Key, orphan]
	orphanIdx map[subjKey][]aep.Key
	drainQ    []subjKey
	settled   []*entry // in settling order, oldest first
	arrivals  uint64
	settles   uint64

	txn        []*entry
	txnChanged map[*entry]bool

	seq     uint64
	history []Change // ring
	histPos int
	subs    map[*Subscription]struct{}
	// followers are the Followers (the push streams'), as subs.
	followers map[*Follower]struct{}

	feedConnected bool
	feedError     string
	// started is when the inbox was made (its clock); feedEver is true
	// once the feed has connected; graceOver once Sweep saw
	// Options.ConnectGrace pass (status.go).
	started   time.Time
	feedEver  bool
	graceOver bool
	notices   []Notice
	// storageFault is true while a Storage notice is shown (status.go):
	// read without the lock by each journal write that succeeds.
	storageFault atomic.Bool
	// lastRev is the latest claim or assignment write's order (claim.go).
	lastRev atomic.Int64
	// peered are the cards SeePeers marked with another instance's
	// queued answer (peers.go).
	peered map[CardID]bool

	loads         map[string]*agentLoad // what each agent holds, by agent (share.go)
	bytes         int64                 // raw request bytes of every card kept
	dropped       map[string]uint64     // open requests evicted, by agent (at most maxDroppedAgents)
	droppedOthers uint64                // those of agents past maxDroppedAgents

	reach map[string]Reach // the last reach RefreshReach read, by open session

	invalid       uint64                  // events that broke the envelope rules (validate.go)
	invalidLogged *fifo[string, struct{}] // sources already logged for one
	// After a restart (restore.go): journaled submissions waiting for
	// their card, those put on a card and waiting for Resume (or, after
	// it, for ResumeLate), how many Restore loaded, whether Resume ran
	// and the resend limit it was given.
	restored  map[CardID]*Submission
	resumable []*Submission
	restoring int
	resumed   bool
	maxAge    time.Duration
	// late is signalled (buffer 1) when a restored submission found its
	// card after Resume: ResumeLate decides about it.
	late chan struct{}
}

// New returns an empty Inbox.
func New(opts Options) *Inbox {
	opts = opts.withDefaults()
	in := &Inbox{
		opts:       opts,
		byID:       make(map[CardID]*entry),
		bySubject:  make(map[subjKey][]*entry),
		links:      make(map[subjKey]*entry),
		ours:       make(map[string]*entry),
		orphanIdx:  make(map[subjKey][]aep.Key),
		txnChanged: make(map[*entry]bool),
		subs:       make(map[*Subscription]struct{}),
		followers:  make(map[*Follower]struct{}),
		loads:      make(map[string]*agentLoad),
		dropped:    make(map[string]uint64),
		started:    opts.Now(),
		late:       make(chan struct{}, 1),
	}
	in.seen = newFIFO[seenKey, struct{}](opts.MaxSeen, nil)
	in.tools = newFIFO[seenKey, string](opts.MaxSeen, nil)
	in.ended = newFIFO[seenKey, endMark](opts.MaxSeen, nil)
	in.orphans = newFIFO(opts.MaxOrphans, in.unindexOrphan).weigh(opts.MaxOrphanBytes, orphanSize)
	in.invalidLogged = newFIFO[string, struct{}](maxInvalidSources, nil)
	in.lookups = newFIFO[string, lookup](maxLookups, nil)
	_, inline := opts.Journal.(*MemoryJournal)
	in.journalQ = &journalWriter{j: opts.Journal, inline: inline, max: opts.JournalQueue, failed: in.journalFailed, wrote: in.JournalWrites}
	return in
}

// touch adds en to the current transaction; changed says a fact changed.
func (in *Inbox) touch(en *entry, changed bool) {
	if prev, ok := in.txnChanged[en]; ok {
		in.txnChanged[en] = prev || changed
		return
	}
	in.txnChanged[en] = changed
	in.txn = append(in.txn, en)
}

// commit derives the state of every touched card, publishes one change per
// card that changed, and evicts what the inbox's bounds no longer hold
// (share.go).
func (in *Inbox) commit() {
	now := in.opts.Now()
	var newest *entry // the newcomer, for the fair share (share.go)
	for _, en := range in.txn {
		if en.fresh && (newest == nil || en.arrival > newest.arrival) {
			newest = en
		}
		in.keepRecorded(en)
		derived := in.derive(en, now)
		if !derived && !in.txnChanged[en] && !en.fresh {
			continue
		}
		kind := ChangeUpdated
		if en.fresh {
			kind = ChangeAdded
			en.fresh = false
		}
		en.card.Version++
		in.publish(Change{Card: en.card.ID, Kind: kind})
	}
	clear(in.txnChanged)
	clear(in.txn)
	in.txn = in.txn[:0]
	in.enforceBounds(newest)
}

// remove forgets an evicted card and every index pointing at it.
func (in *Inbox) remove(en *entry) {
	delete(in.byID, en.card.ID)
	in.unaccount(en)
	sk := subjKey{en.card.Key.Session, en.card.EventID}
	list := in.bySubject[sk]
	kept := list[:0]
	for _, x := range list {
		if x != en {
			kept = append(kept, x)
		}
	}
	if len(kept) == 0 {
		delete(in.bySubject, sk)
	} else {
		in.bySubject[sk] = kept
	}
	for _, k := range en.links {
		if in.links[k] == en {
			delete(in.links, k)
		}
	}
	for id := range en.ownIDs {
		if in.ours[id] == en {
			delete(in.ours, id)
		}
	}
}
