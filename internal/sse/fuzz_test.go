package sse

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzReader checks that the Reader never panics or loops on any input, and
// that whatever the Writer accepts reads back as written.
func FuzzReader(f *testing.F) {
	f.Add([]byte("data: YHOO\ndata: +2\n\n: ping\r\nid: 1\r\rretry: 10\n\n"), "s:0:1", "attention.requested", `{"a":1}`, uint16(1500))
	f.Add([]byte("\xEF\xBB\xBFdata\n\ndata:\x00\r\n"), "", "", "", uint16(0))
	f.Add([]byte(":replay-exhausted s 0:5\nid: a\x00\n"), "my s:1:2", "x", "a\r\nb\rc\n", uint16(0))
	f.Add([]byte("data: "+strings.Repeat("x", 300)+"\n\n"), "a\nb", "e\r", " lead", uint16(7))
	f.Fuzz(func(t *testing.T, raw []byte, id, event, data string, retryMs uint16) {
		// Arbitrary input: terminates without panic, messages within the limit.
		r := NewReader(strings.NewReader(string(raw)), 256)
		for range len(raw) + 2 {
			it, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, ErrEventTooLarge) {
				continue
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !it.IsComment && len(it.Data) > 256 {
				t.Fatalf("data of %d bytes passed a 256-byte limit", len(it.Data))
			}
		}

		// Round trip: Writer then Reader.
		m := Message{ID: id, Event: event, Data: data, Retry: time.Duration(retryMs) * time.Millisecond}
		rec := httptest.NewRecorder()
		w, err := NewWriter(rec, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Comment(data); err != nil {
			t.Fatal(err)
		}
		err = w.Event(m)
		if strings.ContainsAny(id, "\r\n\x00") || strings.ContainsAny(event, "\r\n") {
			if !errors.Is(err, ErrInvalidField) {
				t.Fatalf("id %q event %q: got %v, want ErrInvalidField", id, event, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(NewReader(strings.NewReader(rec.Body.String()), 0))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(normalize(data), "\n")
		if len(got) != len(lines)+1 {
			t.Fatalf("got %d items, want %d comments and 1 message: %+v", len(got), len(lines), got)
		}
		for i, l := range lines {
			if !got[i].IsComment || got[i].Comment != l {
				t.Fatalf("item %d: got %+v, want comment %q", i, got[i], l)
			}
		}
		want := Message{ID: id, Event: event, Data: normalize(data), Retry: m.Retry}
		if want.Event == "" {
			want.Event = "message"
		}
		if last := got[len(got)-1]; last.IsComment || last.Message != want {
			t.Fatalf("round trip: got %+v, want %+v", last, want)
		}
	})
}

// normalize turns CRLF and CR into LF, as the event-stream format does.
func normalize(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
