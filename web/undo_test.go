package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/store"
)

// Without the script: after a send the page that comes back shows, in
// the undo bar, what was sent and "Undo" as a form button, and the card
// says its answer is about to be sent; nothing is sent meanwhile. Undo
// posts, the page comes back with the card open again and the operator's
// answer in its form, the bar gone; nothing was sent. A second Undo is
// refused with the page saying why.
func TestUndoWithoutScript(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
	id := h.ask("s1", "r1", nameForm())
	c := h.client()
	action, token := answerForm(t, h.getPage(c, "").doc(t), id)
	res := h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {"billing-api"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	assert.Empty(t, h.sub.all(), "held for the undo window: nothing sent")

	d := h.getPage(c, "").doc(t)
	card := d.Find("#" + domID(id))
	assert.Equal(t, "held", card.AttrOr("data-state", ""))
	assert.Equal(t, 1, card.Find(`form[data-testid="card-undo"] button[data-testid="undo"]`).Length(), "the card offers Undo")
	bar := d.Find(`[data-testid="undo-bar"] form[data-testid="bar-undo"]`)
	require.Equal(t, 1, bar.Length(), "the undo bar shows the answer")
	assert.Contains(t, bar.Text(), "billing-api", "what was sent")
	assert.Contains(t, bar.Text(), "What should the service be called?", "to which question")
	assert.Contains(t, bar.Find(`[data-testid="undo-left"]`).Text(), "1 h", "the time left")

	res = h.postForm(c, h.relative(bar.AttrOr("action", "")), formValues(bar))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	assert.Equal(t, "/#"+domID(id), res.Header.Get("Location"))
	d = h.getPage(c, "").doc(t)
	card = d.Find("#" + domID(id))
	assert.Equal(t, "undone", card.AttrOr("data-state", ""))
	assert.Contains(t, card.Find(`[data-testid="state-text"]`).Text(), "nothing was sent")
	assert.Equal(t, "billing-api", card.Find(`form[data-testid="answer-form"] input[name="f0"]`).AttrOr("value", ""), "the answer kept in the form")
	assert.Equal(t, 1, card.Find(`form[data-testid="answer-form"] button[type="submit"]:not([disabled])`).Length(), "the card takes an answer again")
	assert.Equal(t, 0, d.Find(`[data-testid="undo-bar"]`).Length(), "nothing left to undo")
	assert.Empty(t, h.sub.all(), "nothing was sent")

	again := h.postForm(c, h.relative(bar.AttrOr("action", "")), formValues(bar))
	assert.Equal(t, http.StatusConflict, again.StatusCode)
	assert.Contains(t, again.doc(t).Find("#"+domID(id)+` [data-testid="error-summary"]`).Text(), "Not undone", again.body)
}

// Once the window passes the command leaves, once, and the card offers
// Undo no more.
func TestUndoWindowPassingSendsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.UndoWindow = 20 * time.Millisecond }))
	id := h.ask("s1", "r1", nameForm())
	c := h.client()
	action, token := answerForm(t, h.getPage(c, "").doc(t), id)
	res := h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {"billing-api"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	h.sub.wait(10 * time.Second)
	subs := h.sub.all()
	require.Len(t, subs, 1, "sent once the window passed")
	card := h.getPage(c, "").doc(t).Find("#" + domID(id))
	assert.Equal(t, "sending", card.AttrOr("data-state", ""))
	assert.Equal(t, 0, card.Find(`[data-testid="card-undo"]`).Length())
	c2, _ := h.in.Card(id)
	assert.Equal(t, inbox.LineSending, c2.Verdict(h.clk.Now(), inbox.Viewer{}).Line)
}

// formValues are a form's hidden inputs, as the browser posts them.
func formValues(f *goquery.Selection) url.Values {
	v := url.Values{}
	f.Find(`input[type="hidden"]`).Each(func(_ int, i *goquery.Selection) {
		v.Add(i.AttrOr("name", ""), i.AttrOr("value", ""))
	})
	return v
}

