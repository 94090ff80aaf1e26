package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// replicasForm is a form with a bounded number and an optional string.
func replicasForm() aep.Request {
	return aep.Request{Kind: aep.KindForm, Prompt: "How many replicas?", Fields: []aep.FieldSpec{
		{ID: "replicas", Type: aep.FieldNumber, Label: "Replicas", Required: true, Min: fptr(1), Max: fptr(12)},
		{ID: "why", Type: aep.FieldString, Label: "Why"},
	}}
}

func TestAnswerPostRedirectsAndSubmitsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", replicasForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)
	assert.Equal(t, "/cards/"+string(id)+"/answer", action)

	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}, "f1": {"load"}, "f9": {"ignored"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "status: got %d, want 303; body %s", r.StatusCode, r.body)
	assert.Equal(t, "/#"+domID(id), r.Header.Get("Location"), "post/redirect/get back to the card")

	subs := h.sub.all()
	require.Len(t, subs, 1, "submissions: got %d, want exactly 1", len(subs))
	s := subs[0]
	assert.Equal(t, id, s.Card)
	assert.Equal(t, testSource, s.Key.Source)
	assert.Equal(t, "s1", s.Key.Session)
	assert.Equal(t, "r1", s.Key.RequestID)
	assert.NotEmpty(t, s.CommandID)
	assert.Equal(t, aep.Values{"replicas": 3, "why": "load"}, normalise(s.Answer.Values), "values sent")
	assert.Len(t, s.Fields, 2, "the request's field specs travel with the submission")

	card, _ := h.in.Card(id)
	require.NotNil(t, card.Submission, "the post is recorded on the card")
	assert.Equal(t, s.CommandID, card.Submission.CommandID)
	assert.Equal(t, inbox.SubmissionSending, card.Submission.State)

	// The page after the redirect shows the answer on its way, with no
	// second submit offered.
	page := h.getPage(nil, "").doc(t)
	c := page.Find("#" + domID(id))
	st, _ := c.Attr("data-state")
	assert.Equal(t, "sending", st, "card state after the post")
	assert.Zero(t, c.Find(`form[data-testid="answer-form"]`).Length(), "a card with an answer in flight offers no submit")

	// A resubmit of the same form (double click, browser resubmit): the
	// same redirect, no second command.
	again := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"4"}})
	assert.Equal(t, http.StatusSeeOther, again.StatusCode, "resubmit: got %d, want 303", again.StatusCode)
	assert.Len(t, h.sub.all(), 1, "a resubmitted form token became a second command")

	// Another tab's form (a new token) while the first is in flight: refused.
	other := h.postForm(nil, h.relative(action), url.Values{"token": {"another-tab"}, "f0": {"5"}})
	assert.Equal(t, http.StatusConflict, other.StatusCode, "second answer in flight: got %d, want 409", other.StatusCode)
	assert.Len(t, h.sub.all(), 1)
	assert.Contains(t, refusalText(other.doc(t)), "already on its way")
	assert.Equal(t, int64(1), h.metrics.answers("sent"))
}

// heldSubmitter blocks each Submit until the test releases it.
type heldSubmitter struct {
	entered chan inbox.Submission
	release chan struct{}
}

func (h *heldSubmitter) Submit(_ context.Context, s inbox.Submission) error {
	h.entered <- s
	<-h.release
	return nil
}

