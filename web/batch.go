package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/aepforms/aepforms/components"
	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/markdown"
	"github.com/aepforms/aepforms/internal/render/view"
)

// MaxBatch is the most questions one batch answer may go to: a post
// naming more is refused whole (413), and the batch page offers at most
// this many of a shape at a time.
const MaxBatch = answer.MaxBatch

// HeaderFragment's value from the page script's batch post: the server
// answers with the outcome list alone.
const fragmentBatch = "batch"

// batchPages is the batches' concern: the batch page, the inbox's batch
// region, a batch post's refusal and its outcome list (each question as
// its card words it: cards).
type batchPages struct {
	*site
	in      Inbox
	viewer  inbox.Viewer // no batch region, no batch answer when watch-only
	prompt  int          // Config.PromptBytes
	prompts *markdown.Cache
	cards   *pages
}

// batchOptions are the batch views' options for a request.
func (p *batchPages) batchOptions(r *http.Request) view.BatchOptions {
	return view.BatchOptions{
		BasePath: p.base, Assets: p.assets, Now: p.now(), Theme: r.URL.Query().Get("theme"),
		SignedIn: p.signedIn, Operator: operatorFrom(r.Context()), Prompts: p.prompts, PromptBytes: p.prompt,
		Max: MaxBatch, Token: render.NewToken, Filter: filterOf(r),
	}
}

