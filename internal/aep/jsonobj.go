package aep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// member is one name/value pair of a JSON object, in document order.
type member struct {
	Key   string
	Value json.RawMessage
	off   int // Value's offset in the decoded event's bytes; -1 when not known
}

var errNotObject = errors.New("not a JSON object")

// objectMembers splits a JSON object into its members in document order,
// values kept raw (subslices of raw). Duplicate names are returned as they
// appear.
func objectMembers(raw []byte) ([]member, error) {
	s := scanner{b: raw}
	s.skipWS()
	if s.i < len(raw) && raw[s.i] == '{' {
		var ms []member
		if s.object(1, &ms) {
			s.skipWS()
			if s.i == len(raw) {
				return ms, nil
			}
		}
	}
	return objectMembersStd(raw) // for encoding/json's reading and errors
}

// objectMembersStd is objectMembers through encoding/json.
func objectMembersStd(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{Key: key, Value: v, off: -1})
	}
	if _, err := dec.Token(); err != nil { // closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after object")
	}
	return out, nil
}

// arrayElements splits a JSON array into its elements (subslices of raw).
func arrayElements(raw []byte) ([]json.RawMessage, error) {
	s := scanner{b: raw}
	s.skipWS()
	if s.i >= len(raw) || raw[s.i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	s.i++
	s.skipWS()
	var out []json.RawMessage
	if s.i < len(raw) && raw[s.i] == ']' {
		return out, nil
	}
	for {
		start := s.i
		if !s.value(1) {
			return nil, errors.New("invalid JSON array")
		}
		out = append(out, raw[start:s.i:s.i])
		s.skipWS()
		if s.i >= len(raw) {
			return nil, errors.New("invalid JSON array")
		}
		switch raw[s.i] {
		case ',':
			s.i++
			s.skipWS()
		case ']':
			return out, nil
		default:
			return nil, errors.New("invalid JSON array")
		}
	}
}

// writeObject encodes members as a compact JSON object, in order.
func writeObject(buf *bytes.Buffer, ms []member) {
	buf.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeKey(buf, m.Key)
		buf.WriteByte(':')
		buf.Write(m.Value)
	}
	buf.WriteByte('}')
}

// writeKey writes a member name as a JSON string.
func writeKey(buf *bytes.Buffer, k string) {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(k) // a string always marshals
			buf.Write(b)
			return
		}
	}
	buf.WriteByte('"')
	buf.WriteString(k)
	buf.WriteByte('"')
}

// encodeObject is writeObject into a fresh slice.
func encodeObject(ms []member) json.RawMessage {
	var buf bytes.Buffer
	writeObject(&buf, ms)
	return buf.Bytes()
}

// jsonKind is the kind of a raw JSON value, from its first byte.
func jsonKind(v json.RawMessage) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; {
	case c == '{', c == '[', c == '"', c == 't', c == 'f', c == 'n':
		if c == 'f' {
			return 't' // boolean
		}
		return c
	case c == '-' || (c >= '0' && c <= '9'):
		return '0' // number
	}
	return 0
}

// isIntegerLiteral reports whether a raw JSON number is written as an
// integer (no fraction, no exponent).
func isIntegerLiteral(v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	i := 0
	if v[0] == '-' {
		i++
	}
	if i == len(v) {
		return false
	}
	for ; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}