// The 303 leaves before the command is queued: once the answer is
// journaled the browser is told so, whatever then happens to the send
// (a crash there is resumed from the journal). The crash tests' "after
// the 303, before the send" window is this order.
func TestAnswerPostRedirectsBeforeTheCommandIsQueued(t *testing.T) {
	t.Parallel()
	held := &heldSubmitter{entered: make(chan inbox.Submission, 1), release: make(chan struct{})}
	h := newHarness(t, func(s *setup) { s.deps.Submitter = held })
	id := h.ask("s1", "r1", replicasForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)

	req := h.request(http.MethodPost, h.url(h.relative(action)), strings.NewReader(url.Values{"token": {token}, "f0": {"3"}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL)
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		got <- result{resp, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		close(held.release)
		t.Fatal("no response while the command waits to be queued: the 303 waits for the send")
	}
	require.NoError(t, r.err)
	defer r.resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, r.resp.StatusCode)
	s := <-held.entered
	assert.Equal(t, id, s.Card, "the command is queued after the 303")
	close(held.release)
	_, _ = io.Copy(io.Discard, r.resp.Body) // the response ends once the handler returns
	assert.Equal(t, int64(1), h.metrics.answers("sent"))
}

// holdingFake queues each submission held (SubmitHeld) and blocks in
// release until the test lets it go. When wrote is set, the fake notes
// at each release whether the post's response had begun (atLet).
type holdingFake struct {
	heldSubmitter
	held    chan inbox.Submission
	dropped chan inbox.Submission // let(false); nil: not watched
	wrote   *atomic.Bool
	atLet   chan bool
}

func (h *holdingFake) SubmitHeld(_ context.Context, s inbox.Submission) (func(bool), error) {
	h.held <- s
	var once sync.Once
	return func(send bool) {
		once.Do(func() {
			if send {
				if h.wrote != nil {
					h.atLet <- h.wrote.Load()
				}
				h.entered <- s // let go
				<-h.release
			} else if h.dropped != nil {
				h.dropped <- s
			}
		})
	}, nil
}

// headerWatch notes in wrote when a response's status line is written.
type headerWatch struct {
	http.ResponseWriter
	wrote *atomic.Bool
}

func (w headerWatch) WriteHeader(code int) {
	w.wrote.Store(true)
	w.ResponseWriter.WriteHeader(code)
}

func (w headerWatch) Write(b []byte) (int, error) {
	w.wrote.Store(true)
	return w.ResponseWriter.Write(b)
}

func (w headerWatch) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// With a respond path that can hold a command (respond.Client), the
// answer is queued held while the journal writes it, so its ack
// subscription is made meanwhile, and let go as soon as the journal has
// kept it: beside the 303, not after it. The command does not wait for
// the response (a crash between the two leaves the browser to retry the
// post, which finds the kept answer by its form token:
// TestServeProcessCrashesAndJournal's "sent-no-303" window), and the
// 303 does not wait for the command's send.
func TestAnswerPostReleasesItsCommandOnceKept(t *testing.T) {
	t.Parallel()
	var wrote atomic.Bool
	fake := &holdingFake{
		heldSubmitter: heldSubmitter{entered: make(chan inbox.Submission, 1), release: make(chan struct{})},
		held:          make(chan inbox.Submission, 1),
		wrote:         &wrote,
		atLet:         make(chan bool, 1),
	}
	h := newHarness(t, func(s *setup) {
		s.deps.Submitter = fake
		s.wrap = func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w = headerWatch{ResponseWriter: w, wrote: &wrote}
				}
				next.ServeHTTP(w, r)
			})
		}
	})
	id := h.ask("s1", "r1", replicasForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)

	req := h.request(http.MethodPost, h.url(h.relative(action)), strings.NewReader(url.Values{"token": {token}, "f0": {"3"}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL)
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		got <- result{resp, err}
	}()
	select {
	case s := <-fake.entered:
		assert.Equal(t, id, s.Card, "the command let go")
	case <-time.After(5 * time.Second):
		close(fake.release)
		t.Fatal("the command was not let go while its post's response was pending")
	}
	select {
	case s := <-fake.held:
		assert.Equal(t, id, s.Card, "queued held while the journal wrote it")
	default:
		t.Fatal("let go without being queued held first")
	}
	assert.False(t, <-fake.atLet, "the command waited for the post's response to begin")
	card, ok := h.in.Card(id)
	require.True(t, ok)
	require.NotNil(t, card.Submission, "let go only once the answer is kept on its card")
	assert.Equal(t, inbox.SubmissionSending, card.Submission.State)
	close(fake.release)

	var r result
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no response after the command was let go")
	}
	require.NoError(t, r.err)
	defer r.resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, r.resp.StatusCode)
	_, _ = io.Copy(io.Discard, r.resp.Body)
	assert.Equal(t, int64(1), h.metrics.answers("sent"))
}

// refusingJournal keeps nothing: every Record fails (a full disk).
type refusingJournal struct{ *inbox.MemoryJournal }

func (refusingJournal) Record(inbox.Submission) error { return errors.New("disk full") }

