package aep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is the only AEP version this package speaks.
const Version = "0.1"

// Sentinel errors of the package.
var (
	ErrNotObject = errors.New("aep: event is not a JSON object")
	ErrBadSSEID  = errors.New("aep: malformed SSE id")
)

// Event is one AEP event. It keeps the bytes it was decoded from (compacted
// to one line, otherwise as received) so relays forward it byte-identically,
// and offers typed, defaulted views of the 16 context attributes.
//
// An Event is immutable after Decode and safe for concurrent reads.
type Event struct {
	raw     []byte
	members []member // in document order; values are subslices of raw
	core    [numCore]int32

	aep, id, typ, subject, time, source, agent string
	session, run, step, cause, traceparent     string
	severity, capture                          string
	seq, epoch                                 int64
	hasSeq, hasEpoch                           bool
}

// The core members, indexing Event.core, which holds 1 + the index in
// members of the member's last occurrence (0: absent; the last one wins, as
// with encoding/json).
const (
	coreAEP = iota
	coreID
	coreType
	coreSubject
	coreTime
	coreSource
	coreAgent
	coreSession
	coreRun
	coreStep
	coreCause
	coreTraceparent
	coreSeverity
	coreCapture
	coreSeq
	coreEpoch
	coreData
	numCore
)

// coreIndex returns name's index in Event.core, -1 for other names.
func coreIndex(name string) int {
	switch name {
	case "aep":
		return coreAEP
	case "id":
		return coreID
	case "type":
		return coreType
	case "subject":
		return coreSubject
	case "time":
		return coreTime
	case "source":
		return coreSource
	case "agent":
		return coreAgent
	case "session":
		return coreSession
	case "run":
		return coreRun
	case "step":
		return coreStep
	case "cause":
		return coreCause
	case "traceparent":
		return coreTraceparent
	case "severity":
		return coreSeverity
	case "capture":
		return coreCapture
	case "seq":
		return coreSeq
	case "epoch":
		return coreEpoch
	case "data":
		return coreData
	}
	return -1
}

// Decode parses one event. It fails only when b is not a JSON object or an
// attribute that must be a string or integer has another JSON type; the
// envelope rules are checked by ValidateEnvelope. Whitespace outside strings
// is removed so the event fits on one line (the JSONL and SSE framing).
// Decode keeps its own copy of the bytes.
func Decode(b []byte) (*Event, error) {
	raw := bytes.Clone(b)
	ms, ws, ok := scanEvent(raw)
	if !ok || ws {
		// Let encoding/json compact (and, for invalid input, explain).
		var buf bytes.Buffer
		buf.Grow(len(b))
		if err := json.Compact(&buf, b); err != nil {
			return nil, fmt.Errorf("aep: event is not valid JSON: %w", err)
		}
		raw = buf.Bytes()
		if len(raw) == 0 || raw[0] != '{' {
			return nil, ErrNotObject
		}
		if ms, _, ok = scanEvent(raw); !ok {
			var err error
			if ms, err = objectMembers(raw); err != nil {
				return nil, fmt.Errorf("aep: event is not a JSON object: %w", err)
			}
		}
	}
	e := &Event{raw: raw, members: ms}
	for i, m := range ms {
		if c := coreIndex(m.Key); c >= 0 {
			e.core[c] = int32(i + 1)
		}
	}
	// Attribute strings are substrings of one small string holding them
	// all, never of the event's bytes: a kept id or session name must not
	// keep a whole (perhaps megabytes large) event alive.
	strs := [...]struct {
		idx int
		dst *string
	}{
		{coreAEP, &e.aep}, {coreID, &e.id}, {coreType, &e.typ}, {coreSubject, &e.subject},
		{coreTime, &e.time}, {coreSource, &e.source}, {coreAgent, &e.agent},
		{coreSession, &e.session}, {coreRun, &e.run}, {coreStep, &e.step},
		{coreCause, &e.cause}, {coreTraceparent, &e.traceparent},
		{coreSeverity, &e.severity}, {coreCapture, &e.capture},
	}
	plain := func(v []byte) bool {
		return len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0
	}
	n := 0
	for _, s := range strs {
		if i := e.core[s.idx] - 1; i >= 0 && plain(ms[i].Value) {
			n += len(ms[i].Value) - 2
		}
	}
	var pack strings.Builder
	pack.Grow(n)
	for _, s := range strs {
		if i := e.core[s.idx] - 1; i >= 0 && plain(ms[i].Value) {
			pack.Write(ms[i].Value[1 : len(ms[i].Value)-1])
		}
	}
	packed := pack.String()
	for _, s := range strs {
		i := e.core[s.idx] - 1
		if i < 0 {
			continue
		}
		if v := ms[i].Value; plain(v) {
			*s.dst, packed = packed[:len(v)-2], packed[len(v)-2:]
			continue
		}
		str, err := rawString(ms[i].Value)
		if err != nil {
			return nil, &ValidationError{Attr: ms[i].Key, Rule: "must be a string"}
		}
		*s.dst = str
	}
	var err error
	if e.seq, e.hasSeq, err = e.rawInt(coreSeq, "seq"); err != nil {
		return nil, err
	}
	if e.epoch, e.hasEpoch, err = e.rawInt(coreEpoch, "epoch"); err != nil {
		return nil, err
	}
	return e, nil
}

