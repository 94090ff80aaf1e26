package view

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// The sort key is "%019d-%019d-%s" (deadline or none, asked, id), drawn
// without fmt; it orders as before for every kind of time.
func TestSortKeyFormat(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []inbox.Card{
		{ID: "a", ReceivedAt: at},
		{ID: "b", ReceivedAt: at, ExpiresAt: at.Add(time.Minute)},
		{ID: "c", AskedAt: at.Add(-time.Hour)},
		{ID: "d", ReceivedAt: time.Unix(-5, 0)}, // before 1970: clamped to 0
		{ID: "e"},
	} {
		dl := int64(1<<62 - 1)
		if !c.ExpiresAt.IsZero() {
			dl = c.ExpiresAt.UnixMilli()
		}
		asked := c.ReceivedAt
		if asked.IsZero() {
			asked = c.AskedAt
		}
		want := fmt.Sprintf("%019d-%019d-%s", clampMs(dl), clampMs(asked.UnixMilli()), c.ID)
		assert.Equal(t, want, sortKey(c, c.Verdict(time.Time{}, inbox.Viewer{})), string(c.ID))
	}
}

// BenchmarkNextPending is the next-card choice made after every post
// (redirectNext), over 1000 waiting requests in 100 sessions (100 under
// -short).
func BenchmarkNextPending(b *testing.B) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	heads := make([]inbox.Card, n)
	for i := range heads {
		id := "c" + strconv.Itoa(i)
		heads[i] = inbox.Card{ID: inbox.CardID(id), Key: inbox.RequestKey{Source: "aep://h/a", Session: "s" + strconv.Itoa(i%100), RequestID: id},
			Agent: "agent-" + strconv.Itoa(i%7), State: inbox.StatePending, ReceivedAt: now.Add(time.Duration(i) * time.Second),
			Capture: aep.CaptureFull, Request: aep.Request{Kind: aep.KindInput, Prompt: id}}
	}
	o := WindowOptions{Now: now}
	b.ReportAllocs()
	for b.Loop() {
		if NextPending(heads, "c0", o) == "" {
			b.Fatal("no next card")
		}
	}
}