// A batch waits the same window: its result page offers one Undo of all
// its answers, which takes the batch back whole; nothing is sent.
func TestBatchUndoTakesBackTheBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
	ids := askPermissions(h, 4)
	shape, token := batchOf(t, h.getPage(nil, "batches").doc(t))
	r := h.postForm(nil, "batch/answer", batchPost(shape, token, "0", ids[0], ids[1]))
	require.Equal(t, http.StatusOK, r.StatusCode, "body %s", r.body)
	undo := r.doc(t).Find(`form[data-testid="batch-undo"]`)
	require.Equal(t, 1, undo.Length(), "the batch's result offers Undo")
	assert.Equal(t, token, undo.Find(`input[name="undo-batch"]`).AttrOr("value", ""), "of the batch, both its answers")
	assert.Contains(t, undo.Find(`button`).Text(), "Undo all 2")
	assert.Empty(t, h.sub.all(), "held: nothing sent")
	_, other := batchOf(t, h.getPage(nil, "batches").doc(t))
	require.NotEqual(t, token, other)
	r = h.postForm(nil, "batch/answer", batchPost(shape, other, "0", ids[2], ids[3]))
	require.Equal(t, http.StatusOK, r.StatusCode, "another batch: %s", r.body)

	res := h.postForm(nil, h.relative(undo.AttrOr("action", "")), formValues(undo))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	for _, id := range ids[:2] {
		c, _ := h.in.Card(id)
		vd := c.Verdict(h.clk.Now(), inbox.Viewer{})
		assert.Equal(t, inbox.LineUndone, vd.Line, "card %s", id)
		assert.True(t, vd.Answerable, "card %s takes an answer again", id)
	}
	c, _ := h.in.Card(ids[2])
	assert.True(t, c.Verdict(h.clk.Now(), inbox.Viewer{}).Undo, "another batch's answer is still held")
	assert.Empty(t, h.sub.all(), "nothing was sent")
}

