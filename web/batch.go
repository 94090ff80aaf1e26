package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aepforms/aepforms/components"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
)

// MaxBatch is the most questions one batch answer may go to: a post
// naming more is refused whole (413), and the batch page offers at most
// this many of a shape at a time.
const MaxBatch = 100

// HeaderFragment's value from the page script's batch post: the server
// answers with the outcome list alone.
const fragmentBatch = "batch"

// batchOptions are the batch views' options for a request.
func (p *pages) batchOptions(r *http.Request) view.BatchOptions {
	return view.BatchOptions{
		BasePath: p.base, Assets: p.assets, Now: p.now(), Theme: r.URL.Query().Get("theme"),
		SignedIn: p.signedIn, Operator: operatorFrom(r.Context()), Prompts: p.prompts, PromptBytes: p.prompt,
		Max: MaxBatch, Token: render.NewToken, Filter: filterOf(r),
	}
}

// batchShapes are the inbox's batches now: the open cards by shape (two
// or more each, most urgent first), the first MaxBatch of each read whole
// (the page shows each question as its card does).
func batchShapes(in Inbox, pg *pages, filter inbox.Query) [][]inbox.Card {
	return wholeShapes(in, view.BatchShapes(in.Heads(filter), pg.now()), MaxBatch)
}

// wholeShapes reads, in place, the first n cards of each shape whole (the
// first at least: a shape's form is drawn from it). A card that left, or
// now asks something else, since the heads were read is left out, and so
// is a shape left with fewer than two.
func wholeShapes(in Inbox, shapes [][]inbox.Card, n int) [][]inbox.Card {
	n = max(n, 1)
	kept := shapes[:0]
	for _, cards := range shapes {
		out := cards[:0]
		for _, h := range cards {
			if len(out) >= n {
				out = append(out, h)
				continue
			}
			if c, ok := in.Card(h.ID); ok && c.Shape == h.Shape {
				out = append(out, c)
			}
		}
		if len(out) >= 2 {
			kept = append(kept, out)
		}
	}
	return kept
}

// handleBatches renders the batch page (GET /batches): every shape two or
// more pending questions share, each with its questions to tick and one
// answer form. No script needed.
func handleBatches(in Inbox, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("region") == "" {
			pg.batches(w, r, http.StatusOK, nil)
			return
		}
		// ?region=1: the inbox's batch region alone, for the page script
		// (a group appeared, changed or left by push); its filter narrows
		// it as it narrows the page.
		base := strings.TrimSuffix(pg.base, "/")
		v := view.PageView{BatchesURL: base + "/batches", BatchesLink: view.BatchesLink(base, queryOf(r))}
		v.Batches = pg.batchRegion(r, in.Heads(queryOf(r)))
		buf, err := render.Buffer(r.Context(), components.BatchRegion(v), 1<<10+len(v.Batches)*4<<10)
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		writeHTML(w, http.StatusOK, buf)
	}
}

// batchRegion is the inbox's batch groups among heads, for a UI that
// sends answers (none when watch-only).
func (p *pages) batchRegion(r *http.Request, heads []inbox.Card) []view.BatchGroup {
	if p.viewer.WatchOnly {
		return nil
	}
	opts := p.batchOptions(r)
	opts.Max = 0 // the region lists no questions: their cards carry the picks
	return view.Batches(wholeShapes(p.in, view.BatchShapes(heads, p.now()), 1), opts).Groups
}