// An answer the journal did not keep is refused (503) and its command,
// held since the journal write began, is dropped: never sent.
func TestAnswerNotKeptDropsItsHeldCommand(t *testing.T) {
	t.Parallel()
	fake := &holdingFake{
		heldSubmitter: heldSubmitter{entered: make(chan inbox.Submission, 1), release: make(chan struct{})},
		held:          make(chan inbox.Submission, 1),
		dropped:       make(chan inbox.Submission, 1),
	}
	close(fake.release)
	h := newHarness(t, func(s *setup) { s.deps.Submitter = fake },
		withInbox(func(o *inbox.Options) { o.Journal = refusingJournal{inbox.NewMemoryJournal()} }))
	id := h.ask("s1", "r1", replicasForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)

	resp := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}})
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	s := <-fake.held
	assert.Equal(t, id, s.Card, "held while the journal was asked")
	select {
	case d := <-fake.dropped:
		assert.Equal(t, s.CommandID, d.CommandID, "the held command is dropped")
	case <-time.After(5 * time.Second):
		t.Fatal("the held command was not dropped")
	}
	select {
	case e := <-fake.entered:
		t.Fatalf("a command the journal did not keep was let go: %+v", e)
	default:
	}
	assert.Zero(t, h.metrics.answers("sent"))
}

// normalise turns json.Number values into float64 or int for comparison.
func normalise(v aep.Values) aep.Values {
	out := aep.Values{}
	for k, x := range v {
		if n, ok := x.(interface{ Int64() (int64, error) }); ok {
			if i, err := n.Int64(); err == nil {
				out[k] = int(i)
				continue
			}
		}
		out[k] = x
	}
	return out
}

func TestAnswerPostWithProblemsKeepsInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", replicasForm())
	other := h.ask("s2", "r2", nameForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)

	for _, bad := range []string{"12abc", "0", "13", "1e400", "NaN", ""} {
		t.Run("replicas="+bad, func(t *testing.T) {
			r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {bad}, "f1": {"because\nof load"}})
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "status: got %d, want 422", r.StatusCode)
			d := r.doc(t)
			card := d.Find("#" + domID(id))
			require.Equal(t, 1, card.Length())
			summary := card.Find(`[data-testid="error-summary"]`)
			require.Equal(t, 1, summary.Length(), "the refused card has an error summary")
			href, _ := summary.Find(`a[data-testid="error-link"]`).Attr("href")
			assert.Equal(t, "#"+string(id)+"-f0", href, "the summary links to the field")
			sid, _ := summary.Attr("id")
			focus, _ := d.Find("body").Attr("data-focus")
			assert.Equal(t, sid, focus, "the error summary takes focus on load")

			in := card.Find("#" + string(id) + "-f0")
			v, _ := in.Attr("value")
			assert.Equal(t, bad, v, "the operator's input is kept exactly")
			inv, _ := in.Attr("aria-invalid")
			assert.Equal(t, "true", inv)
			desc, _ := in.Attr("aria-describedby")
			assert.Contains(t, strings.Fields(desc), string(id)+"-f0-error", "the message is tied to the field")
			assert.Equal(t, "because\nof load", card.Find("#"+string(id)+"-f1").Text(), "the other field's input is kept too")

			// The rest of the page is still there, without the error.
			assert.Equal(t, 1, d.Find("#"+domID(other)).Length(), "the other cards are on the refused page")
			assert.Zero(t, d.Find("#"+domID(other)+` [data-testid="error-summary"]`).Length())
		})
	}
	assert.Empty(t, h.sub.all(), "a refused answer was submitted")
	card, _ := h.in.Card(id)
	assert.Nil(t, card.Submission, "a refused answer was recorded")
}

func TestRefusedPostKeepsTheView(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", replicasForm())
	h.ask("s2", "r2", nameForm())
	page := h.getPage(nil, "panel?session=s1&theme=dark")
	action, token := answerForm(t, page.doc(t), id)

	ref := h.url("panel?session=s1&theme=dark")
	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"x"}}, "Referer", ref)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	d := r.doc(t)
	assert.Equal(t, "true", attr(d.Find("body"), "data-panel"), "a refused post from the panel re-renders the panel")
	assert.Equal(t, "dark", attr(d.Find("html"), "data-theme"), "with its theme")
	assert.Equal(t, 1, d.Find(`article[data-testid="card"]`).Length(), "and its filter: got %d cards", d.Find(`article[data-testid="card"]`).Length())

	ok := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"2"}}, "Referer", ref)
	require.Equal(t, http.StatusSeeOther, ok.StatusCode)
	loc, err := url.Parse(ok.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "/panel", loc.Path, "a panel post returns to the panel")
	assert.Equal(t, "s1", loc.Query().Get("session"))
	assert.Equal(t, "dark", loc.Query().Get("theme"))
	assert.Equal(t, domID(id), loc.Fragment)

	// A foreign Referer's query is not carried into the redirect (which
	// lands on the one card still waiting, s2's).
	id2 := h.ask("s3", "r3", nameForm())
	_, token2 := answerForm(t, h.getPage(nil, "").doc(t), id2)
	r = h.postForm(nil, "cards/"+string(id2)+"/answer", url.Values{"token": {token2}, "f0": {"x"}}, "Referer", "https://evil.example/panel?agent=evil")
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	assert.Equal(t, "/#"+domID(cardID("s2", "r2")), r.Header.Get("Location"))
}

