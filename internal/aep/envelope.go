package aep

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ValidateEnvelope checks e against the envelope rules of AEP-0001 §5 (the
// same rules as schemas/aep-event.schema.json): the required attributes
// (aep "0.1", id, type, time, source, agent); session and seq on
// session-scoped events, no seq on commands and attention.routed, no
// session, run, step or seq on agent-scoped events; the type grammar and
// closed category set; RFC 3339 time; a URI source; non-negative integer seq
// and epoch; non-empty optional strings; traceparent shape; severity and
// capture names; an object data; and extension names [a-z0-9]{1,20} with
// string, integer or boolean values. Absent optional attributes are never
// null. It returns nil, or every failure joined (errors.Join), each a
// *ValidationError naming the attribute and the rule.
func ValidateEnvelope(e *Event) error {
	var c collector
	for _, name := range [...]string{"aep", "id", "type", "time", "source", "agent"} {
		if !e.Has(name) {
			c.add(name, "is required")
		}
	}
	// Core attributes that are present must have their JSON type; Decode
	// already refused non-strings and non-integers, but not null.
	for _, name := range [...]string{"aep", "id", "type", "subject", "time", "source", "agent", "session", "run", "step", "cause", "traceparent", "severity", "capture"} {
		if v, ok := e.Member(name); ok && jsonKind(v) != '"' {
			c.add(name, "must be a string, not null")
		}
	}
	if e.Has("aep") && e.aep != Version {
		c.add("aep", fmt.Sprintf("must be %q (got %q)", Version, e.aep))
	}
	for _, a := range [...]struct{ name, val string }{
		{"id", e.id}, {"agent", e.agent}, {"subject", e.subject}, {"session", e.session},
		{"run", e.run}, {"step", e.step}, {"cause", e.cause},
	} {
		if v, ok := e.Member(a.name); ok && a.val == "" && jsonKind(v) == '"' {
			c.add(a.name, "must not be empty")
		}
	}
	if e.Has("type") {
		if rule := typeRule(e.typ); rule != "" {
			c.add("type", rule)
		}
	}
	if e.Has("time") && !validRFC3339(e.time) {
		c.add("time", "must be an RFC 3339 date-time with a time zone")
	}
	if e.Has("source") && !validURI(e.source) {
		c.add("source", "must be an absolute URI (scheme:...)")
	}
	if e.Has("type") {
		switch {
		case IsAgentScoped(e.typ):
			for _, name := range [...]string{"session", "run", "step", "seq"} {
				if e.Has(name) {
					c.add(name, "must be omitted on agent-scoped "+e.typ)
				}
			}
		case MustOmitSeq(e.typ):
			if !e.Has("session") {
				c.add("session", "is required on "+e.typ)
			}
			if e.hasSeq {
				c.add("seq", "must be omitted on "+e.typ+" (a foreign-emitter session event)")
			}
		default:
			if !e.Has("session") {
				c.add("session", "is required on session-scoped "+e.typ)
			}
			if !e.hasSeq {
				c.add("seq", "is required on session-scoped "+e.typ)
			}
		}
	}
	if e.hasSeq && e.seq < 0 {
		c.add("seq", "must be an integer >= 0")
	}
	if e.hasEpoch && e.epoch < 0 {
		c.add("epoch", "must be an integer >= 0")
	}
	if e.Has("traceparent") && !validTraceparent(e.traceparent) {
		c.add("traceparent", "must be a W3C traceparent (00-{32 hex}-{16 hex}-{2 hex})")
	}
	if e.Has("severity") {
		if _, err := ParseSeverity(e.severity); err != nil || e.severity == "" {
			c.add("severity", fmt.Sprintf("must be one of debug, info, notice, warning, error, critical (got %q)", e.severity))
		}
	}
	if e.Has("capture") {
		if _, err := ParseCapture(e.capture); err != nil || e.capture == "" {
			c.add("capture", fmt.Sprintf("must be one of none, metadata, redacted, full (got %q)", e.capture))
		}
	}
	if d, ok := e.coreMember(coreData); ok && jsonKind(d) != '{' {
		c.add("data", "must be an object")
	}
	c.extensions(e)
	return c.err()
}

// collector gathers validation failures without allocating when there are none.
type collector struct{ errs []error }

func (c *collector) add(attr, rule string) {
	c.errs = append(c.errs, &ValidationError{Attr: attr, Rule: rule})
}

func (c *collector) err() error { return errors.Join(c.errs...) }

// extensions checks every non-core member (AEP-0001 §5.4), in document
// order, and that no member name repeats (RFC 8259 says names SHOULD be
// unique; parsers disagree on which duplicate wins, so a relay must not pass
// an ambiguous event on).
func (c *collector) extensions(e *Event) {
	var ext [8]int
	exts := ext[:0] // indexes of extension members seen so far
	var seen map[string]bool
	if len(e.members) > 32 {
		seen = make(map[string]bool, len(e.members)) // keep huge events linear
	}
	for i, m := range e.members {
		if ci := coreIndex(m.Key); ci >= 0 {
			if int(e.core[ci]) != i+1 { // not the last occurrence
				c.add(m.Key, "appears more than once")
			}
			continue
		}
		dup := false
		if seen != nil {
			dup = seen[m.Key]
			seen[m.Key] = true
		} else {
			for _, j := range exts {
				if e.members[j].Key == m.Key {
					dup = true
					break
				}
			}
			exts = append(exts, i)
		}
		if dup {
			c.add(m.Key, "appears more than once")
		}
		if !validExtensionName(m.Key) {
			c.add(m.Key, "extension attribute name must match [a-z0-9]{1,20}")
		}
		if !validExtensionValue(m.Value) {
			c.add(m.Key, "extension attribute value must be a string, integer or boolean")
		}
	}
}

func validExtensionValue(v json.RawMessage) bool {
	switch jsonKind(v) {
	case '"', 't':
		return true
	case '0':
		return isIntegerLiteral(v)
	}
	return false
}

// categories is the closed set of AEP 0.1 categories (AEP-0002 §3).
var categories = map[string]bool{
	"agent": true, "session": true, "run": true, "progress": true, "tool": true,
	"delegation": true, "attention": true, "resource": true, "error": true,
	"state": true, "assessment": true, "message": true, "control": true,
}

// typeRule returns "" when t follows AEP-0001 §6, else the rule it breaks:
// {category}.{rest} with category in the closed set and rest one or more
// [a-z0-9_]+ tokens, or x.{vendor}.{category}.{rest} with [a-z0-9_-]+ vendor.
func typeRule(t string) string {
	segs := splitDots(t)
	if len(segs) >= 1 && segs[0] == "x" {
		if len(segs) < 4 {
			return "a vendor type must be x.{vendor}.{category}.{rest}"
		}
		if !tokenOK(segs[1], true) {
			return "vendor name must be [a-z0-9_-]+"
		}
		for _, s := range segs[2:] {
			if !tokenOK(s, false) {
				return "type segments must be lowercase [a-z0-9_]+"
			}
		}
		return ""
	}
	if len(segs) < 2 {
		return "must be {category}.{rest}"
	}
	for _, s := range segs {
		if !tokenOK(s, false) {
			return "type segments must be lowercase [a-z0-9_]+"
		}
	}
	if !categories[segs[0]] {
		return fmt.Sprintf("category %q is not one of the 13 registered categories", segs[0])
	}
	return ""
}

// splitDots splits on '.' into at most 16 segments without allocating for
// ordinary types (the array lives on the caller's stack).
func splitDots(t string) []string {
	var buf [16]string
	out := buf[:0]
	start := 0
	for i := 0; i <= len(t); i++ {
		if i == len(t) || t[i] == '.' {
			out = append(out, t[start:i])
			start = i + 1
		}
	}
	return out
}

func tokenOK(s string, vendor bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (vendor && c == '-') {
			continue
		}
		return false
	}
	return true
}

