package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aepforms/aepforms/internal/aep"
)

// Errors of resume positions.
var (
	// ErrInvalidFrom marks a from that is neither "all" nor an array of
	// {session, epoch, seq} positions.
	ErrInvalidFrom = errors.New("relay: invalid from")
	// ErrFromLimit marks a from naming more positions than MaxFrom.
	ErrFromLimit = errors.New("relay: from exceeds the position limit")
)

// resumePos is one requested resume position: replay strictly after it.
type resumePos struct {
	session string
	pos     aep.Position
}

// resume is a parsed from: every held session (all), or positions.
type resume struct {
	all       bool
	positions []resumePos
}

// none reports whether the resume asks for no replay at all.
func (r resume) none() bool { return !r.all && len(r.positions) == 0 }

// parseFrom parses a from value: the JSON string "all" or a JSON array of
// {session, epoch, seq} objects (epoch defaults to 0). At most max
// positions are accepted.
func parseFrom(raw []byte, max int) (resume, error) {
	raw = bytes.TrimSpace(raw)
	var all string
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &all); err != nil || all != "all" {
			return resume{}, fmt.Errorf("%w: a string from must be \"all\"", ErrInvalidFrom)
		}
		return resume{all: true}, nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		return resume{}, fmt.Errorf("%w: want \"all\" or an array of {session, epoch, seq}", ErrInvalidFrom)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return resume{}, fmt.Errorf("%w: %v", ErrInvalidFrom, err)
	}
	if len(items) > max {
		return resume{}, fmt.Errorf("%w: %d positions, the limit (AEP_MAX_FROM) is %d", ErrFromLimit, len(items), max)
	}
	out := resume{positions: make([]resumePos, 0, len(items))}
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		p, err := parsePosition(it)
		if err != nil {
			return resume{}, fmt.Errorf("%w: position %d: %v", ErrInvalidFrom, i, err)
		}
		if seen[p.session] {
			continue
		}
		seen[p.session] = true
		out.positions = append(out.positions, p)
	}
	return out, nil
}

func parsePosition(raw json.RawMessage) (resumePos, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return resumePos{}, errors.New("not an object")
	}
	var p resumePos
	s, ok := m["session"]
	if !ok || json.Unmarshal(s, &p.session) != nil {
		return resumePos{}, errors.New("session must be a string")
	}
	var err error
	if p.pos.Seq, err = nonNegInt(m, "seq", true); err != nil {
		return resumePos{}, err
	}
	if p.pos.Epoch, err = nonNegInt(m, "epoch", false); err != nil {
		return resumePos{}, err
	}
	return p, nil
}

func nonNegInt(m map[string]json.RawMessage, name string, required bool) (int64, error) {
	v, ok := m[name]
	if !ok {
		if required {
			return 0, fmt.Errorf("%s is required", name)
		}
		return 0, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return 0, fmt.Errorf("%s must be an integer >= 0", name)
	}
	i, err := n.Int64()
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%s must be an integer >= 0", name)
	}
	return i, nil
}

// exhaustedMark says a resume position predates what a session holds.
type exhaustedMark struct {
	session  string
	earliest aep.Position
}

// replay is what a subscription receives before live delivery.
type replay struct {
	marks  []exhaustedMark
	events []*aep.Event
}

// plan collects the replay for a resume under the relay lock: per named
// session the held events strictly after its position (all held events of
// every session for all), with a mark for each position that predates its
// session's buffer. keep filters the events.
func (s *store) plan(r resume, keep func(*aep.Event) bool) replay {
	var out replay
	add := func(es []entry) {
		for _, e := range es {
			if keep(e.ev) {
				out.events = append(out.events, e.ev)
			}
		}
	}
	if r.all {
		for _, b := range s.all() {
			add(b.live())
		}
		return out
	}
	for _, p := range r.positions {
		b := s.session(p.session)
		if b == nil {
			continue
		}
		es, exhausted, earliest := b.after(p.pos)
		if exhausted {
			out.marks = append(out.marks, exhaustedMark{session: p.session, earliest: earliest})
		}
		add(es)
	}
	return out
}