// Without the script, an answer sent lands the operator on the next card
// waiting for an answer (page order, wrapping round), not on the card
// just sent; with none left, on the card sent.
func TestAnswerPostLandsOnTheNextPendingCard(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, s := range []string{"s1", "s2", "s3"} {
		h.ask(s, "r-"+s, nameForm())
	}
	var order []inbox.CardID
	h.getPage(nil, "").doc(t).Find(`#open article[data-testid="card"]`).Each(func(_ int, c *goquery.Selection) {
		order = append(order, inbox.CardID(attr(c, "data-card")))
	})
	require.Len(t, order, 3)
	send := func(id inbox.CardID) string {
		t.Helper()
		_, token := answerForm(t, h.getPage(nil, "").doc(t), id)
		r := h.postForm(nil, "cards/"+string(id)+"/answer", url.Values{"token": {token}, "f0": {"x"}})
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "body %s", r.body)
		return r.Header.Get("Location")
	}
	assert.Equal(t, "/#"+domID(order[2]), send(order[1]), "the next card down")
	assert.Equal(t, "/#"+domID(order[0]), send(order[2]), "the last card wraps round to the first still waiting")
	assert.Equal(t, "/#"+domID(order[0]), send(order[0]), "none left: the card sent")
}

// The page script posts with a header asking for the card alone: the
// server answers with the card's fragment, the same error summary and
// field messages as the page for a refused post (422, 409), the card as
// it now is for one sent (no redirect). The origin check still applies.
func TestAnswerPostByScriptAnswersWithTheCard(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", replicasForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)
	frag := func(r response) *goquery.Selection {
		t.Helper()
		d, err := goquery.NewDocumentFromReader(strings.NewReader(r.body))
		require.NoError(t, err)
		assert.Zero(t, d.Find("html > head > *, header.top").Length(), "a fragment, not a page")
		c := d.Find(`article[data-testid="card"]`)
		require.Equal(t, 1, c.Length(), "one card: %s", r.body)
		assert.Equal(t, domID(id), attr(c, "id"))
		assert.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		return c
	}

	bad := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"40"}, "f1": {"kept"}}, HeaderFragment, "card")
	require.Equal(t, http.StatusUnprocessableEntity, bad.StatusCode)
	c := frag(bad)
	assert.Contains(t, c.Find(`[data-testid="error-summary"]`).Text(), "There is a problem")
	assert.Equal(t, 1, c.Find(`[data-testid="field-error"]`).Length())
	assert.Equal(t, "40", attr(c.Find(`input[name="f0"]`), "value"), "the operator's input stays")
	assert.Equal(t, "true", attr(c.Find(`input[name="f0"]`), "aria-invalid"))
	assert.NotEmpty(t, attr(c.Find(`input[name="token"]`), "value"), "a token to send again with")
	assert.Empty(t, h.sub.all(), "nothing sent")

	// A cross-site post is refused before anything else, header or not.
	evil := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}}, HeaderFragment, "card", "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, evil.StatusCode)
	assert.Empty(t, h.sub.all(), "nothing sent")

	ok := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}}, HeaderFragment, "card")
	require.Equal(t, http.StatusOK, ok.StatusCode, "no redirect: body %s", ok.body)
	c = frag(ok)
	assert.Equal(t, "sending", attr(c, "data-state"))
	assert.Equal(t, "true", attr(c, "data-drop-draft"), "the server holds the answer: the draft may go")
	require.Len(t, h.sub.all(), 1)

	again := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"3"}}, HeaderFragment, "card")
	require.Equal(t, http.StatusOK, again.StatusCode)
	frag(again)
	assert.Len(t, h.sub.all(), 1, "the same form twice: one command")

	id2 := h.ask("s2", "r2", nameForm())
	_, token2 := answerForm(t, h.getPage(nil, "").doc(t), id2)
	h.lifecycle("s2", "r2", "attention.timeout", map[string]any{})
	closed := h.postForm(nil, "cards/"+string(id2)+"/answer", url.Values{"token": {token2}, "f0": {"x"}}, HeaderFragment, "card")
	require.Equal(t, http.StatusConflict, closed.StatusCode)
	d, err := goquery.NewDocumentFromReader(strings.NewReader(closed.body))
	require.NoError(t, err)
	assert.Contains(t, d.Find(`[data-testid="error-summary"]`).Text(), "Nothing was sent")
}

