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
