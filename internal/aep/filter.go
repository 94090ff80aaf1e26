package aep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidFilter marks every error ParseFilter returns (the relay's
// invalid-filter).
var ErrInvalidFilter = errors.New("aep: invalid filter")

// Filter is a parsed attr-match filter (AEP-0003 §6): predicates on envelope
// attributes, all of which must hold. The nil *Filter and the empty filter
// match every event. A Filter is immutable and safe for concurrent use.
type Filter struct {
	preds []predicate
}

type predicate struct {
	attr     string
	any      []scalar // equality / inclusion (any-of)
	prefixes []string // type patterns "p.*", stored as "p."
	sevRange bool
	gte, lte Severity
}

// scalar is a filter's JSON string, integer or boolean, compared exactly.
type scalar struct {
	kind byte // '"' string, '0' integer, 't' boolean
	s    string
	n    int64
	b    bool
}

// filterable lists the core attributes a filter may name (AEP-0003 §6.2).
var filterable = map[string]bool{
	"id": true, "type": true, "subject": true, "source": true, "agent": true,
	"session": true, "run": true, "step": true, "epoch": true, "cause": true,
	"severity": true, "capture": true,
}

// ParseFilter parses an attr-match filter. It fails closed (an error
// wrapping ErrInvalidFilter) on anything the dialect does not define: a
// non-object, a key that is neither a filterable core attribute nor a legal
// extension name (time, seq, aep, traceparent and data are not filterable),
// a repeated key, a null, float, object or nested array where a scalar
// belongs, an empty inclusion array, a glob anywhere but a "type" prefix
// pattern ("p.*"; a bare "*" is not one), a severity comparison other than
// {gte, lte} over the six levels, and an unknown severity or capture name.
// Empty input (no filter at all) yields the match-all filter.
func ParseFilter(b []byte) (*Filter, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return &Filter{}, nil
	}
	ms, err := objectMembers(b)
	if err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %v", ErrInvalidFilter, err)
	}
	f := &Filter{preds: make([]predicate, 0, len(ms))}
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.Key] {
			return nil, fmt.Errorf("%w: key %q appears twice", ErrInvalidFilter, m.Key)
		}
		seen[m.Key] = true
		if !filterable[m.Key] && (coreAttrs[m.Key] || !validExtensionName(m.Key)) {
			return nil, fmt.Errorf("%w: %q is not a filterable attribute", ErrInvalidFilter, m.Key)
		}
		p, err := parsePredicate(m.Key, m.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %s", ErrInvalidFilter, m.Key, err.Error())
		}
		f.preds = append(f.preds, p)
	}
	return f, nil
}

func parsePredicate(attr string, v json.RawMessage) (predicate, error) {
	p := predicate{attr: attr}
	switch jsonKind(v) {
	case '{':
		if attr != "severity" {
			return p, errors.New("only severity takes a comparison object")
		}
		return parseSeverityRange(p, v)
	case '[':
		var els []json.RawMessage
		if err := json.Unmarshal(v, &els); err != nil {
			return p, err
		}
		if len(els) == 0 {
			return p, errors.New("an inclusion array needs at least one value")
		}
		for _, el := range els {
			if err := p.addValue(el); err != nil {
				return p, err
			}
		}
		return p, nil
	}
	return p, p.addValue(v)
}

// addValue adds one scalar (or, on type, one pattern) to the any-of set.
func (p *predicate) addValue(v json.RawMessage) error {
	var sc scalar
	switch jsonKind(v) {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		sc = scalar{kind: '"', s: s}
	case '0':
		if !isIntegerLiteral(v) {
			return fmt.Errorf("%s is not an integer", v)
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%s is out of range", v)
		}
		sc = scalar{kind: '0', n: n}
	case 't':
		sc = scalar{kind: 't', b: v[0] == 't'}
	default:
		return fmt.Errorf("%s is not a string, integer or boolean", v)
	}
	switch p.attr {
	case "type":
		if sc.kind != '"' {
			return errors.New("a type pattern is a string")
		}
		if strings.Contains(sc.s, "*") {
			prefix, ok := strings.CutSuffix(sc.s, ".*")
			if !ok || prefix == "" || strings.Contains(prefix, "*") {
				return fmt.Errorf("%q is not a type pattern (want an exact type or prefix.*)", sc.s)
			}
			p.prefixes = append(p.prefixes, prefix+".")
			return nil
		}
	case "severity":
		if _, err := parseLevel(sc, parseSeverityName); err != nil {
			return err
		}
	case "capture":
		if _, err := parseLevel(sc, func(s string) (int, error) { c, err := ParseCapture(s); return int(c), err }); err != nil {
			return err
		}
	default:
		if sc.kind == '"' && strings.Contains(sc.s, "*") {
			return fmt.Errorf("%q: globs are allowed on type only", sc.s)
		}
	}
	p.any = append(p.any, sc)
	return nil
}

