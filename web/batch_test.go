package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// deployPermission is a permission request; prompt varies, options do not.
func deployPermission(prompt string) aep.Request {
	return aep.Request{Kind: aep.KindPermission, Prompt: prompt, Options: []aep.Option{
		{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"},
	}}
}

// askPermissions asks n permission requests of one shape and returns their ids.
func askPermissions(h *harness, n int) []inbox.CardID {
	ids := make([]inbox.CardID, n)
	for i := range ids {
		ids[i] = h.ask("s1", "perm-"+strconv.Itoa(i), deployPermission("Deploy build "+strconv.Itoa(i)+"?"))
	}
	return ids
}

// batchOf finds the batch of the permission shape on the batch page: its
// form's shape and token.
func batchOf(t *testing.T, d *goquery.Document) (shape, token string) {
	t.Helper()
	f := d.Find(`[data-testid="batch"] form[data-testid="batch-form"]`)
	require.Equal(t, 1, f.Length(), "batch forms: got %d, want 1", f.Length())
	shape, _ = f.Find(`input[name="shape"]`).Attr("value")
	token, _ = f.Find(`input[name="token"]`).Attr("value")
	require.NotEmpty(t, shape)
	require.NotEmpty(t, token)
	return shape, token
}

// outcomes reads a batch result: card id -> its line, and whether sent.
func outcomes(d *goquery.Document) (lines map[string]string, sent map[string]bool) {
	lines, sent = map[string]string{}, map[string]bool{}
	d.Find(`[data-testid="batch-outcome"]`).Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("data-card")
		v, _ := s.Attr("data-sent")
		lines[id] = strings.TrimSpace(s.Find(`[data-testid="batch-outcome-line"]`).Text())
		sent[id] = v == "true"
	})
	return lines, sent
}

func batchPost(shape, token string, option string, ids ...inbox.CardID) url.Values {
	v := url.Values{"shape": {shape}, "token": {token}, "option": {option}}
	for _, id := range ids {
		v.Add("card", string(id))
	}
	return v
}

// The batch page lists the questions that share a shape, as checkboxes
// with one answer form; a question of another shape, or alone in its
// shape, is not offered.
func TestBatchesPageListsShapes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askPermissions(h, 3)
	h.ask("s1", "alone", nameForm())
	h.ask("s2", "other-labels", aep.Request{Kind: aep.KindPermission, Prompt: "Deploy?", Options: []aep.Option{
		{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}}})
	r := h.getPage(nil, "batches")
	require.Equal(t, http.StatusOK, r.StatusCode)
	d := r.doc(t)
	b := d.Find(`[data-testid="batch"]`)
	require.Equal(t, 1, b.Length(), "one shape has two or more questions")
	n, _ := b.Attr("data-count")
	assert.Equal(t, "3", n)
	assert.Contains(t, b.Find(".batch__title").Text(), "Allow once / Deny")
	var listed []string
	b.Find(`[data-testid="batch-check"]`).Each(func(_ int, s *goquery.Selection) {
		v, _ := s.Attr("value")
		listed = append(listed, v)
		_, checked := s.Attr("checked")
		assert.False(t, checked, "nothing is chosen for the operator")
	})
	assert.ElementsMatch(t, []string{string(ids[0]), string(ids[1]), string(ids[2])}, listed)
	assert.Equal(t, 2, b.Find(`button[data-testid="option"]`).Length(), "one answer form: the shape's options")
	assert.Contains(t, b.Find(`[data-testid="batch-item"]`).First().Text(), "Deploy build")
}