// validRFC3339 checks an RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM),
// with real calendar dates (leap years) and a leap second allowed.
func validRFC3339(s string) bool {
	if len(s) < 20 {
		return false
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for j := i; j < i+n; j++ {
			if s[j] < '0' || s[j] > '9' {
				return 0, false
			}
			v = v*10 + int(s[j]-'0')
		}
		return v, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	h, ok4 := num(11, 2)
	mi, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || s[4] != '-' || s[7] != '-' ||
		(s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return false
	}
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 60 {
		return false
	}
	i := 19
	if s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	rest := s[i:]
	if rest == "Z" || rest == "z" {
		return true
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
		return false
	}
	oh, ok1 := num(i+1, 2)
	om, ok2 := num(i+4, 2)
	return ok1 && ok2 && oh <= 23 && om <= 59
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// validURI checks the shape of an absolute URI (RFC 3986): a scheme, a
// colon, and no spaces, controls or characters a URI never holds.
func validURI(s string) bool {
	colon := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' {
			colon = i
			break
		}
		alpha := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if i == 0 && !alpha || !alpha && (c < '0' || c > '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	if colon <= 0 {
		return false
	}
	for i := colon + 1; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' || c == '{' || c == '|' || c == '}' {
			return false
		}
	}
	return true
}

// validTraceparent checks the W3C traceparent shape 00-{32 hex}-{16 hex}-{2 hex}
// (lowercase hex, as the schema's pattern).
func validTraceparent(s string) bool {
	if len(s) != 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
