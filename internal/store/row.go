package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Row is one submission as every backend stores it: times in unix
// nanoseconds (0 for none), structured parts as JSON text, the capture
// level by its wire name. Both backends write Columns and read Row back
// with Submission, so they store and read alike.
type Row struct {
	Fields, Form, Answer   string // JSON
	Options, Recorded      string // JSON, "" for none
	Capture                string // wire name, "" before the level was kept
	Posted, Settled, RecAt int64  // unix nanoseconds
	Card, State            string
}

// Columns encodes s's structured parts for storing.
func Columns(s inbox.Submission) (fields, form, answer, options string, err error) {
	f, err := json.Marshal(s.Fields)
	if err != nil {
		return "", "", "", "", fmt.Errorf("journal: fields: %w", err)
	}
	fo, err := json.Marshal(map[string][]string(s.Form))
	if err != nil {
		return "", "", "", "", fmt.Errorf("journal: form: %w", err)
	}
	a, err := json.Marshal(s.Answer)
	if err != nil {
		return "", "", "", "", fmt.Errorf("journal: answer: %w", err)
	}
	if len(s.Options) > 0 {
		o, err := json.Marshal(s.Options)
		if err != nil {
			return "", "", "", "", fmt.Errorf("journal: options: %w", err)
		}
		options = string(o)
	}
	return string(f), string(fo), string(a), options, nil
}

// recordedJSON is how the recorded column keeps an inbox.Recorded: the
// capture level by its wire name, so the column reads without this code.
type recordedJSON struct {
	Answer    aep.Answer `json:"answer"`
	By        string     `json:"by,omitempty"`
	Via       string     `json:"via,omitempty"`
	Capture   string     `json:"capture"`
	EventID   string     `json:"event_id,omitempty"`
	Time      string     `json:"time,omitempty"`
	Cause     string     `json:"cause,omitempty"`
	Malformed string     `json:"malformed,omitempty"`
}

// EncodeRecorded is the recorded column of r.
func EncodeRecorded(r inbox.Recorded) (string, error) {
	raw, err := json.Marshal(recordedJSON{
		Answer: r.Answer, By: r.By, Via: r.Via, Capture: r.Capture.String(), EventID: r.EventID,
		Time: r.Time, Cause: r.Cause, Malformed: r.Malformed,
	})
	if err != nil {
		return "", fmt.Errorf("journal: recorded: %w", err)
	}
	return string(raw), nil
}

func decodeRecorded(raw string) (inbox.Recorded, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // values as aep decodes them
	var rj recordedJSON
	if err := dec.Decode(&rj); err != nil {
		return inbox.Recorded{}, err
	}
	c, err := aep.ParseCapture(rj.Capture)
	if err != nil {
		return inbox.Recorded{}, err
	}
	return inbox.Recorded{Answer: rj.Answer, By: rj.By, Via: rj.Via, Capture: c, EventID: rj.EventID,
		Time: rj.Time, Cause: rj.Cause, Malformed: rj.Malformed}, nil
}

// Submission decodes the row: s holds the plain columns as scanned
// (command id, token, key, agent, question, operator, reason, detail,
// command bytes, kind), the rest comes from r.
func (r Row) Submission(s inbox.Submission) (inbox.Submission, error) {
	if r.Options != "" {
		if err := json.Unmarshal([]byte(r.Options), &s.Options); err != nil {
			return s, fmt.Errorf("options of %s: %w", s.CommandID, err)
		}
	}
	s.Capture = aep.CaptureFull // before the level was kept, the journal held the full answer
	if r.Capture != "" {
		c, err := aep.ParseCapture(r.Capture)
		if err != nil {
			return s, fmt.Errorf("capture of %s: %w", s.CommandID, err)
		}
		s.Capture = c
	}
	if r.Recorded != "" {
		rec, err := decodeRecorded(r.Recorded)
		if err != nil {
			return s, fmt.Errorf("recorded of %s: %w", s.CommandID, err)
		}
		s.Recorded, s.RecordedAt = &rec, FromNanos(r.RecAt)
	}
	s.Card, s.State = inbox.CardID(r.Card), inbox.SubmissionState(r.State)
	if len(s.Command) == 0 {
		s.Command = nil
	}
	s.At, s.SettledAt = FromNanos(r.Posted), FromNanos(r.Settled)
	if err := json.Unmarshal([]byte(r.Fields), &s.Fields); err != nil {
		return s, fmt.Errorf("fields of %s: %w", s.CommandID, err)
	}
	var f map[string][]string
	if err := json.Unmarshal([]byte(r.Form), &f); err != nil {
		return s, fmt.Errorf("form of %s: %w", s.CommandID, err)
	}
	if f != nil {
		s.Form = url.Values(f)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(r.Answer)))
	dec.UseNumber() // values decode as aep decodes them: numbers as json.Number
	var a aep.Answer
	if err := dec.Decode(&a); err != nil {
		return s, fmt.Errorf("answer of %s: %w", s.CommandID, err)
	}
	s.Answer = a
	return s, nil
}

// Nanos is t in unix nanoseconds, 0 for the zero time.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos is the time of unix nanoseconds n, the zero time for 0.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
