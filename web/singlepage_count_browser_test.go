package web

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
)

// One question's own page counts the other questions as the server
// does: an informational request (answered in the agent's own
// interface) arriving is not counted, nor subtracted when it settles.
// (A status change pushed after each step marks when the page has
// taken the step in.)
func TestACardsOwnPageDoesNotCountInformationalRequestsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	h := newHarness(t)
	mine := h.ask("s1", "r1", nameForm())
	h.ask("s3", "r3", permissionReq())
	ctx := browse(t, h, "cards/"+string(mine)+"/page")
	count := func() string {
		return strings.TrimSpace(eval[string](t, ctx, `document.getElementById('pending-count').textContent`))
	}
	assert.Equal(t, "2 pending", count())

	h.ask("s2", "r2", aep.Request{Kind: aep.KindPermission, Prompt: "Approve the pipeline in the CI dashboard.",
		Options: []aep.Option{{ID: "ok", Label: "Approve"}}, RespondVia: []string{aep.ViaOOB}})
	h.in.FeedState(false, errors.New("relay gone"))
	poll(t, ctx, `document.getElementById('banners').dataset.relay === 'lost'`, "the page took the informational request in")
	assert.Equal(t, "2 pending", count(), "the informational request is not counted")

	h.lifecycle("s2", "r2", "attention.resolved", map[string]any{"resolution": "dismissed"})
	h.in.FeedState(true, nil)
	poll(t, ctx, `document.getElementById('banners').dataset.relay === 'up'`, "the page took its settling in")
	assert.Equal(t, "2 pending", count(), "nor subtracted when it settles")
	assert.Equal(t, "2 pending", strings.TrimSpace(h.getPage(nil, "cards/"+string(mine)+"/page").doc(t).Find(`#pending-count`).Text()), "as the server counts")
}
