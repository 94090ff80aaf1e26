package view

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// A row's agent text is made safe as a card's is: controls replaced,
// bidi controls shown as markers, in the question and the group label.
func TestRowTextIsSafe(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := inbox.Card{ID: "crow", Key: inbox.RequestKey{Source: "aep://h/a", Session: "s\u202e1", RequestID: "r"}, Agent: "ev\u202eil\x07",
		State: inbox.StatePending, ReceivedAt: now, Capture: aep.CaptureFull, Version: 3,
		Request: aep.Request{Kind: aep.KindInput, Prompt: "\n  Delete \u202etxt.exe\x1b[31m?\nsecond line"}}
	r := Row(c, Options{Now: now, BasePath: "/forms/"})
	assert.Equal(t, "Delete ⟨U+202E⟩txt.exe\ufffd[31m?", r.Gist, "the first line, marked")
	assert.Contains(t, r.GroupLabel, "⟨U+202E⟩")
	assert.NotContains(t, r.GroupLabel, "\x07")
	assert.Equal(t, "/forms/cards/crow/page", r.CardURL)
	assert.Equal(t, "/forms/cards/crow", r.FragmentURL)
	assert.True(t, r.Open)
	assert.True(t, strings.HasSuffix(r.SortKey, "-crow"))
}

// After an answer, the page lands on the next request waiting for one, in
// the page's order (groups by their most urgent request, then each
// group's by urgency), wrapping round; never on one with an answer on its
// way or over the control budget; and on a later page (after=), among
// that page's own requests only.
func TestNextPending(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	head := func(id, session string, deadline time.Duration) inbox.Card {
		return inbox.Card{ID: inbox.CardID(id), Key: inbox.RequestKey{Source: "aep://h/a", Session: session, RequestID: id},
			Agent: "a", State: inbox.StatePending, ReceivedAt: now, ExpiresAt: now.Add(deadline), Capture: aep.CaptureFull,
			Request: aep.Request{Kind: aep.KindInput, Prompt: id}}
	}
	// Group s1 holds the most urgent (a1), so the page reads a1 a2 | b1 b2.
	a1, a2 := head("a1", "s1", time.Minute), head("a2", "s1", 9*time.Minute)
	b1, b2 := head("b1", "s2", 2*time.Minute), head("b2", "s2", 3*time.Minute)
	heads := []inbox.Card{b2, a2, b1, a1}
	o := WindowOptions{Now: now}
	assert.Equal(t, inbox.CardID("a2"), NextPending(heads, "a1", o), "the next in its group first")
	assert.Equal(t, inbox.CardID("b1"), NextPending(heads, "a2", o), "then the next group")
	assert.Equal(t, inbox.CardID("a1"), NextPending(heads, "b2", o), "wrapping round")

	inFlight := a2
	inFlight.Submission = &inbox.Submission{State: inbox.SubmissionSending}
	over := b1
	over.OverBudget = true
	assert.Equal(t, inbox.CardID("b2"), NextPending([]inbox.Card{a1, inFlight, over, b2}, "a1", o), "past one on its way and one too big to answer")
	assert.Equal(t, inbox.CardID(""), NextPending([]inbox.Card{a1, inFlight}, "a1", o), "none other waits")

	// A later page starts after the cursor: a1's page is not b2's.
	later := WindowOptions{Now: now, After: sortKey(b1, b1.Verdict(now, inbox.Viewer{}))}
	assert.Equal(t, inbox.CardID("a2"), NextPending(heads, "b2", later), "the later page's own requests (b2, a2), wrapping round")
}
