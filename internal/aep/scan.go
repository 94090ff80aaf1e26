package aep

import (
	"encoding/json"
	"unicode/utf8"
)

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

// scanner is a validating JSON scanner for Decode's fast path: it accepts
// exactly what encoding/json accepts (RFC 8259; strings need not be valid
// UTF-8) and notes whitespace outside strings, which Raw must not hold.
// When it refuses, Decode falls back to encoding/json, so the two can only
// differ in speed.
type scanner struct {
	b  []byte
	i  int
	ws bool
}

func (s *scanner) skipWS() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.ws = true
			s.i++
		default:
			return
		}
	}
}

// value scans one JSON value at s.i.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth+1, nil)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

// object scans an object; when ms is non-nil it appends each member, its
// value a subslice of s.b.
func (s *scanner) object(depth int, ms *[]member) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // {
	s.skipWS()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		kstart := s.i
		escaped, ok := s.str()
		if !ok {
			return false
		}
		kend := s.i
		s.skipWS()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.skipWS()
		vstart := s.i
		if !s.value(depth) {
			return false
		}
		if ms != nil {
			key, ok := memberKey(s.b[kstart:kend], escaped)
			if !ok {
				return false
			}
			*ms = append(*ms, member{Key: key, Value: s.b[vstart:s.i:s.i], off: vstart})
		}
		s.skipWS()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.skipWS()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // [
	s.skipWS()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		s.skipWS()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.skipWS()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// str scans a string and reports whether it holds escapes.
func (s *scanner) str() (escaped, ok bool) {
	s.i++ // opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, true
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+4 >= len(s.b) {
					return false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return false, false
					}
				}
				s.i += 5
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		default:
			s.i++
		}
	}
	return false, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) number() bool {
	b, i := s.b, s.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	s.i = i
	return true
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// memberKey decodes an object key; the core attribute names come back as
// constants, so decoding an envelope allocates no key strings.
func memberKey(quoted []byte, escaped bool) (string, bool) {
	if escaped || !utf8.Valid(quoted) {
		// encoding/json's reading: escapes decoded, invalid UTF-8 replaced.
		var k string
		if err := json.Unmarshal(quoted, &k); err != nil {
			return "", false
		}
		return k, true
	}
	inner := quoted[1 : len(quoted)-1]
	switch string(inner) {
	case "aep":
		return "aep", true
	case "id":
		return "id", true
	case "type":
		return "type", true
	case "subject":
		return "subject", true
	case "time":
		return "time", true
	case "source":
		return "source", true
	case "agent":
		return "agent", true
	case "session":
		return "session", true
	case "run":
		return "run", true
	case "step":
		return "step", true
	case "seq":
		return "seq", true
	case "epoch":
		return "epoch", true
	case "cause":
		return "cause", true
	case "traceparent":
		return "traceparent", true
	case "severity":
		return "severity", true
	case "capture":
		return "capture", true
	case "data":
		return "data", true
	}
	return string(inner), true
}

// scanEvent validates b as one JSON object. It returns the members (values
// subslices of b) and whether b held whitespace outside strings; ok is
// false for anything else (invalid JSON, another kind of value).
func scanEvent(b []byte) (ms []member, ws, ok bool) {
	s := scanner{b: b}
	s.skipWS()
	if s.i >= len(b) || b[s.i] != '{' {
		return nil, false, false
	}
	ms = make([]member, 0, 20)
	if !s.object(1, &ms) {
		return nil, false, false
	}
	s.skipWS()
	if s.i != len(b) {
		return nil, false, false
	}
	return ms, s.ws, true
}
