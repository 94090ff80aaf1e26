package view

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// provenance builds the card's origin line at opts.Now.
func provenance(c inbox.Card, vd inbox.Verdict, opts Options) Provenance {
	p := Provenance{
		Agent:        Name(c.Agent),
		Session:      Name(c.Key.Session),
		SessionShort: shortenID(Name(c.Key.Session), idRunes),
		Run:          Name(c.Run),
		RunShort:     shortenID(Name(c.Run), idRunes),
		Source:       Name(c.Key.Source),
		SourceShort:  shorten(Name(c.Key.Source), 32),
		Capture:      vd.Capture.String(),
		Request:      Name(c.Key.RequestID),
		RequestShort: shortenID(Name(c.Key.RequestID), idRunes),
		Card:         string(c.ID),
		Reach:        opts.Reachable,
	}
	if c.Severity >= aep.SeverityWarning {
		p.Severity = c.Severity.String()
	}
	if opts.Viewer.Answers() {
		p.ReachKind = reachKind(opts.Reachable)
		p.ReachText = words.reach[p.ReachKind]
	}
	asked := c.AskedAt
	if asked.IsZero() {
		asked = c.ReceivedAt
	}
	if !asked.IsZero() {
		p.AskedISO = asked.UTC().Format(time.RFC3339)
		p.AskedRel = relTime(asked, opts.Now)
		p.AskedLead = words.card["asked"]
		p.AskedTitle = exactTime(asked)
	}
	if !vd.Deadline.IsZero() {
		p.Deadline = countdown(vd, opts.Now)
	}
	return p
}

// countdown is the card's deadline at now, as its verdict has it.
func countdown(vd inbox.Verdict, now time.Time) *Countdown {
	deadline := vd.Deadline
	d := &Countdown{
		ISO:        deadline.UTC().Format(time.RFC3339Nano),
		Title:      "Deadline " + exactTime(deadline),
		PassedText: words.card["passed"],
		LeftText:   words.card["left"],
	}
	if vd.Expired {
		d.Passed = true
		d.Text = words.card["passed"]
		return d
	}
	d.Soon = vd.Left < time.Minute
	// Without the script the deadline is a time of day; the script
	// counts it down ("4:59 left").
	d.Text = fmt.Sprintf(words.card["answer-by"], deadlineTime(deadline, now))
	return d
}

// deadlineTime is a deadline as a time of day, "14:32 UTC", with its day
// when that is not today's: "4 Dec 14:32 UTC".
func deadlineTime(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04 UTC")
	}
	return t.Format("2 Jan 15:04 UTC")
}

// relTime says how long ago t was, at now: "just now", "3 min ago",
// "2 h ago", "4 d ago". A t in the future (clock skew) is "just now".
func relTime(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 45*time.Second:
		return "just now"
	case d < 90*time.Second:
		return "1 min ago"
	case d < time.Hour:
		return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + " d ago"
	}
}

// formatDuration says a duration in words: "45 s", "1 min 30 s", "5 min",
// "1 h 30 min". Under ten minutes the seconds are kept, so a 90 s
// deadline does not read as 2 min.
// DurationWords is d as the pages say a length of time: "15 s",
// "2 min 5 s", "10 min", "1 h 30 min".
func DurationWords(d time.Duration) string { return formatDuration(d) }

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " s"
	case d < 10*time.Minute:
		d = d.Round(time.Second)
		m, sec := int(d/time.Minute), int((d%time.Minute)/time.Second)
		if sec == 0 {
			return strconv.Itoa(m) + " min"
		}
		return strconv.Itoa(m) + " min " + strconv.Itoa(sec) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + " min"
	default:
		h := int(d / time.Hour)
		m := int((d % time.Hour).Round(time.Minute) / time.Minute)
		if m == 0 {
			return strconv.Itoa(h) + " h"
		}
		return strconv.Itoa(h) + " h " + strconv.Itoa(m) + " min"
	}
}

// exactTime is a time in words for a title: "2 Jan 2026 15:04:05 UTC".
func exactTime(t time.Time) string {
	return t.UTC().Format("2 Jan 2006 15:04:05 UTC")
}