// One post answers every chosen question: one command each, each its own
// command id, each card showing its answer on its way; the same batch
// posted again sends nothing more.
func TestBatchAnswerSendsOneCommandPerCard(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askPermissions(h, 4)
	shape, token := batchOf(t, h.getPage(nil, "batches").doc(t))
	r := h.postForm(nil, "batch/answer", batchPost(shape, token, "0", ids[0], ids[1], ids[2]))
	require.Equal(t, http.StatusOK, r.StatusCode, "body %s", r.body)
	lines, sent := outcomes(r.doc(t))
	require.Len(t, lines, 3)
	for _, id := range ids[:3] {
		assert.True(t, sent[string(id)], "card %s", id)
		assert.Equal(t, "Sent, waiting for the agent", lines[string(id)], "as its card says")
	}
	h.sub.wait(5e9)
	subs := h.sub.all()
	require.Len(t, subs, 3, "one command per chosen question")
	cmds := map[string]bool{}
	for _, s := range subs {
		assert.Equal(t, "allow", s.Answer.Option)
		cmds[s.CommandID] = true
	}
	assert.Len(t, cmds, 3, "each question its own command id")
	for _, id := range ids[:3] {
		c, _ := h.in.Card(id)
		require.NotNil(t, c.Submission, "card %s", id)
		assert.Equal(t, inbox.SubmissionSending, c.Submission.State)
	}
	c, _ := h.in.Card(ids[3])
	assert.Nil(t, c.Submission, "the question not chosen is left alone")
	assert.Equal(t, int64(3), h.metrics.answers("sent"))

	again := h.postForm(nil, "batch/answer", batchPost(shape, token, "0", ids[0], ids[1], ids[2]))
	require.Equal(t, http.StatusOK, again.StatusCode)
	lines, sent = outcomes(again.doc(t))
	for _, id := range ids[:3] {
		assert.True(t, sent[string(id)])
		assert.Equal(t, "Already answered by this batch; nothing new was sent. Sent, waiting for the agent", lines[string(id)])
	}
	assert.Len(t, h.sub.all(), 3, "a resubmitted batch became more commands")

	reload := h.getPage(nil, "batch/answer")
	assert.Equal(t, http.StatusSeeOther, reload.StatusCode, "a reload of the result goes to the batch page")
	assert.Equal(t, "/batches", reload.Header.Get("Location"))
}

// A partial failure names the questions not sent and why: one already
// answered, one gone, one whose question changed shape; the rest are sent.
func TestBatchAnswerPartialFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askPermissions(h, 3)
	shape, token := batchOf(t, h.getPage(nil, "batches").doc(t))
	// After the page was drawn: one question answered in the agent's UI;
	// the post also names a question of another shape (its options are
	// not the batch's) and one the inbox does not hold.
	h.lifecycle("s1", "perm-1", "attention.answered", map[string]any{"answer": map[string]any{"option": "deny"}, "by": "someone"})
	other := h.ask("s2", "other", aep.Request{Kind: aep.KindPermission, Prompt: "Deploy?", Options: []aep.Option{{ID: "yes", Label: "Yes"}}})
	gone := inbox.CardID("no-such-card")
	r := h.postForm(nil, "batch/answer", batchPost(shape, token, "0", ids[0], ids[1], other, gone))
	require.Equal(t, http.StatusOK, r.StatusCode, "body %s", r.body)
	d := r.doc(t)
	lines, sent := outcomes(d)
	assert.True(t, sent[string(ids[0])])
	assert.False(t, sent[string(ids[1])])
	assert.Contains(t, lines[string(ids[1])], "Not sent")
	assert.Contains(t, lines[string(ids[1])], "answered")
	assert.False(t, sent[string(other)])
	assert.Contains(t, lines[string(other)], "asks something else")
	assert.False(t, sent[string(gone)])
	assert.Contains(t, lines[string(gone)], "no longer in the inbox")
	assert.Contains(t, d.Find(`[data-testid="batch-summary"]`).Text(), "not sent to 3 questions")
	first, _ := d.Find(`[data-testid="batch-outcome"]`).First().Attr("data-sent")
	assert.Equal(t, "false", first, "the failures are listed first")
	h.sub.wait(5e9)
	require.Len(t, h.sub.all(), 1)
	assert.Equal(t, ids[0], h.sub.all()[0].Card)
}

// Refused whole, nothing sent: nothing chosen, more than MaxBatch, an
// answer the operator must fix (kept, with the error summary).
func TestBatchAnswerRefusedWhole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askPermissions(h, 2)
	shape, token := batchOf(t, h.getPage(nil, "batches").doc(t))

	none := h.postForm(nil, "batch/answer", batchPost(shape, token, "0"))
	assert.Equal(t, http.StatusUnprocessableEntity, none.StatusCode)
	assert.Contains(t, none.doc(t).Find(`[data-testid="error-summary"]`).Text(), "Choose at least one question")

	many := make([]inbox.CardID, MaxBatch+1)
	for i := range many {
		many[i] = inbox.CardID("c" + strconv.Itoa(i))
	}
	many[0] = ids[0]
	over := h.postForm(nil, "batch/answer", batchPost(shape, token, "0", many...))
	assert.Equal(t, http.StatusRequestEntityTooLarge, over.StatusCode)
	assert.Contains(t, over.doc(t).Find(`[data-testid="error-summary"]`).Text(), "at most 100 questions")

	bad := h.postForm(nil, "batch/answer", batchPost(shape, token, "7", ids...))
	assert.Equal(t, http.StatusUnprocessableEntity, bad.StatusCode, "an option the question does not have")
	d := bad.doc(t)
	assert.Equal(t, 1, d.Find(`[data-testid="batch"] [data-testid="error-summary"]`).Length())
	checked := d.Find(`[data-testid="batch-check"][checked]`)
	assert.Equal(t, 2, checked.Length(), "the questions chosen stay chosen")

	assert.Empty(t, h.sub.all(), "a batch refused whole sent something")
	for _, id := range ids {
		c, _ := h.in.Card(id)
		assert.Nil(t, c.Submission)
	}
}