// rawString decodes a JSON string, with a fast path for strings without escapes.
func rawString(v json.RawMessage) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}

func (e *Event) rawInt(idx int, name string) (int64, bool, error) {
	v, ok := e.coreMember(idx)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, true, &ValidationError{Attr: name, Rule: "must be an integer"}
	}
	return n, true, nil
}

// coreMember returns the last occurrence of a core member.
func (e *Event) coreMember(idx int) (json.RawMessage, bool) {
	if i := e.core[idx]; i > 0 {
		return e.members[i-1].Value, true
	}
	return nil, false
}

// Raw returns the event's bytes, one line of JSON. Callers must not modify it.
func (e *Event) Raw() []byte { return e.raw }

// Member returns the raw JSON of a top-level member and whether it is
// present (the last occurrence when a name repeats).
func (e *Event) Member(name string) (json.RawMessage, bool) {
	if c := coreIndex(name); c >= 0 {
		return e.coreMember(c)
	}
	for i := len(e.members) - 1; i >= 0; i-- {
		if e.members[i].Key == name {
			return e.members[i].Value, true
		}
	}
	return nil, false
}

// Members lists the names of the top-level members, each once, in
// document order.
func (e *Event) Members() []string {
	out := make([]string, 0, len(e.members))
	seen := make(map[string]bool, len(e.members))
	for _, m := range e.members {
		if !seen[m.Key] {
			seen[m.Key] = true
			out = append(out, m.Key)
		}
	}
	return out
}

// Has reports whether the top-level member name is present.
func (e *Event) Has(name string) bool { _, ok := e.Member(name); return ok }

func (e *Event) AEP() string         { return e.aep }
func (e *Event) ID() string          { return e.id }
func (e *Event) Type() string        { return e.typ }
func (e *Event) Subject() string     { return e.subject }
func (e *Event) Time() string        { return e.time }
func (e *Event) Source() string      { return e.source }
func (e *Event) Agent() string       { return e.agent }
func (e *Event) Session() string     { return e.session }
func (e *Event) Run() string         { return e.run }
func (e *Event) Step() string        { return e.step }
func (e *Event) Cause() string       { return e.cause }
func (e *Event) Traceparent() string { return e.traceparent }

// Seq returns the event's seq and whether it has one.
func (e *Event) Seq() (int64, bool) { return e.seq, e.hasSeq }

// Epoch returns the event's epoch, 0 when absent.
func (e *Event) Epoch() int64 { return e.epoch }

// Position returns (epoch, seq) and whether the event is sequenced.
func (e *Event) Position() (Position, bool) {
	return Position{Epoch: e.epoch, Seq: e.seq}, e.hasSeq
}

// Severity returns the severity with the default (info) applied. An unknown
// value reads as info; ValidateEnvelope reports it.
func (e *Event) Severity() Severity {
	s, err := ParseSeverity(e.severity)
	if err != nil {
		return SeverityInfo
	}
	return s
}

// Capture returns the capture level with the default (metadata) applied. An
// unknown value reads as metadata; ValidateEnvelope reports it.
func (e *Event) Capture() Capture {
	c, err := ParseCapture(e.capture)
	if err != nil {
		return CaptureMetadata
	}
	return c
}

// Data returns the raw data member, nil when absent.
func (e *Event) Data() json.RawMessage { d, _ := e.coreMember(coreData); return d }