// shorten keeps at most max runes of s, cutting from the middle with an
// ellipsis (ids and URLs differ at both ends).
// idRunes is the longest session or run id shown whole, in runes.
const idRunes = 32

// idTail is how many trailing runes of a long id are kept: enough of a
// ULID's or UUID's random end to tell ids apart.
const idTail = 8

// shortenID shortens a long session or run id for display (the full id
// goes in a title): its readable head up to a separator ("deploy-",
// "ask-user-question-"), an ellipsis, and its last idTail runes, so
// "every-type-01M8VQRPTD5287ZA246HK4HWD8" reads "every-type-…6HK4HWD8"
// rather than cutting through the middle of the name.
func shortenID(s string, max int) string {
	r := []rune(s)
	if len(r) <= max || max < idTail+5 {
		return s
	}
	head := r[:max-1-idTail]
	if i := lastSeparator(head); i >= 3 {
		head = head[:i+1]
	}
	return string(head) + ellipsis + string(r[len(r)-idTail:])
}

// ellipsis marks the cut of a shortened id: "…" and a word joiner, so a
// line never breaks between the ellipsis and the id's tail (a break before
// an ellipsis is already forbidden by the line-breaking rules).
const ellipsis = "…\u2060"

// lastSeparator is the index of the last '-', '_', '.', ':' or '/' in r, or -1.
func lastSeparator(r []rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		switch r[i] {
		case '-', '_', '.', ':', '/':
			return i
		}
	}
	return -1
}

func shorten(s string, max int) string {
	if utf8.RuneCountInString(s) <= max || max < 5 {
		return s
	}
	r := []rune(s)
	head := (max - 1) / 2
	tail := max - 1 - head
	return string(r[:head]) + ellipsis + string(r[len(r)-tail:])
}

// groupOf returns the DOM id and heading of the card's agent+session group.
// The id is a hash: agent and session are agent-controlled text.
func groupOf(c inbox.Card) (id, label string) {
	h := fnv.New64a()
	h.Write([]byte(c.Agent))
	h.Write([]byte{0})
	h.Write([]byte(c.Key.Session))
	agent := Name(c.Agent)
	if agent == "" {
		agent = "unnamed agent"
	}
	label = agent
	if c.Key.Session != "" {
		label += " · session " + shortenID(Name(c.Key.Session), idRunes)
	}
	return fmt.Sprintf("group-%016x", h.Sum64()), label
}

// sortKey orders open cards: soonest deadline (vd's) first (none last),
// then the longest waiting. Keys compare as strings; the browser inserts
// pushed cards by it.
func sortKey(c inbox.Card, vd inbox.Verdict) string {
	const none = int64(1<<62 - 1)
	dl := none
	if !vd.Deadline.IsZero() {
		dl = vd.Deadline.UnixMilli()
	}
	asked := c.ReceivedAt
	if asked.IsZero() {
		asked = c.AskedAt
	}
	// "%019d-%019d-%s", without fmt: it is drawn for every waiting card
	// on every page and after every post (NextPending).
	var sb strings.Builder
	sb.Grow(40 + len(c.ID))
	writePadded(&sb, clampMs(dl))
	sb.WriteByte('-')
	writePadded(&sb, clampMs(asked.UnixMilli()))
	sb.WriteByte('-')
	sb.WriteString(string(c.ID))
	return sb.String()
}

// writePadded writes v (not negative) in decimal, zero-padded to 19
// digits (the width of the largest int64).
func writePadded(sb *strings.Builder, v int64) {
	var d [19]byte
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	sb.Write(d[:])
}

func clampMs(v int64) int64 {
	if v < 0 {
		return 0
	}
	return v
}

// reachKind is a reach's data-reach value (words.reach's key).
func reachKind(r inbox.Reach) string {
	switch r {
	case inbox.ReachConnected:
		return "yes"
	case inbox.ReachNoControl:
		return "no-control"
	case inbox.ReachAmbiguous:
		return "ambiguous"
	case inbox.ReachNotConnected:
		return "no"
	}
	return "unknown"
}