// A cross-site batch post is refused before anything is recorded, and a
// watch-only UI sends no batch.
func TestBatchAnswerCrossSiteAndWatchOnlyRefused(t *testing.T) {
	t.Parallel()
	t.Run("cross-site", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := askPermissions(h, 2)
		shape, token := batchOf(t, h.getPage(nil, "batches").doc(t))
		body := batchPost(shape, token, "0", ids...).Encode()
		r := h.do(nil, h.request(http.MethodPost, h.url("batch/answer"), strings.NewReader(body),
			"Content-Type", "application/x-www-form-urlencoded", "Origin", "https://evil.example"))
		assert.Equal(t, http.StatusForbidden, r.StatusCode)
		assert.Empty(t, h.sub.all())
		for _, id := range ids {
			c, _ := h.in.Card(id)
			assert.Nil(t, c.Submission, "a cross-site batch was recorded")
		}
	})
	t.Run("watch-only", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, watchOnly)
		ids := askPermissions(h, 2)
		r := h.postForm(nil, "batch/answer", batchPost(inbox.ShapeOf(deployPermission("x")).ID(), "tok", "0", ids...))
		assert.Equal(t, http.StatusConflict, r.StatusCode)
		assert.Contains(t, r.doc(t).Find(`[data-testid="error-summary"]`).Text(), "cannot send answers")
		for _, id := range ids {
			c, _ := h.in.Card(id)
			assert.Nil(t, c.Submission, "a watch-only UI recorded a batch answer")
		}
	})
}

// The inbox page carries the batch region (folded) and each selectable
// card its pick; the panel carries neither region nor a visible way to
// batch, a watch-only UI offers no batch, and ?region=1 is the region
// alone for the page script.
func TestBatchRegionOnThePage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askPermissions(h, 2)
	h.ask("s2", "alone", nameForm())
	d := h.getPage(nil, "").doc(t)
	region := d.Find(`[data-testid="batch-region"]`)
	require.Equal(t, 1, region.Length())
	_, hidden := region.Attr("hidden")
	assert.False(t, hidden)
	_, open := region.Find(`details[data-testid="batch-details"]`).Attr("open")
	assert.False(t, open, "folded until used")
	assert.Equal(t, "2 waiting", region.Find(`[data-testid="batch-count"]`).Text())
	assert.Equal(t, "/batches", region.Find(`[data-testid="batches-link"]`).AttrOr("href", ""))
	for _, id := range ids {
		pick := d.Find("#" + domID(id) + ` [data-testid="batch-pick-input"]`)
		require.Equal(t, 1, pick.Length(), "card %s", id)
		assert.Equal(t, string(id), pick.AttrOr("value", ""))
		assert.Empty(t, pick.AttrOr("name", ""), "a pick posts nothing with the card's own answer")
	}

	frag := h.getPage(nil, "batches?region=1")
	require.Equal(t, http.StatusOK, frag.StatusCode)
	f := frag.doc(t)
	assert.Equal(t, 1, f.Find(`[data-testid="batch-region"] [data-testid="batch"]`).Length())
	assert.Zero(t, f.Find("html body > header").Length(), "the region alone")
	narrowed := h.getPage(nil, "batches?region=1&session=s2").doc(t)
	assert.Zero(t, narrowed.Find(`[data-testid="batch"]`).Length(), "the page's filter narrows the region")

	panel := h.getPage(nil, "panel").doc(t)
	assert.Zero(t, panel.Find(`[data-testid="batch-region"]`).Length(), "no batch controls in the panel")
	assert.Zero(t, panel.Find(`[data-testid="batch-form"]`).Length())

	wo := newHarness(t, watchOnly)
	woIDs := askPermissions(wo, 2)
	wd := wo.getPage(nil, "").doc(t)
	_, hidden = wd.Find(`[data-testid="batch-region"]`).Attr("hidden")
	assert.True(t, hidden, "a watch-only UI offers no batch")
	assert.Zero(t, wd.Find("#"+domID(woIDs[0])+` [data-testid="batch-pick"]`).Length())
}