// batchShapes are the inbox's batches now: the open cards by shape (two
// or more each, most urgent first), the first MaxBatch of each read whole
// (the page shows each question as its card does).
func batchShapes(in Inbox, pg *batchPages, r *http.Request) [][]inbox.Card {
	return wholeShapes(in, view.BatchShapes(in.Heads(filterOf(r)), pg.now(), viewerFor(pg.viewer, r)), MaxBatch)
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
func handleBatches(in Inbox, pg *batchPages) http.HandlerFunc {
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
// sends answers, for an operator who answers (none when watch-only or
// read-only).
func (p *batchPages) batchRegion(r *http.Request, heads []inbox.Card) []view.BatchGroup {
	v := viewerFor(p.viewer, r)
	if !v.Answers() {
		return nil
	}
	opts := p.batchOptions(r)
	opts.Max = 0 // the region lists no questions: their cards carry the picks
	return view.Batches(wholeShapes(p.in, view.BatchShapes(heads, p.now(), v), 1), opts).Groups
}

// batches renders the batch page under status, with a refused post shown
// again on its shape's form when refused is set.
func (p *batchPages) batches(w http.ResponseWriter, r *http.Request, status int, refused *view.BatchRefused) {
	opts := p.batchOptions(r)
	opts.Refused = refused
	buf, err := render.Batches(r.Context(), view.Batches(batchShapes(p.in, p, r), opts))
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// handleBatchAnswer takes one answer for several questions of one shape
// (POST /batch/answer: the ticked card ids, the shape, the form token and
// the answer). The answer service begins each question's answer through
// the one answer path (its own command id, journaled before anything is
// sent; a resubmitted batch is the same command per question), and the
// reply names each question's outcome as its card words it, the ones not
// sent with why. A batch refused whole (nothing chosen, more than
// MaxBatch, an answer the operator must fix, a watch-only UI) sends
// nothing and shows the form again with the problem.
func handleBatchAnswer(svc *answer.Service, pg *batchPages, m *Metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		post, ok := readPost(w, r, pg.site, false)
		if !ok {
			return
		}
		b := readBatch(post, operatorFrom(r.Context()))
		later := 0
		if post.Get(view.BatchNameAll) != "" {
			var done bool
			if b, later, done = pg.answerAll(w, r, post, b); done {
				return
			}
		}
		items, err := svc.BeginBatch(context.WithoutCancel(r.Context()), b)
		if err != nil {
			m.Answer("not_sent")
			pg.batchRefused(w, r, post, b.Shape, err)
			return
		}
		sendBatch(context.WithoutCancel(r.Context()), svc, m, items)
		pg.batchResult(w, r, items, later)
	}
}

// readBatch is a batch post as the answer service takes it: the answer's
// fields apart from the questions chosen and their shape.
func readBatch(post url.Values, by string) answer.Batch {
	b := answer.Batch{Shape: post.Get(view.BatchNameShape), Token: post.Get(form.NameToken),
		Replaces: post.Get(form.NameReplaces), Form: url.Values{}, By: by}
	for _, id := range post[view.BatchNameCard] {
		b.Cards = append(b.Cards, inbox.CardID(id))
	}
	for k, v := range post {
		switch k {
		case view.BatchNameCard, view.BatchNameShape, view.BatchNameAll, view.BatchNameAllFilter, view.BatchNameConfirm:
		default:
			b.Form[k] = v
		}
	}
	return b
}

// sendBatch sends each answer of the batch that was journaled, before the
// reply is drawn, as a single answer's command is let go before its 303:
// its card then says what became of it (queued while the relay is away,
// sent), and the reply words each question as its card does.
func sendBatch(ctx context.Context, svc *answer.Service, m *Metrics, items []answer.BatchItem) {
	for _, it := range items {
		switch {
		case it.Err != nil:
			m.Answer("not_sent")
		case it.Recorded():
			m.queued(svc.Send(ctx, it.Answer, nil))
		}
	}
}

// batchRefused answers a batch refused whole: the batch page again, its
// shape's form with the operator's input and choices and the problem, or
// to the page script the problems alone.
func (p *batchPages) batchRefused(w http.ResponseWriter, r *http.Request, post url.Values, shape string, err error) {
	why := refusalOf(err)
	problems := why.problems(err, inbox.Verdict{})
	if !errors.Is(err, answer.ErrInvalid) {
		problems[0].Code = "batch"
	}
	if r.Header.Get(HeaderFragment) != fragmentBatch {
		p.batches(w, r, why.status, &view.BatchRefused{Shape: shape, Input: post, Problems: problems})
		return
	}
	msgs := make([]string, len(problems))
	for i, pr := range problems {
		msgs[i] = pr.Message
	}
	buf, err := render.Buffer(r.Context(), components.BatchProblems(msgs), 1<<10)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, why.status, buf)
}

// batchResult writes the batch's outcome list: each question as its card
// now words it, the ones not sent with why (409 when none was sent).
func (p *batchPages) batchResult(w http.ResponseWriter, r *http.Request, items []answer.BatchItem, later int) {
	now := p.now()
	outcomes := make([]view.BatchOutcome, len(items))
	var held []view.CardView // the batch's new answers, for its Undo
	for i, it := range items {
		o := &outcomes[i]
		*o = view.BatchOutcome{ID: string(it.ID), Gist: string(it.ID), URL: p.base + "cards/" + url.PathEscape(string(it.ID)) + "/page"}
		if it.Card.ID != "" {
			o.Gist = view.Row(it.Card, view.Options{BasePath: p.base, Now: now, Prompts: p.prompts}).Gist
		}
		if it.Err != nil {
			o.Line = p.batchLine(it)
			continue
		}
		o.Sent = true
		if c, ok := p.in.Card(it.ID); ok {
			opts := p.cards.cardOptions(r, c, now)
			o.Taken(c, opts, !it.Recorded())
			if it.Recorded() {
				held = append(held, view.Card(c, opts))
			}
		} else {
			o.TakenGone()
		}
	}
	res := view.BatchResult(outcomes, p.batchOptions(r))
	res.Undo = view.UndoBatch(held, strings.TrimSuffix(p.base, "/"))
	if later > 0 {
		res.LeftOut = view.BatchAllLater(later)
	}
	status := http.StatusOK
	if res.Sent == 0 {
		status = http.StatusConflict
	}
	buf, err := render.BatchResult(r.Context(), res, r.Header.Get(HeaderFragment) == fragmentBatch)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// batchLine is the outcome line of a question the batch did not answer.
func (p *batchPages) batchLine(it answer.BatchItem) string {
	why := refusalOf(it.Err)
	if why.status == http.StatusInternalServerError {
		p.log.Error("web: batch answer not begun", "card", string(it.ID), "err", it.Err)
	}
	return why.outcomeLine(it.Err, it.Verdict)
}

// handleBatchReload answers a GET of the batch answer URL (a reload of
// its result page): the batch page, not a bare 405.
func handleBatchReload(pg *batchPages) http.HandlerFunc {
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
