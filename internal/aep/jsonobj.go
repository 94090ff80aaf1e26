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
// values kept raw. Duplicate names are returned as they appear.
func objectMembers(raw []byte) ([]member, error) {
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

// writeObject encodes members as a compact JSON object, in order.
func writeObject(buf *bytes.Buffer, ms []member) {
	buf.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key) // a string always marshals
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(m.Value)
	}
	buf.WriteByte('}')
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