// The batch page takes the inbox's filter (agent, session, kind), names
// it with a way to clear it, and the filtered inbox links to it so; the
// push URL of a page with a batch region asks for the group counts.
func TestBatchesPageFollowsTheFilter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	askPermissions(h, 3) // session s1
	for i := range 2 {
		h.ask("s2", "p"+strconv.Itoa(i), deployPermission("Deploy in s2?"))
	}
	all := h.getPage(nil, "batches").doc(t)
	assert.Equal(t, "5", all.Find(`[data-testid="batch"]`).AttrOr("data-count", ""))
	assert.Zero(t, all.Find(`[data-testid="filter"]`).Length(), "no filter, no filter line")

	d := h.getPage(nil, "batches?session=s2").doc(t)
	b := d.Find(`[data-testid="batch"]`)
	require.Equal(t, 1, b.Length())
	assert.Equal(t, "2", b.AttrOr("data-count", ""), "only the filter's questions")
	assert.Equal(t, 2, b.Find(`[data-testid="batch-check"]`).Length())
	assert.Equal(t, "s2", d.Find(`[data-testid="filter-term"][data-name="session"] bdi`).Text())
	assert.Equal(t, "/batches", d.Find(`[data-testid="clear-filter"]`).AttrOr("href", ""))

	inboxPage := h.getPage(nil, "?session=s2").doc(t)
	region := inboxPage.Find(`[data-testid="batch-region"]`)
	assert.Equal(t, "/batches?session=s2", region.Find(`[data-testid="batches-link"]`).AttrOr("href", ""))
	assert.Equal(t, "2 waiting", region.Find(`[data-testid="batch-count"]`).Text())
	assert.Contains(t, inboxPage.Find("body").AttrOr("data-push", ""), "batches=1", "the page's region counts come by push")
	assert.NotContains(t, h.getPage(nil, "panel").doc(t).Find("body").AttrOr("data-push", ""), "batches=1", "the panel has no region")
}

// The region's counts group their thousands like the header's.
func TestBatchRegionCountGroupsThousands(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "1\u00a0201 questions in 1 group", view.BatchRegionCount([]int{1201}))
	assert.Equal(t, "1\u00a0201 waiting", view.BatchWaiting(1201))
	assert.Equal(t, "5 questions in 2 groups", view.BatchRegionCount([]int{2, 3}))
}

// A post from the filtered batch page keeps its filter: refused, the page
// comes back narrowed; sent, "Answer more at once" goes back to it.
func TestBatchPostKeepsTheFilter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	askPermissions(h, 3) // session s1
	var s2 []inbox.CardID
	for i := range 2 {
		s2 = append(s2, h.ask("s2", "p"+strconv.Itoa(i), deployPermission("Deploy in s2?")))
	}
	shape, token := batchOf(t, h.getPage(nil, "batches?session=s2").doc(t))
	from := []string{"Referer", h.url("batches?session=s2")}

	refused := h.postForm(nil, "batch/answer", batchPost(shape, token, "0"), from...)
	assert.Equal(t, http.StatusUnprocessableEntity, refused.StatusCode)
	d := refused.doc(t)
	assert.Equal(t, "s2", d.Find(`[data-testid="filter-term"][data-name="session"] bdi`).Text())
	assert.Equal(t, "2", d.Find(`[data-testid="batch"]`).AttrOr("data-count", ""), "still only the filter's questions")

	sent := h.postForm(nil, "batch/answer", batchPost(shape, token, "0", s2...), from...)
	require.Equal(t, http.StatusOK, sent.StatusCode)
	sd := sent.doc(t)
	assert.Equal(t, "/batches?session=s2", sd.Find(`[data-testid="batch-back"]`).AttrOr("href", ""))
	assert.Equal(t, "/?session=s2", sd.Find(`[data-testid="batch-inbox"]`).AttrOr("href", ""), "back to the questions keeps the filter")
}

// A batch post over the body limit is refused as a single answer's is:
// 413 with the "too large" page, nothing sent.
func TestBatchAnswerOverMaxBodyIs413(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.MaxBody = 2048 }))
	ids := askPermissions(h, 2)
	shape, token := batchOf(t, h.getPage(nil, "batches").doc(t))
	post := batchPost(shape, token, "0", ids...)
	post.Set("pad", strings.Repeat("x", 4096))
	r := h.postForm(nil, "batch/answer", post)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.StatusCode, "status: got %d, want 413", r.StatusCode)
	assert.Equal(t, "Your answer is too large to send", strings.TrimSpace(r.doc(t).Find(`[data-testid="gone"] h1`).Text()))
	assert.Empty(t, h.sub.all())
	for _, id := range ids {
		c, _ := h.in.Card(id)
		assert.Nil(t, c.Submission)
	}
}

