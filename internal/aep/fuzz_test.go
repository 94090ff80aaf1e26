package aep

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecode: decoding, validating and re-encoding any input never panics,
// Raw is the compacted input, and decoding Raw again yields the same bytes.
func FuzzDecode(f *testing.F) {
	for _, line := range goldenLines(f) {
		f.Add(line)
	}
	var inv invalidCorpus
	readFixture(f, "invalid/cases.json", &inv)
	for _, tc := range inv.Cases {
		if tc.Event != nil {
			f.Add([]byte(tc.Event))
		}
		for _, ev := range tc.Events {
			f.Add([]byte(ev))
		}
	}
	var dl downlevelCorpus
	readFixture(f, "downlevel/cases.json", &dl)
	for _, tc := range dl.Cases {
		f.Add([]byte(tc.Event))
	}
	f.Add([]byte(`{"session":null,"seq":-0,"data":[],"x":1.0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, b); err != nil {
			t.Fatalf("Decode accepted invalid JSON %q", b)
		}
		if !bytes.Equal(e.Raw(), want.Bytes()) {
			t.Fatalf("Raw = %q, want the compacted input %q", e.Raw(), want.Bytes())
		}
		// The fast scanner agrees with encoding/json on every member.
		var std map[string]json.RawMessage
		if err := json.Unmarshal(b, &std); err != nil {
			t.Fatalf("Decode accepted what encoding/json refuses: %v", err)
		}
		if len(std) != len(e.Members()) {
			t.Fatalf("members: got %v, encoding/json has %d", e.Members(), len(std))
		}
		for k, v := range std {
			got, ok := e.Member(k)
			var cv bytes.Buffer
			_ = json.Compact(&cv, v)
			if !ok || !bytes.Equal(got, cv.Bytes()) {
				t.Fatalf("member %q: got %q, encoding/json has %q", k, got, cv.Bytes())
			}
		}
		again, err := Decode(e.Raw())
		if err != nil || !bytes.Equal(again.Raw(), e.Raw()) {
			t.Fatalf("Raw does not round-trip: %v", err)
		}
		_ = ValidateEnvelope(e)
		for c := CaptureNone; c <= CaptureFull; c++ {
			d, err := Downlevel(e, c)
			if err != nil {
				continue
			}
			if d.Capture() > c && d.Capture() > e.Capture() {
				t.Fatalf("Downlevel to %s up-levelled to %s", c, d.Capture())
			}
		}
		if pos, ok := e.Position(); ok && pos.Epoch >= 0 && pos.Seq >= 0 {
			sess, p, err := ParseSSEID(FormatSSEID(e.Session(), pos))
			if e.Session() == "" {
				if err == nil {
					t.Fatalf("an SSE id without a session parsed")
				}
			} else if err != nil || sess != e.Session() || p != pos {
				t.Fatalf("SSE id does not round-trip for %q %v: got %q %v %v", e.Session(), pos, sess, p, err)
			}
		}
	})
}

// FuzzParseFilter: parsing any filter never panics, and a parsed filter
// matches without panicking.
func FuzzParseFilter(f *testing.F) {
	var c attrMatchCorpus
	readFixture(f, "attr-match/cases.json", &c)
	for _, m := range c.Match {
		f.Add([]byte(m.Filter), []byte(m.Event))
	}
	for _, m := range c.Invalid {
		f.Add([]byte(m.Filter), []byte(`{"type":"run.started"}`))
	}
	f.Fuzz(func(t *testing.T, filter, event []byte) {
		// The scanner-based member split agrees with encoding/json's.
		fast, errFast := objectMembers(filter)
		std, errStd := objectMembersStd(filter)
		if (errFast == nil) != (errStd == nil) || len(fast) != len(std) {
			t.Fatalf("objectMembers(%q): scanner %d members (%v), encoding/json %d (%v)", filter, len(fast), errFast, len(std), errStd)
		}
		for i := range fast {
			if fast[i].Key != std[i].Key || !bytes.Equal(fast[i].Value, std[i].Value) {
				t.Fatalf("member %d: scanner %q=%q, encoding/json %q=%q", i, fast[i].Key, fast[i].Value, std[i].Key, std[i].Value)
			}
		}
		flt, err := ParseFilter(filter)
		if err != nil {
			if flt != nil {
				t.Fatalf("error with a filter: %v", err)
			}
			return
		}
		e, err := Decode(event)
		if err != nil {
			return
		}
		_ = flt.Match(e)
	})
}