// DecodeData unmarshals the data member into v (numbers as json.Number).
func (e *Event) DecodeData(v any) error {
	d, ok := e.coreMember(coreData)
	if !ok {
		d = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	return dec.Decode(v)
}

// SessionScoped reports whether the event belongs to a session (every type
// but agent.*).
func (e *Event) SessionScoped() bool { return !IsAgentScoped(e.typ) }

// Key is the dedupe key (source, id).
func (e *Event) Key() Key { return Key{Source: e.source, ID: e.id} }

// SessionKey is the per-session state key (source, session).
func (e *Event) SessionKey() SessionKey { return SessionKey{Source: e.source, Session: e.session} }

// Key identifies an event: ids are unique per source.
type Key struct{ Source, ID string }

// SessionKey identifies a session: session names are emitter-scoped.
type SessionKey struct{ Source, Session string }

// IsAgentScoped reports whether events of type t are agent-scoped (agent.*,
// also under a vendor prefix x.{vendor}.agent.*).
func IsAgentScoped(t string) bool {
	return strings.HasPrefix(categoryPath(t), "agent.")
}

// categoryPath strips a vendor prefix x.{vendor}. from a type.
func categoryPath(t string) string {
	if strings.HasPrefix(t, "x.") {
		rest := t[2:]
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			return rest[i+1:]
		}
	}
	return t
}

// MustOmitSeq reports whether events of type t must not carry seq (commands
// and attention.routed, NOTES §1), besides agent-scoped ones.
func MustOmitSeq(t string) bool {
	switch t {
	case "control.attention.respond", "control.cancel", "control.pause", "control.resume", "attention.routed":
		return true
	}
	return IsVendorCommand(t)
}

// IsCommand reports whether t is a control command routed to a target
// (control.attention.respond|cancel|pause|resume, x.{vendor}.control.*),
// as opposed to an ack (control.accepted|rejected).
func IsCommand(t string) bool {
	switch t {
	case "control.attention.respond", "control.cancel", "control.pause", "control.resume":
		return true
	}
	return IsVendorCommand(t)
}

// IsVendorCommand reports whether t is x.{vendor}.control.*.
func IsVendorCommand(t string) bool {
	return strings.HasPrefix(t, "x.") && strings.HasPrefix(categoryPath(t), "control.")
}

// Position is an event's place in its session: ordered by epoch, then seq.
type Position struct {
	Epoch int64 `json:"epoch"`
	Seq   int64 `json:"seq"`
}

// Compare returns -1, 0 or +1 as p is before, equal to or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.Epoch < q.Epoch:
		return -1
	case p.Epoch > q.Epoch:
		return 1
	case p.Seq < q.Seq:
		return -1
	case p.Seq > q.Seq:
		return 1
	}
	return 0
}

// Less reports whether p is before q.
func (p Position) Less(q Position) bool { return p.Compare(q) < 0 }

// FormatSSEID formats the SSE id {session}:{epoch}:{seq}.
func FormatSSEID(session string, p Position) string {
	return session + ":" + strconv.FormatInt(p.Epoch, 10) + ":" + strconv.FormatInt(p.Seq, 10)
}

// ParseSSEID parses {session}:{epoch}:{seq} from the right, since session
// names may contain ':'.
func ParseSSEID(s string) (session string, p Position, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", p, fmt.Errorf("%w: %q", ErrBadSSEID, s)
	}
	j := strings.LastIndexByte(s[:i], ':')
	if j < 0 {
		return "", p, fmt.Errorf("%w: %q", ErrBadSSEID, s)
	}
	ep, err1 := strconv.ParseInt(s[j+1:i], 10, 64)
	sq, err2 := strconv.ParseInt(s[i+1:], 10, 64)
	if err1 != nil || err2 != nil || ep < 0 || sq < 0 || j == 0 {
		return "", p, fmt.Errorf("%w: %q", ErrBadSSEID, s)
	}
	return s[:j], Position{Epoch: ep, Seq: sq}, nil
}

// Envelope is the attribute set an emitter fills to build an event; Build
// encodes it (absent optionals omitted, never null) and decodes the result.
type Envelope struct {
	AEP         string `json:"aep"`
	ID          string `json:"id"`
	Type        string `json:"type"`
	Subject     string `json:"subject,omitempty"`
	Time        string `json:"time"`
	Source      string `json:"source"`
	Agent       string `json:"agent"`
	Session     string `json:"session,omitempty"`
	Run         string `json:"run,omitempty"`
	Step        string `json:"step,omitempty"`
	Seq         *int64 `json:"seq,omitempty"`
	Epoch       *int64 `json:"epoch,omitempty"`
	Cause       string `json:"cause,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	Severity    string `json:"severity,omitempty"`
	Capture     string `json:"capture,omitempty"`
	Data        any    `json:"data,omitempty"`
}

// Build encodes env as an event. AEP defaults to Version.
func Build(env Envelope) (*Event, error) {
	if env.AEP == "" {
		env.AEP = Version
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("aep: encode event: %w", err)
	}
	return Decode(b)
}

// Int64 returns a pointer to n, for Envelope.Seq and Envelope.Epoch.
func Int64(n int64) *int64 { return &n }