// parseSeverityName is ParseSeverity as an int, rejecting the empty name.
func parseSeverityName(s string) (int, error) {
	if s == "" {
		return 0, errors.New("aep: empty severity")
	}
	v, err := ParseSeverity(s)
	return int(v), err
}

func parseLevel(sc scalar, parse func(string) (int, error)) (int, error) {
	if sc.kind != '"' || sc.s == "" {
		return 0, errors.New("a level is a non-empty string")
	}
	return parse(sc.s)
}

func parseSeverityRange(p predicate, v json.RawMessage) (predicate, error) {
	ms, err := objectMembers(v)
	if err != nil {
		return p, err
	}
	if len(ms) == 0 {
		return p, errors.New("a severity comparison needs gte and/or lte")
	}
	p.sevRange = true
	p.gte, p.lte = SeverityDebug, SeverityCritical
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.Key] {
			return p, fmt.Errorf("operator %q appears twice", m.Key)
		}
		seen[m.Key] = true
		var name string
		if jsonKind(m.Value) != '"' || json.Unmarshal(m.Value, &name) != nil || name == "" {
			return p, fmt.Errorf("operator %q needs a severity name", m.Key)
		}
		lvl, err := ParseSeverity(name)
		if err != nil {
			return p, err
		}
		switch m.Key {
		case "gte":
			p.gte = lvl
		case "lte":
			p.lte = lvl
		default:
			return p, fmt.Errorf("operator %q is not gte or lte", m.Key)
		}
	}
	return p, nil
}

// Match reports whether e satisfies every predicate. An absent attribute
// matches nothing, except severity, capture and epoch, whose defaults
// (info, metadata, 0) apply.
func (f *Filter) Match(e *Event) bool {
	if f == nil {
		return true
	}
	for i := range f.preds {
		if !f.preds[i].match(e) {
			return false
		}
	}
	return true
}

func (p *predicate) match(e *Event) bool {
	switch p.attr {
	case "severity":
		name := e.severity
		if name == "" {
			name = "info"
		}
		if p.sevRange {
			s, err := ParseSeverity(name)
			return err == nil && s >= p.gte && s <= p.lte
		}
		return p.matchString(name)
	case "capture":
		name := e.capture
		if name == "" {
			name = "metadata"
		}
		return p.matchString(name)
	case "epoch":
		return p.matchInt(e.epoch)
	case "type":
		if !e.Has("type") {
			return false
		}
		for _, pre := range p.prefixes {
			if strings.HasPrefix(e.typ, pre) {
				return true
			}
		}
		return p.matchString(e.typ)
	}
	if s, ok := coreString(e, p.attr); ok {
		return e.Has(p.attr) && p.matchString(s)
	}
	raw, ok := e.Member(p.attr)
	if !ok {
		return false
	}
	switch jsonKind(raw) {
	case '"':
		s, err := rawString(raw)
		return err == nil && p.matchString(s)
	case '0':
		if !isIntegerLiteral(raw) {
			return false
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil && p.matchInt(n)
	case 't':
		b := raw[0] == 't'
		for _, sc := range p.any {
			if sc.kind == 't' && sc.b == b {
				return true
			}
		}
	}
	return false
}

func (p *predicate) matchString(s string) bool {
	for _, sc := range p.any {
		if sc.kind == '"' && sc.s == s {
			return true
		}
	}
	return false
}

func (p *predicate) matchInt(n int64) bool {
	for _, sc := range p.any {
		if sc.kind == '0' && sc.n == n {
			return true
		}
	}
	return false
}

// coreString returns a string core attribute's decoded value.
func coreString(e *Event, attr string) (string, bool) {
	switch attr {
	case "id":
		return e.id, true
	case "subject":
		return e.subject, true
	case "source":
		return e.source, true
	case "agent":
		return e.agent, true
	case "session":
		return e.session, true
	case "run":
		return e.run, true
	case "step":
		return e.step, true
	case "cause":
		return e.cause, true
	}
	return "", false
}