// batches renders the batch page under status, with a refused post shown
// again on its shape's form when refused is set.
func (p *pages) batches(w http.ResponseWriter, r *http.Request, status int, refused *view.BatchRefused) {
	opts := p.batchOptions(r)
	opts.Refused = refused
	buf, err := render.Batches(r.Context(), view.Batches(batchShapes(p.in, p, filterOf(r)), opts))
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// handleBatchAnswer takes one answer for several questions of one shape
// (POST /batch/answer: the ticked card ids, the shape, the form token and
// the answer). Each question gets its own submission through the one
// answer path (beginAnswer: its own command id, journaled before anything
// is sent; a resubmitted batch is the same command per question), and the
// reply names each question's outcome as its card words it, the ones not
// sent with why. A batch refused whole (nothing chosen, more than
// MaxBatch, an answer the operator must fix, a watch-only UI) sends
// nothing and shows the form again with the problem. The journaled answers are queued before the
// reply; each card's later outcome arrives by push like any answer.
func handleBatchAnswer(in Inbox, sub Submitter, pg *pages, m *Metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				pg.unread(w, r, http.StatusRequestEntityTooLarge, false, true)
				return
			}
			pg.unread(w, r, http.StatusBadRequest, false, false)
			return
		}
		post := r.PostForm
		shape := post.Get(view.BatchNameShape)
		var ids []string
		for _, id := range post[view.BatchNameCard] {
			if id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		refused := func(status int, problems []aep.Problem) {
			m.Answer("not_sent")
			if r.Header.Get(HeaderFragment) != fragmentBatch {
				pg.batches(w, r, status, &view.BatchRefused{Shape: shape, Input: post, Problems: problems})
				return
			}
			msgs := make([]string, len(problems))
			for i, p := range problems {
				msgs[i] = p.Message
			}
			buf, err := render.Buffer(r.Context(), components.BatchProblems(msgs), 1<<10)
			if err != nil {
				pg.internalError(w, r, err)
				return
			}
			writeHTML(w, status, buf)
		}
		refuse := func(status int, message string) {
			refused(status, []aep.Problem{{Code: "batch", Message: message}})
		}
		token := post.Get(form.NameToken)
		switch {
		case pg.viewer.WatchOnly:
			refuse(http.StatusConflict, view.RefusalWatchOnly.Message)
			return
		case token == "":
			refuse(http.StatusBadRequest, view.RefusalNoToken.Message)
			return
		case len(ids) == 0:
			refuse(http.StatusUnprocessableEntity, view.BatchWord("none-chosen"))
			return
		case len(ids) > MaxBatch:
			refuse(http.StatusRequestEntityTooLarge, strings.ReplaceAll(view.BatchWord("too-many"), "{max}", strconv.Itoa(MaxBatch)))
			return
		case post.Get(form.NameReplaces) != "":
			// Only a card's own "Answer differently" replaces an owed
			// answer, under its warning that the first may still act;
			// a batch (a hand-made post: the page sends none) never does.
			refuse(http.StatusBadRequest, view.BatchWord("replaces"))
			return
		}
		// The answer is checked once, against a question of the shape: it
		// means the same to every one of them. One the operator must fix
		// refuses the batch whole, their input and choices kept.
		for _, id := range ids {
			c, ok := in.Card(inbox.CardID(id))
			if !ok || c.Shape.ID() != shape {
				continue
			}
			if _, problems := form.ParseAnswer(c.Request, post); len(problems) > 0 {
				refused(http.StatusUnprocessableEntity, problems)
				return
			}
			break
		}
		by := operatorFrom(r.Context())
		outcomes := make([]view.BatchOutcome, 0, len(ids))
		var recorded []inbox.Submission
		for _, id := range ids {
			o, s := beginBatchAnswer(in, pg, inbox.CardID(id), shape, post, by)
			if s != nil {
				recorded = append(recorded, *s)
			} else if !o.Sent {
				m.Answer("not_sent")
			}
			outcomes = append(outcomes, o)
		}
		// Every answer is journaled, so each is queued before the reply
		// is drawn, as a single answer's command is let go before its
		// 303 (Submit returns at once): its card then says what became
		// of it (queued while the relay is away, sent), and the reply
		// words each question as its card does.
		ctx := context.WithoutCancel(r.Context())
		fresh := make(map[string]bool, len(recorded))
		for _, s := range recorded {
			queueAnswer(ctx, in, sub, pg.log, m, s)
			fresh[string(s.Card)] = true
		}
		now := pg.now()
		for i := range outcomes {
			o := &outcomes[i]
			if !o.Sent {
				continue
			}
			c, ok := in.Card(inbox.CardID(o.ID))
			if !ok {
				o.TakenGone()
				continue
			}
			o.Taken(c, pg.cardOptions(r, c, now), !fresh[o.ID])
		}
		res := view.BatchResult(outcomes, pg.batchOptions(r))
		status := http.StatusOK
		if res.Sent == 0 {
			status = http.StatusConflict
		}
		buf, err := render.BatchResult(r.Context(), res, r.Header.Get(HeaderFragment) == fragmentBatch)
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		writeHTML(w, status, buf)
	}
}

// beginBatchAnswer begins one question's answer of a batch: its own form
// token (the batch's token and the card, so the same batch posted again
// is the same command per question), refused when the question no longer
// asks the batch's shape. It returns the question's outcome and, when a
// new answer was journaled, the submission to queue.
func beginBatchAnswer(in Inbox, pg *pages, id inbox.CardID, shape string, post url.Values, by string) (view.BatchOutcome, *inbox.Submission) {
	o := view.BatchOutcome{ID: string(id), Gist: string(id), URL: pg.base + "cards/" + url.PathEscape(string(id)) + "/page"}
	c, ok := in.Card(id)
	if !ok {
		o.Line = view.BatchWord("gone")
		return o, nil
	}
	o.Gist = view.Row(c, view.Options{BasePath: pg.base, Now: pg.now(), Prompts: pg.prompts}).Gist
	one := url.Values{}
	for k, v := range post {
		if k != view.BatchNameCard && k != view.BatchNameShape {
			one[k] = slices.Clone(v)
		}
	}
	token := post.Get(form.NameToken) + "." + string(id)
	one.Set(form.NameToken, token)
	// The page's own test (inbox Selectable, the same shape), so a
	// hand-made post cannot batch a question the page never offers. A
	// question that can take no answer at all is left to beginAnswer,
	// which says why.
	if !c.Posted(token) {
		switch {
		case c.Shape == "" || c.Shape.ID() != shape:
			o.Line = view.BatchWord("shape")
			return o, nil
		case !c.Selectable(pg.now()) && c.CanAnswer(pg.now()) == nil:
			// Answerable alone, but not in a batch: its labels are
			// capture placeholders.
			o.Line = view.BatchWord("placeholders")
			return o, nil
		}
	}
	step := beginAnswer(in, pg, answerPost{Card: id, Form: one, By: by})
	switch step.Outcome {
	case answerRecorded:
		o.Sent = true // its line is its card's, once it is queued
		return o, &step.Submission
	case answerKept:
		o.Sent = true
	case answerGone:
		o.Line = view.BatchWord("gone")
	case answerRefused:
		o.Line = "Not sent: " + step.Refused.Problems[0].Message
	default:
		pg.log.Error("web: batch answer not begun", "card", string(id), "err", step.Err)
		o.Line = view.BatchWord("broken")
	}
	return o, nil
}

// handleBatchReload answers a GET of the batch answer URL (a reload of
// its result page): the batch page, not a bare 405.
func handleBatchReload(pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, pg.base+"batches", http.StatusSeeOther)
	}
}

// filterOf is the agent, session and kind filter of the view a request
// shows (viewQuery: a refused post keeps its page's).
func filterOf(r *http.Request) inbox.Query {
	q := viewQuery(r)
	return inbox.Query{Agent: q.Get("agent"), Session: q.Get("session"), Kind: q.Get("kind")}
}
