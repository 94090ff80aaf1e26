// Package store is the backend-neutral side of the UI's database: the
// store of the operator's answers (the answer journal: what a stored
// answer looks like when read back, Entry and Change, the history query
// and its page, the retention loop), of the operators' sessions
// (session.go) and of the Web Push state (push.go), and how a backend's
// ability to write is followed (health.go). The queries are
// internal/store/sqldb's, run by the two backends, internal/store/sqlite
// (the default, one file) and internal/store/postgres (for replicas),
// which implement inbox.Journal for the write-ahead path, History, Prune,
// the sessions and the push state.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// PageSize is the most entries one History page holds, and its default.
const PageSize = 50

// ErrBadCursor is History's refusal of a HistoryQuery.After it did not
// hand out.
var ErrBadCursor = errors.New("journal: not a history cursor")

// ErrDuplicate is Record's refusal of a command id already recorded.
var ErrDuplicate = errors.New("journal: command id already recorded")

// ErrLive is a backend's refusal to keep a second live submission (state
// sending or accepted, inbox.Submission.InFlight) for one request: Record
// of a new one, or Settle of another back to sending. The database
// enforces it (a unique index), so it holds across every replica on one
// database, not only within one inbox. It matches inbox.ErrInFlight
// under errors.Is, the refusal the inbox gives when it sees the live
// answer itself.
var ErrLive = fmt.Errorf("journal: another answer to this request is live: %w", inbox.ErrInFlight)

// Identity is a journal's own identity, created once when the journal is
// and never recomputed: the command source stays the same when the host
// name changes, so retries ride the same (source, id).
type Identity struct {
	// InstanceID is a ULID made when the journal was created.
	InstanceID string
	// Source is the command source of the UI that owns the journal,
	// aep://{Host}/ui/aepforms/{InstanceID}.
	Source string
	// Host is the host name when the journal was created.
	Host      string
	CreatedAt time.Time
}

// NewSource is the command source of a journal made on host with
// instance id: aep://{host}/ui/aepforms/{id}.
func NewSource(host, id string) string {
	return "aep://" + url.PathEscape(host) + "/ui/aepforms/" + id
}

// Change is one state a submission moved to, with its time (the inbox
// clock). A submission's first change is SubmissionSending at its post.
type Change struct {
	State          inbox.SubmissionState
	Reason, Detail string
	At             time.Time
}

// Entry is one submission as the journal keeps it: the submission with its
// latest state, and every state it moved through, oldest first.
type Entry struct {
	inbox.Submission
	Changes []Change
	// Routing is the answered question's routing history, oldest
	// first: its team, its assignments (Assigned) and the reminders and
	// escalations sent, kept as long as the entry.
	Routing []RoutingStep
}

// HistoryQuery selects and pages History. Zero fields select everything.
type HistoryQuery struct {
	Agent string // the request's agent, exactly
	// Session is the request's session, exactly, or its short form as
	// the history rows show it, "{head}…{tail}" (also "..."): a session
	// that starts with head and holds tail (SessionShort).
	Session  string
	Operator string                // the operator name given at sign-in, exactly
	Outcome  inbox.SubmissionState // the submission's latest state
	// Rule narrows to the answers a rule sent: AnyRule for any rule's,
	// a rule's id for that rule's; "" does not narrow.
	Rule string
	// Since and Until bound the time posted: Since <= At < Until; zero is
	// unbounded.
	Since, Until time.Time
	// Text is a case-insensitive substring of the question or of the
	// answer sent (option, text, values); see SearchText.
	Text string
	// Team narrows to the questions a routes file sent to that team;
	// Escalated to those escalated.
	Team      string
	Escalated bool
	// After is HistoryPage.Next of the page before; "" is the first page.
	After string
	// Limit is the page size: 0 or more than PageSize is PageSize.
	Limit int
}

// HistoryPage is one page of History, newest first. Next is the cursor of
// the page after it, "" on the last page. Entries posted after the first
// page was read never shift a later page: pages are keyed by position
// (time posted, then insertion order), not by offset.
type HistoryPage struct {
	Entries []Entry
	Next    string
}

// SearchText is what HistoryQuery.Text is matched against for s: its
// question, its answer (option, text and the values as JSON) and the
// words its card showed for that answer (labelWords), folded
// with strings.ToLower so every backend matches the same way (SQLite's
// own lower() and LIKE fold ASCII only). A backend stores it beside the
// submission and matches Fold(query.Text) as a plain substring.
func SearchText(s inbox.Submission) string {
	var b strings.Builder
	b.WriteString(s.Question)
	text := ""
	if s.Answer.Text != nil {
		text = *s.Answer.Text
	}
	for _, part := range []string{s.Answer.Option, text} {
		if part != "" {
			b.WriteString("\n")
			b.WriteString(part)
		}
	}
	if len(s.Answer.Values) > 0 {
		var vb strings.Builder
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		if enc.Encode(s.Answer.Values) == nil {
			b.WriteString("\n")
			b.WriteString(strings.TrimSpace(vb.String()))
		}
	}
	b.WriteString(labelWords(s))
	return Fold(b.String())
}

// SearchVersion is the version of SearchText a row's search text is
// written with. Opening a journal writes the search text of rows with an
// older one again (labels were added in version 1), from what
// the row holds: the field specs always, the option labels when the row
// kept its request's options.
const SearchVersion = 1

// FormatCursor is the HistoryPage.Next of a page whose last entry was
// posted at posted (unix nanoseconds) and inserted seq-th: every backend
// keys pages by that position.
func FormatCursor(posted, seq int64) string {
	return strconv.FormatInt(posted, 10) + "." + strconv.FormatInt(seq, 10)
}

// ParseCursor reads a FormatCursor; anything else is ErrBadCursor.
func ParseCursor(c string) (posted, seq int64, err error) {
	p, s, ok := strings.Cut(c, ".")
	if ok {
		posted, err = strconv.ParseInt(p, 10, 64)
		if err == nil {
			seq, err = strconv.ParseInt(s, 10, 64)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return posted, seq, nil
}

// Fold is the case folding of SearchText and HistoryQuery.Text.
func Fold(s string) string { return strings.ToLower(s) }

// DefaultLease is how long a replica holds a live submission's resend
// lease (inbox.Leases) when its backend's Options set none: another
// replica on the database resends it once the lease lapses unrenewed.
const DefaultLease = 30 * time.Second

// NewReplica is a replica name for a process that was given none: random,
// so two processes never hold one lease.
func NewReplica() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "replica-" + hex.EncodeToString(b[:])
}

// SessionShort splits a session filter given in its short form,
// "{head}…{tail}" (the ellipsis may carry a word joiner, or be typed as
// "..."), into its head and tail; short is false for a whole session id.
func SessionShort(s string) (head, tail string, short bool) {
	s = strings.ReplaceAll(s, "\u2060", "")
	for _, mark := range []string{"…", "..."} {
		if h, t, ok := strings.Cut(s, mark); ok && h != "" && t != "" {
			return h, t, true
		}
	}
	return "", "", false
}