// refusalText is what a refused post's page says about it: the card's
// error summary, or the page banners when the card shows no form.
func refusalText(d *goquery.Document) string {
	return d.Find(`[data-testid="error-summary"]`).Text() + " " + d.Find(`[data-testid="notice"]`).Text()
}

func attr(s interface{ Attr(string) (string, bool) }, name string) string {
	v, _ := s.Attr(name)
	return v
}

func TestAnswerPostToClosedCardIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	f := seedEveryKind(h)
	cases := []struct {
		name string
		id   inbox.CardID
		want string
	}{
		{"answered and resolved", f.Answered, "already answered by alice"},
		{"answered elsewhere", f.Elsewhere, "already answered by bob"},
		{"timed out", f.TimedOut, "timed out"},
		{"expired", f.Expired, "expired"},
		{"session ended", f.Ended, "session ended"},
		{"informational", f.Informational, "agent's own interface"},
		{"malformed", f.Malformed, "malformed"},
		{"in flight", f.Sending, "already on its way"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.postForm(nil, "cards/"+string(tc.id)+"/answer", url.Values{"token": {"fresh-" + tc.name}, "f0": {"0"}, "text": {"x"}, "option": {"0"}})
			require.Equal(t, http.StatusConflict, r.StatusCode, "status: got %d, want 409", r.StatusCode)
			assert.Contains(t, strings.ToLower(refusalText(r.doc(t))), tc.want)
		})
	}
	assert.Empty(t, h.sub.all(), "a closed card's answer was submitted")
}

func TestAnswerPostJustAfterExpiryIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	req := nameForm()
	req.ExpiresAt = testNow.Add(time.Minute).Format(time.RFC3339)
	id := h.ask("s1", "r1", req)
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)

	h.clk.Add(time.Minute) // no Sweep: the post itself must see the deadline
	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"x"}})
	assert.Equal(t, http.StatusConflict, r.StatusCode, "status: got %d, want 409", r.StatusCode)
	assert.Empty(t, h.sub.all())
}

func TestWatchOnlyOffersNoSubmit(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]option{
		"no submitter":   watchOnly,
		"no relay token": withConfig(func(c *Config) { c.Viewer = inbox.Viewer{WatchOnly: true} }),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, opt)
			f := seedEveryKind(h)
			for _, path := range []string{"", "panel"} {
				d := h.getPage(nil, path).doc(t)
				assert.Equal(t, 1, d.Find(`[data-testid="watch-only"]`).Length(), "/%s says watch-only", path)
				assert.Zero(t, d.Find("form[method=post]").Length(), "/%s: a watch-only page has no answer form", path)
				assert.Zero(t, d.Find(`button[type="submit"], input[type="submit"]`).Length(), "/%s: no submit button", path)
			}
			r := h.postForm(nil, "cards/"+string(f.Form)+"/answer", url.Values{"token": {"t"}, "f0": {"x"}})
			assert.Equal(t, http.StatusConflict, r.StatusCode, "watch-only post: got %d, want 409", r.StatusCode)
			assert.Contains(t, refusalText(r.doc(t)), "no control token")
			card, _ := h.in.Card(f.Form)
			assert.Nil(t, card.Submission, "a watch-only post was recorded")
			assert.Empty(t, h.sub.all())
		})
	}
}

func TestAnswerPostOverMaxBodyIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.MaxBody = 2048 }))
	id := h.ask("s1", "r1", nameForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)

	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {strings.Repeat("x", 4096)}})
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.StatusCode, "status: got %d, want 413", r.StatusCode)
	assert.Empty(t, h.sub.all())
	// Without the script: a page in the UI's style, with the way back.
	d := r.doc(t)
	assert.Equal(t, "Your answer is too large to send", strings.TrimSpace(d.Find(`[data-testid="gone"] h1`).Text()))
	assert.Contains(t, d.Find(`[data-testid="gone-message"]`).Text(), "Back button keeps what you typed")
	assert.Equal(t, 1, d.Find(`a[data-testid="gone-inbox"]`).Length(), "the inbox link")

	r = h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {strings.Repeat("x", 1024)}})
	assert.Equal(t, http.StatusSeeOther, r.StatusCode, "a post under the limit: got %d, want 303", r.StatusCode)
	assert.Len(t, h.sub.all(), 1)
}

