package inbox

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// A flood of routes and foreign commands for one request keeps the card
// bounded: the first maxCardFacts of each are kept.
func TestCardFactsAreBounded(t *testing.T) {
	t.Parallel()
	in := New(Options{})
	in.Apply(ev(t, aep.Envelope{ID: "r1", Type: "attention.requested", Source: "aep://h/a", Agent: "a", Session: "s1", Seq: aep.Int64(0),
		Data: aep.Request{Kind: aep.KindInput, Prompt: "Name?"}}))
	for i := range 3 * maxCardFacts {
		n := strconv.Itoa(i)
		in.Apply(ev(t, aep.Envelope{ID: "route-" + n, Type: "attention.routed", Source: "aep://sink/" + n, Agent: "sink", Session: "s1", Subject: "r1", Data: aep.Routed{To: "x"}}))
		in.Apply(ev(t, aep.Envelope{ID: "cmd-" + n, Type: "control.attention.respond", Source: "aep://other/" + n, Agent: "other", Session: "s1", Subject: "r1", Cause: "r1",
			Data: aep.Respond{Answer: aep.Answer{Option: "allow"}}}))
	}
	cards := in.Cards(Query{})
	require.Len(t, cards, 1)
	assert.Len(t, cards[0].Routes, maxCardFacts)
	assert.Len(t, cards[0].Responders, maxCardFacts)
	assert.Equal(t, "aep://sink/0", cards[0].Routes[0].Source, "the first routes are the ones kept")
}

// After a restart the UI's earlier commands come back on the feed, unknown
// to the new inbox. One from any of OwnSources (the journal's source, and
// the host-derived one of earlier releases) that the journal does not hold
// is this UI's, though unknown (Own): "an answer was already sent from
// this UI", not another sender's; one from any other source, even
// another UI on the same host, is another sender's.
func TestOwnCommandsFromBeforeARestartAreNotForeign(t *testing.T) {
	t.Parallel()
	const (
		own    = "aep://host/ui/aepforms/01JOURNALINSTANCE"
		legacy = "aep://host/ui/aepforms"
	)
	for _, tc := range []struct {
		name   string
		source string
		own    bool
	}{
		{"our own source", own, true},
		{"our source before the journal", legacy, true},
		{"another sender", "aep://sink/telegram", false},
		{"another UI on the same host", "aep://host/ui/aepforms/01OTHERINSTANCE", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := New(Options{OwnSources: []string{own, legacy}})
			in.Apply(ev(t, aep.Envelope{ID: "r1", Type: "attention.requested", Source: "aep://h/a", Agent: "a", Session: "s1", Seq: aep.Int64(0),
				Data: aep.Request{Kind: aep.KindInput, Prompt: "Name?"}}))
			in.Apply(ev(t, aep.Envelope{ID: "cmd-1", Type: "control.attention.respond", Source: tc.source, Agent: "aepforms", Session: "s1", Subject: "r1", Cause: "r1",
				Data: aep.Respond{Answer: aep.Answer{Option: "allow"}}}))
			rs := in.Cards(Query{})[0].Responders
			require.Len(t, rs, 1)
			assert.Equal(t, tc.own, rs[0].Own)
		})
	}
}

// Events held for a request not seen yet are bounded by bytes as well as
// by count: twenty 200 KiB answers for unknown requests keep at most
// Options.MaxOrphanBytes, the newest kept, the oldest dropped.
func TestHeldEventsAreBoundedByBytes(t *testing.T) {
	t.Parallel()
	const bound = 1 << 20
	in := New(Options{MaxOrphanBytes: bound})
	big := strings.Repeat("x", 200<<10)
	for i := range 20 {
		n := strconv.Itoa(i)
		in.Apply(ev(t, aep.Envelope{ID: "ans-" + n, Type: "attention.answered", Source: "aep://h/a", Agent: "a", Session: "s1", Seq: aep.Int64(int64(100 + i)),
			Subject: "r" + n, Cause: "r" + n, Data: aep.Answered{Answer: aep.Answer{Text: &big}}}))
	}
	in.mu.Lock()
	held, bytes := in.orphans.len(), in.orphans.bytes
	in.mu.Unlock()
	assert.LessOrEqual(t, bytes, int64(bound), "bytes held")
	assert.Positive(t, held, "the newest are still held")
	assert.Less(t, held, 20, "the oldest were dropped")

	for _, n := range []string{"0", "19"} {
		in.Apply(ev(t, aep.Envelope{ID: "r" + n, Type: "attention.requested", Source: "aep://h/a", Agent: "a", Session: "s1", Seq: aep.Int64(int64(len(n))),
			Data: aep.Request{Kind: aep.KindInput, Prompt: "Name?"}}))
	}
	cards := map[string]Card{}
	for _, c := range in.Cards(Query{}) {
		cards[c.Key.RequestID] = c
	}
	assert.Equal(t, StateAnswered, cards["r19"].State, "the newest held answer applied when its request came")
	assert.Equal(t, StatePending, cards["r0"].State, "the oldest held answer was dropped")
	in.mu.Lock()
	assert.LessOrEqual(t, in.orphans.bytes, int64(bound))
	in.mu.Unlock()
}

// A page is chosen from Heads, which copy no request body: heads of 500
// requests with 8 KiB prompts and 200-choice fields allocate
// about one Card struct each, where Cards deep-copies every request.
// (Not parallel: it reads the process's allocation counter.)
func TestHeadsCopyNoRequestBody(t *testing.T) {
	in := New(Options{MaxPending: 2000, MaxBytes: 1 << 30})
	choices := make([]aep.Choice, 200)
	for i := range choices {
		choices[i] = aep.Choice{ID: "c" + strconv.Itoa(i), Label: "choice " + strconv.Itoa(i)}
	}
	// 8 KiB of two-byte characters after one byte: headPrompt falls
	// inside a character.
	prompt := "x" + strings.Repeat("é", 4<<10)
	const n = 500
	for i := range n {
		in.Apply(ev(t, aep.Envelope{ID: "r" + strconv.Itoa(i), Type: "attention.requested", Source: "aep://h/a", Agent: "a", Session: "s1", Seq: aep.Int64(int64(i)),
			Data: aep.Request{Kind: aep.KindForm, Prompt: prompt, Fields: []aep.FieldSpec{{ID: "f", Type: aep.FieldSelect, Label: "Pick", Choices: choices}}}}))
	}
	allocated := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	var heads, cards []Card
	hb := allocated(func() { heads = in.Heads(Query{}) })
	cb := allocated(func() { cards = in.Cards(Query{}) })
	require.Len(t, heads, n)
	require.Len(t, cards, n)
	perCard := uint64(unsafe.Sizeof(Card{})) + 64 // the result slice, and the sort's pointers
	assert.LessOrEqual(t, hb/n, perCard, "bytes allocated per head (Cards: %d per card)", cb/n)
	t.Logf("allocated per request: Heads %d B, Cards %d B", hb/n, cb/n)
	h := heads[0]
	assert.LessOrEqual(t, len(h.Request.Prompt), headPrompt)
	assert.True(t, utf8.ValidString(h.Request.Prompt), "cut at a character's start")
	assert.Nil(t, h.Request.Fields)
	assert.Equal(t, cards[0].ID, h.ID, "the same order as Cards")
}