// Undo takes back only the signed-in operator's own answer: another
// operator who learns its command (History lists each answer's command
// as it is journaled) and posts Undo by hand is refused, and the answer
// stays held, to leave when its window passes; its sender can still
// take it back.
func TestUndoIsOnlyTheSenders(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
	id := h.ask("s1", "r1", nameForm())
	ann, bo := h.client(), h.client()
	h.signIn(ann, "ann")
	h.signIn(bo, "bo")
	action, token := answerForm(t, h.getPage(ann, "").doc(t), id)
	res := h.postForm(ann, h.relative(action), url.Values{"token": {token}, "f0": {"billing-api"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	c, ok := h.in.Card(id)
	require.True(t, ok)
	require.NotNil(t, c.Submission)
	cmd := c.Submission.CommandID

	assert.Equal(t, 0, h.getPage(bo, "").doc(t).Find(`[data-testid="undo-bar"]`).Length(), "bo is offered no Undo of ann's answer")
	res = h.postForm(bo, "undo", url.Values{form.NameUndo: {string(id) + " " + cmd}})
	assert.Equal(t, http.StatusConflict, res.StatusCode, "bo's hand-made Undo of ann's answer: %s", res.body)
	c, _ = h.in.Card(id)
	require.NotNil(t, c.Submission)
	assert.Equal(t, inbox.SubmissionSending, c.Submission.State, "ann's answer is not withdrawn")
	assert.True(t, c.Verdict(h.clk.Now(), inbox.Viewer{}).Undo, "still held, to leave when its window passes")

	res = h.postForm(ann, "undo", url.Values{form.NameUndo: {string(id) + " " + cmd}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "ann takes her own answer back: %s", res.body)
	c, _ = h.in.Card(id)
	assert.Equal(t, inbox.SubmissionWithdrawn, c.Submission.State)
	assert.Empty(t, h.sub.all(), "nothing was sent")
}

// An Undo that reaches another instance (a replica that does not hold
// the answer) takes nothing back and says so plainly (409), and the
// instance that holds it still does.
func TestUndoOnAnotherInstanceSaysItCouldNot(t *testing.T) {
	t.Parallel()
	a := newHarness(t, withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
	b := newHarness(t, withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
	id := a.ask("s1", "r1", nameForm())
	b.ask("s1", "r1", nameForm())
	action, token := answerForm(t, a.getPage(nil, "").doc(t), id)
	res := a.postForm(nil, a.relative(action), url.Values{"token": {token}, "f0": {"billing-api"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	bar := a.getPage(nil, "").doc(t).Find(`[data-testid="undo-bar"] form[data-testid="bar-undo"]`)
	require.Equal(t, 1, bar.Length())

	other := b.postForm(nil, "undo", formValues(bar))
	assert.Equal(t, http.StatusConflict, other.StatusCode)
	assert.Contains(t, other.doc(t).Find(`[data-testid="error-summary"]`).Text(), "another aepforms instance holds it")
	c, _ := a.in.Card(id)
	assert.True(t, c.Verdict(a.clk.Now(), inbox.Viewer{}).Undo, "still held where it was sent")

	res = a.postForm(nil, "undo", formValues(bar))
	assert.Equal(t, http.StatusSeeOther, res.StatusCode, "taken back where it is held")
	assert.Empty(t, a.sub.all())
	assert.Empty(t, b.sub.all())
}

// A notification's answer waits the same window: nothing is sent, and
// the signed-in operator's inbox offers its Undo, which takes it back.
func TestNotificationAnswerWaitsTheUndoWindow(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withPush(j), withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
	c := h.client()
	ck := h.signIn(c, "alice")
	id := h.ask("s1", "r1", permissionReq())
	r := h.do(c, h.request(http.MethodPost, h.url("cards/"+string(id)+"/notification-answer"),
		strings.NewReader(url.Values{"token": {"ok:" + string(id) + ":" + hashSessionID(ck.Value)}, "option": {"1"}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL))
	require.Equal(t, http.StatusOK, r.StatusCode, r.body)
	assert.Empty(t, h.sub.all(), "held for the undo window")
	bar := h.getPage(c, "").doc(t).Find(`[data-testid="undo-bar"] form[data-testid="bar-undo"]`)
	require.Equal(t, 1, bar.Length(), "alice's inbox offers its Undo")
	assert.Contains(t, bar.Text(), "Deny")
	require.Equal(t, http.StatusSeeOther, h.postForm(c, "undo", formValues(bar)).StatusCode)
	assert.Empty(t, h.sub.all(), "taken back: nothing sent")
}

// Undo takes back the whole send: a rule the operator made with the
// answer ("Answer like this from now on…") is deleted with it, so it
// answers nothing the operator just took back; the Rules page says who
// deleted it.
func TestUndoTakesBackTheRuleMadeWithTheAnswer(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret), withConfig(func(c *Config) { c.UndoWindow = time.Hour }))
	c := rh.client()
	rh.signIn(c, "alice")
	first := rh.ask("s1", "r1", permissionReq())
	r := rh.ruleFromCard(c, first, nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1, "the rule is made with the answer")

	bar := rh.getPage(c, "").doc(t).Find(`[data-testid="undo-bar"] form[data-testid="bar-undo"]`)
	require.Equal(t, 1, bar.Length(), "the undo bar shows the answer")
	res := rh.postForm(c, rh.relative(bar.AttrOr("action", "")), formValues(bar))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)

	list, err = rh.j.Rules(context.Background())
	require.NoError(t, err)
	for _, rule := range list {
		assert.NotEqual(t, store.RuleActive, rule.State, "the rule made with the undone answer answers nothing: %+v", rule)
	}
	next := rh.ask("s1", "r2", permissionReq())
	rh.observe(next)
	card, _ := rh.in.Card(next)
	assert.Nil(t, card.Submission, "the next matching question waits for an operator")
	assert.Empty(t, rh.sub.all(), "nothing was sent")
}

// An "Answer all" of more questions than a form may carry values (net/http
// reads at most 10 000 per form) is taken back whole by its Undo: the
// Undo names the batch, not each of its answers, so its post is read and
// every answer is taken back; nothing is sent.
func TestUndoOfABatchOverTheFormLimit(t *testing.T) {
	t.Parallel()
	const n = 10_001
	h := newHarness(t, withConfig(func(c *Config) { c.UndoWindow, c.ResponseTimeout = time.Hour, 5*time.Minute }),
		withInbox(func(o *inbox.Options) { o.MaxPending = 2 * n }))
	ids := askPermissions(h, n)
	post := batchPost(inbox.ShapeOf(deployPermission("x")).ID(), "tok-all", "0")
	post.Set("all", h.clk.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
	post.Set("confirm", strconv.Itoa(n))
	// Each post answers or takes back 10 001 questions: minutes under
	// -race on a loaded machine, not the harness's usual 10 s.
	c := h.client()
	c.Timeout = 5 * time.Minute
	r := h.postForm(c, "batch/answer", post)
	require.Equal(t, http.StatusOK, r.StatusCode, "answer all")
	undo := r.doc(t).Find(`form[data-testid="batch-undo"]`)
	require.Equal(t, 1, undo.Length(), "the batch's result offers Undo")
	assert.Contains(t, undo.Find(`button`).Text(), "Undo all 10001")
	values := formValues(undo)
	assert.Less(t, len(values[form.NameUndo])+len(values["undo-batch"]), 100, "the Undo's form names the batch, not each answer")

	res := h.postForm(c, h.relative(undo.AttrOr("action", "")), values)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "%.300s", res.body)
	undone := 0
	for _, id := range ids {
		c, _ := h.in.Card(id)
		if vd := c.Verdict(h.clk.Now(), inbox.Viewer{}); vd.Line == inbox.LineUndone && vd.Answerable {
			undone++
		}
	}
	assert.Equal(t, n, undone, "questions taken back and open again")
	assert.Empty(t, h.sub.all(), "nothing was sent")
}