func TestAnswerPostEdgeCases(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", nameForm())

	r := h.postForm(nil, "cards/"+string(id)+"/answer", url.Values{"f0": {"x"}})
	assert.Equal(t, http.StatusBadRequest, r.StatusCode, "no form token: got %d, want 400", r.StatusCode)
	assert.Contains(t, refusalText(r.doc(t)), "missing its token")

	r = h.postForm(nil, "cards/cnosuchcard/answer", url.Values{"token": {"t"}, "f0": {"x"}})
	assert.Equal(t, http.StatusNotFound, r.StatusCode, "unknown card: got %d, want 404", r.StatusCode)

	r = h.do(nil, h.request(http.MethodPost, h.url("cards/"+string(id)+"/answer"), strings.NewReader("token=%zz&f0=x"),
		"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL))
	assert.Equal(t, http.StatusBadRequest, r.StatusCode, "an unreadable body: got %d, want 400", r.StatusCode)
	assert.Empty(t, h.sub.all())
}

func TestAnswerNotQueuedIsShownAndKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.sub.setErr(errSubmit)
	id := h.ask("s1", "r1", nameForm())
	action, token := answerForm(t, h.getPage(nil, "").doc(t), id)

	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"payments"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	card, _ := h.in.Card(id)
	require.NotNil(t, card.Submission)
	assert.Equal(t, inbox.SubmissionFailed, card.Submission.State)
	assert.Equal(t, "unreachable", card.Submission.Reason)
	assert.Equal(t, int64(1), h.metrics.answers("failed"))

	// The reload shows the failure with the answer kept, ready to resend.
	d := h.getPage(nil, "").doc(t)
	c := d.Find("#" + domID(id))
	assert.Equal(t, "failed", attr(c, "data-state"))
	assert.Equal(t, "payments", attr(c.Find("#"+string(id)+"-f0"), "value"), "the answer is kept in the form")
	_, token2 := answerForm(t, d, id)
	h.sub.setErr(nil)
	r = h.postForm(nil, h.relative(action), url.Values{"token": {token2}, "f0": {"payments"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	subs := h.sub.all()
	require.Len(t, subs, 2)
	assert.NotEqual(t, subs[0].CommandID, subs[1].CommandID, "a resend is a new command")
}

// answers reads one outcome's count.
func (m *Metrics) answers(outcome string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.posts[outcome]
}

// A reload of a refused post's page (GET of the answer URL) goes to the
// card instead of a blank 405.
func TestAnswerURLReloadedGoesToTheCard(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", nameForm())
	r := h.do(h.client(), h.request(http.MethodGet, h.url("cards/"+string(id)+"/answer"), nil))
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	assert.Equal(t, "/#"+domID(id), r.Header.Get("Location"))
}

// A post to a card this UI answered names who answered as the card
// does, the operator who sent it (the verdict's Answered), not the UI's
// name the agent recorded.
func TestRefusalNamesTheOperatorWhoAnsweredHere(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withOperators(t))
	ann := []string{"Authorization", "Bearer " + annSecret, "X-Operator-Name", "Ann"}
	id := h.ask("s1", "r1", nameForm())
	action, token := answerForm(t, h.getPage(nil, "", ann...).doc(t), id)
	r := h.postForm(nil, h.relative(action), url.Values{"token": {token}, "f0": {"svc"}}, ann...)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	subs := waitSubmissions(t, h, 1)
	h.in.SettleSubmission(id, subs[0].CommandID, inbox.SubmissionAccepted, "", "")
	h.emit(aep.Envelope{ID: "ans1", Type: "attention.answered", Session: "s1", Subject: "r1", Cause: subs[0].CommandID,
		Data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "svc"}}, "by": "aepforms", "via": aep.ViaControl}})
	h.lifecycle("s1", "r1", "attention.resolved", aep.Resolved{Resolution: aep.ResolutionAnswered})

	r = h.postForm(nil, h.relative(action), url.Values{"token": {"another-tab"}, "f0": {"x"}}, ann...)
	require.Equal(t, http.StatusConflict, r.StatusCode)
	text := strings.ToLower(refusalText(r.doc(t)))
	assert.Contains(t, text, "already answered by ann")
	assert.NotContains(t, text, "by aepforms")
}
