package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One question's own page (a row's link without the script, a
// notification's) counts the inbox in its header, not the one card it
// shows: a settled question's page said "0 pending" and "No questions
// waiting" while fifteen waited (newcomer run). It says how many wait and
// leads to them; the script's recount keeps that figure.
func TestACardsOwnPageCountsTheInbox(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	done := h.ask("s1", "r0", permissionReq())
	h.lifecycle("s1", "r0", "attention.answered", map[string]any{"answer": map[string]any{"option": "allow"}, "by": "op"})
	var open []string
	for _, id := range []string{"r1", "r2", "r3"} {
		open = append(open, string(h.ask("s1", id, nameForm())))
	}

	for _, tc := range []struct {
		name, card  string
		header, off string
		noteSays    string
	}{
		{"a settled question's page", string(done), "3 pending", "3", "3 pending in the inbox"},
		{"a waiting question's page", open[0], "3 pending", "2", "3 pending in the inbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.getPage(nil, "cards/"+tc.card+"/page")
			require.Equal(t, http.StatusOK, r.StatusCode)
			d := r.doc(t)
			assert.Equal(t, tc.header, strings.TrimSpace(d.Find(`[data-testid="pending-count"]`).Text()))
			assert.Equal(t, tc.off, d.Find(`#inbox`).AttrOr("data-off-page", ""), "what the script adds to the page's own count")
			assert.Zero(t, d.Find(`[data-testid="empty"]`).Length(), "no 'No questions waiting'")
			note := d.Find(`[data-testid="single-note"]`)
			assert.Contains(t, note.Text(), tc.noteSays)
			assert.Equal(t, "/", note.Find(`[data-testid="single-all"]`).AttrOr("href", ""), "leads to every question")
			assert.Equal(t, "(3) aepforms", d.Find("title").Text())
		})
	}
}

// A question's own page is about that one card: it offers no "Clear
// settled", which on it hid the only card the page shows (and, the hidden
// set being kept in the browser, hid it on the inbox too), leaving an
// empty page (newcomer run). The inbox keeps the tool.
func TestACardsOwnPageOffersNoClearSettled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	done := h.ask("s1", "r0", permissionReq())
	h.lifecycle("s1", "r0", "attention.answered", map[string]any{"answer": map[string]any{"option": "allow"}, "by": "op"})

	r := h.getPage(nil, "cards/"+string(done)+"/page")
	require.Equal(t, http.StatusOK, r.StatusCode)
	d := r.doc(t)
	require.Equal(t, 1, d.Find(`[data-testid="settled"] [data-testid="card"]`).Length(), "the settled card is on its page")
	assert.Zero(t, d.Find(`[data-testid="clear-settled"]`).Length(), "no Clear settled on one card's page")
	assert.Equal(t, 1, d.Find(`[data-testid="keys-button"]`).Length(), "the keyboard shortcuts stay")

	inbox := h.getPage(nil, "").doc(t)
	assert.Equal(t, 1, inbox.Find(`[data-testid="clear-settled"]`).Length(), "the inbox keeps Clear settled")
}