// A hand-made batch post naming questions the batch page never offers
// (their labels withheld at capture metadata: an answer by label cannot
// mean the same to each) sends nothing to them and names each with why.
func TestBatchAnswerRefusesCardsThePageNeverOffers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := make([]inbox.CardID, 2)
	for i := range ids {
		rid := "meta-" + strconv.Itoa(i)
		h.emit(aep.Envelope{ID: rid, Type: "attention.requested", Session: "s1", Run: "run_1", Capture: "metadata",
			Data: deployPermission("Deploy build " + strconv.Itoa(i) + "?")})
		ids[i] = cardID("s1", rid)
	}
	c, ok := h.in.Card(ids[0])
	require.True(t, ok)
	c1, _ := h.in.Card(ids[1])
	require.Equal(t, c.Shape, c1.Shape, "the two placeholder cards share a shape")
	assert.Zero(t, h.getPage(nil, "batches").doc(t).Find(`[data-testid="batch"]`).Length(), "the page offers no batch of them")

	r := h.postForm(nil, "batch/answer", batchPost(c.Shape.ID(), "tok-hand", "0", ids...))
	assert.Equal(t, http.StatusConflict, r.StatusCode, "nothing sent: got %d", r.StatusCode)
	lines, sent := outcomes(r.doc(t))
	for _, id := range ids {
		assert.False(t, sent[string(id)], "a placeholder card was answered in a batch")
		assert.Contains(t, lines[string(id)], "labels were withheld", "the outcome says why")
		got, _ := h.in.Card(id)
		assert.Nil(t, got.Submission, "a placeholder card's batch answer was recorded")
	}
	assert.Empty(t, h.sub.all())
}

// A hand-made batch post naming an owed answer (replaces=, which only a
// card's "Answer differently" form sends, under its warning that the
// first answer may still act) replaces nothing: it is refused whole,
// precisely, nothing is sent, and the owed answer stays the card's.
func TestBatchAnswerMayNotReplaceAnOwedAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askPermissions(h, 3)
	shape, token := batchOf(t, h.getPage(nil, "batches").doc(t))
	r := h.postForm(nil, "batch/answer", batchPost(shape, token, "0", ids[0]))
	require.Equal(t, http.StatusOK, r.StatusCode, "body %s", r.body)
	h.sub.wait(5e9)
	require.Len(t, h.sub.all(), 1)
	owed := h.sub.all()[0].CommandID
	h.in.SettleSubmission(ids[0], owed, inbox.SubmissionSending, inbox.ReasonTimeout, "no ack")
	c, _ := h.in.Card(ids[0])
	require.True(t, c.Submission.Owed())

	_, token = batchOf(t, h.getPage(nil, "batches").doc(t))
	post := batchPost(shape, token, "1", ids[0], ids[1])
	post.Set("replaces", owed)
	r = h.postForm(nil, "batch/answer", post)
	assert.Equal(t, http.StatusBadRequest, r.StatusCode, "body %s", r.body)
	d := r.doc(t)
	assert.Contains(t, d.Find(`[data-testid="error-summary"]`).Text(), "cannot replace an answer already sent",
		"the refusal says why: %s", d.Find("main").Text())
	assert.Len(t, h.sub.all(), 1, "nothing sent")
	c, _ = h.in.Card(ids[0])
	assert.Equal(t, owed, c.Submission.CommandID, "the owed answer is still the card's")
	assert.True(t, c.Submission.Owed())
	c1, _ := h.in.Card(ids[1])
	assert.Nil(t, c1.Submission, "nothing sent to the other question either")
}

// A watch-only UI's batch page offers no batch: which questions a batch
// may take is their verdicts', for this UI.
func TestWatchOnlyBatchesPageOffersNone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, watchOnly)
	askPermissions(h, 3)
	r := h.getPage(nil, "batches")
	require.Equal(t, http.StatusOK, r.StatusCode)
	d := r.doc(t)
	assert.Equal(t, 0, d.Find(`form[data-testid="batch-form"]`).Length(), "no batch form")
	assert.Equal(t, 0, d.Find(`[data-testid="batch"]`).Length(), "no batch")
}
