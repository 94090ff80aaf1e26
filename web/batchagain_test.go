package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// An "Answer all" confirmation posted again (a double click, the
// browser's back and a resubmit) is the same post: it says each question
// was already answered by this same batch and sends nothing new, not a
// 422 that reads as a mistake of the operator's ("Choose at least one
// question").
func TestAnswerAllConfirmationPostedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askPermissions(h, 3)
	post := batchPost(inbox.ShapeOf(deployPermission("x")).ID(), "tok-all", "0")
	post.Set("all", h.clk.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
	asked := h.postForm(nil, "batch/answer", post)
	require.Equal(t, http.StatusOK, asked.StatusCode, "%s", asked.body)
	confirm := asked.doc(t).Find(`form[data-testid="batch-confirm-form"]`)
	require.Equal(t, 1, confirm.Length(), "asked first")
	action, values := h.relative(confirm.AttrOr("action", "")), formValues(confirm)
	send := confirm.Find(`button[data-testid="batch-confirm-send"]`)
	values.Set(send.AttrOr("name", ""), send.AttrOr("value", ""))

	first := h.postForm(nil, action, values)
	require.Equal(t, http.StatusOK, first.StatusCode, "the confirmation: %s", first.body)
	lines, sent := outcomes(first.doc(t))
	require.Len(t, lines, len(ids))
	require.Len(t, h.sub.all(), len(ids), "each question answered once")

	again := h.postForm(nil, action, values)
	require.Equal(t, http.StatusOK, again.StatusCode, "the same confirmation again: %s", again.body)
	d := again.doc(t)
	assert.NotContains(t, d.Text(), "Choose at least one question")
	lines, sent = outcomes(d)
	for _, id := range ids {
		assert.True(t, sent[string(id)], "question %s: answered", id)
		assert.True(t, strings.HasPrefix(lines[string(id)], "Already answered by this batch; nothing new was sent."), "question %s: %q", id, lines[string(id)])
	}
	assert.Len(t, h.sub.all(), len(ids), "nothing new was sent")
}
