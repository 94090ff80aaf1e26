package web

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// After no reply in time, the card's two ways on are buttons a person
// recognises as such: "Send the same answer again" looks like every
// primary Send (same colours, 44 px), "Answer differently" like a
// secondary button (a border, 44 px, no disclosure triangle); pressing
// the second opens the form under its warning, and the first sends the
// same command again.
func TestOwedAnswerControlsAreButtonsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	rs := &resendingSubmitter{fakeSubmitter: &fakeSubmitter{}}
	h := newHarness(t, func(s *setup) { s.deps.Submitter = rs })
	id := h.ask("s1", "r1", replicasForm())
	other := h.ask("s2", "r2", nameForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)
	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}, "f1": {"load"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "body %s", r.body)
	first := rs.all()[0].CommandID
	h.in.SettleSubmission(id, first, inbox.SubmissionSending, inbox.ReasonTimeout, "no ack")

	ctx := browse(t, h, "")
	card, send := "#"+domID(id), "#"+domID(other)+` button[data-testid="submit"]`
	again, toggle := card+` [data-testid="send-again"]`, card+` [data-testid="differently-toggle"]`
	style := func(sel, prop string) string {
		return eval[string](t, ctx, `getComputedStyle(document.querySelector('`+sel+`')).`+prop)
	}
	assert.Equal(t, style(send, "backgroundColor"), style(again, "backgroundColor"), "coloured like Send answer")
	assert.Equal(t, style(send, "color"), style(again, "color"))
	assert.GreaterOrEqual(t, eval[float64](t, ctx, `document.querySelector('`+again+`').getBoundingClientRect().height`), 44.0)
	assert.Equal(t, "2px", style(toggle, "borderTopWidth"), "Answer differently has a button's border")
	assert.Equal(t, "none", style(toggle, "listStyleType"), "and no disclosure triangle")
	assert.GreaterOrEqual(t, eval[float64](t, ctx, `document.querySelector('`+toggle+`').getBoundingClientRect().height`), 44.0)

	// The line says what is true now: with no roster (the relay away) the
	// answer goes again when the relay is back; once the relay and the
	// agent are there, it is not sent again by itself, and the line says
	// what the operator can do instead.
	stateText := `document.querySelector('` + card + ` [data-testid="state-text"]').textContent`
	assert.Contains(t, eval[string](t, ctx, stateText), "sent again when the relay is back")
	h.roster.mu.Lock()
	h.roster.up["s1"] = true
	h.roster.mu.Unlock()
	h.in.RefreshReach(h.roster.Reach)
	waitFor(t, ctx, stateText+`.includes('Send the same answer again, or answer differently below.')`, "the line to follow the relay back")
	assert.NotContains(t, eval[string](t, ctx, stateText), "when the relay")

	assert.False(t, eval[bool](t, ctx, `document.querySelector('`+card+` details[data-testid="answer-differently"]').open`))
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(toggle)))
	waitFor(t, ctx, `document.querySelector('`+card+` details[data-testid="answer-differently"]').open`, "the form under Answer differently")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('`+card+` [data-testid="differently-warning"]').offsetParent !== null`), "its warning shows")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('`+card+` details form[data-testid="answer-form"]').offsetParent !== null`), "and its form")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(again)))
	require.Eventually(t, func() bool { return len(rs.sentAgain()) == 1 }, 15*time.Second, 10*time.Millisecond, "sent again once")
	assert.Equal(t, []string{first}, rs.sentAgain(), "the same command")
	assert.Len(t, rs.all(), 1, "no new command")
}
