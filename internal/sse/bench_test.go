package sse

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// benchStream is 1000 AEP-shaped messages (id, event, one ~700-byte data
// line) with a ping every 100, as a relay sends them.
func benchStream(b *testing.B) ([]byte, int) {
	b.Helper()
	rec := httptest.NewRecorder()
	w, err := NewWriter(rec, 0)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	for i := range n {
		data := fmt.Sprintf(`{"aep":"0.1","id":"01JX9YB4RQ%016d","type":"attention.requested","time":"2026-07-03T10:15:05.000Z","source":"aep://host-a/agent/claude-code/session/s_8f2c","agent":"claude-code","session":"s_8f2c","seq":%d,"epoch":0,"capture":"redacted","data":{"kind":"form","prompt":"%s","fields":[{"id":"1","type":"string","label":"Name"}]}}`,
			i, i, strings.Repeat("p", 300))
		if err := w.Event(Message{ID: fmt.Sprintf("s_8f2c:0:%d", i), Event: "attention.requested", Data: data}); err != nil {
			b.Fatal(err)
		}
		if i%100 == 0 {
			if err := w.Ping(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return rec.Body.Bytes(), n
}

// BenchmarkReader measures the Reader on a relay-shaped stream.
func BenchmarkReader(b *testing.B) {
	stream, n := benchStream(b)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		r := NewReader(bytes.NewReader(stream), 0)
		for {
			it, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if !it.IsComment {
				events++
			}
		}
	}
	if events != n*b.N {
		b.Fatalf("got %d events, want %d", events, n*b.N)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkScannerFloor splits the same bytes into lines with
// bufio.Scanner and does nothing else: the floor the Reader is compared to.
func BenchmarkScannerFloor(b *testing.B) {
	stream, n := benchStream(b)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		sc := bufio.NewScanner(bytes.NewReader(stream))
		sc.Buffer(make([]byte, 64<<10), DefaultMaxEventBytes+FramingAllowance)
		lines := 0
		for sc.Scan() {
			lines++
		}
		if sc.Err() != nil || lines < 4*n {
			b.Fatalf("got %d lines, err %v", lines, sc.Err())
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}
