package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
)

// answerAll resolves an "Answer all" post of the batch page: every
// question of its shape, in the filter the page showed, that was waiting
// when the page was drawn (its snapshot); the ones that arrived since are
// left out and counted (later), so nothing is answered the operator did
// not see counted. Unconfirmed, it answers with the confirmation (how
// many, the answer as it will be recorded, the first questions by name)
// and done is true; a problem with the answer, or no question left, is
// refused as any batch is. Confirmed, b names the questions, Many set.
func (p *batchPages) answerAll(w http.ResponseWriter, r *http.Request, post url.Values, b answer.Batch) (_ answer.Batch, later int, done bool) {
	snapshot, err := time.Parse(time.RFC3339Nano, post.Get(view.BatchNameAll))
	if err != nil {
		p.batchRefused(w, r, post, b.Shape, answer.ErrNoneChosen)
		return b, 0, true
	}
	q := view.BatchAllQuery(post.Get(view.BatchNameAllFilter))
	var cards []inbox.Card
	for _, shape := range view.BatchShapes(p.in.Heads(q), p.now(), viewerFor(p.viewer, r)) {
		if shape[0].Shape.ID() == b.Shape {
			cards, later = view.BatchAllSplit(shape, snapshot)
		}
	}
	b.Cards, b.Many = nil, true
	for _, c := range cards {
		b.Cards = append(b.Cards, c.ID)
	}
	if len(cards) == 0 && post.Get(view.BatchNameConfirm) != "" {
		// None left to answer: this same confirmation, posted before,
		// may have answered them. Then it is that post again, and each
		// question says so (nothing new is sent).
		b.Cards = p.answeredBy(q, b)
	}
	if post.Get(view.BatchNameConfirm) != "" || len(cards) == 0 {
		return b, later, false // confirmed, or none left: BeginBatch says so
	}
	first, ok := p.in.Card(cards[0].ID)
	if !ok {
		first = cards[0]
	}
	a, problems := form.ParseAnswer(first.Request, b.Form)
	if len(problems) > 0 {
		p.batchRefused(w, r, post, b.Shape, answer.Problems(problems))
		return b, later, true
	}
	cards[0] = first
	opts := p.batchOptions(r)
	opts.Filter = q
	buf, err := render.BatchConfirm(r.Context(), view.BatchConfirm(cards, a, post, later, opts))
	if err != nil {
		p.internalError(w, r, err)
		return b, later, true
	}
	writeHTML(w, http.StatusOK, buf)
	return b, later, true
}

// answeredBy is each question of b's shape under q whose latest answer
// is b's own (posted with its form's token): those an earlier post of
// the same "Answer all" confirmation answered.
func (p *batchPages) answeredBy(q inbox.Query, b answer.Batch) []inbox.CardID {
	var ids []inbox.CardID
	for _, h := range p.in.Heads(q) {
		if h.Shape.ID() != b.Shape {
			continue
		}
		if c, ok := p.in.Card(h.ID); ok && c.Posted(b.Token+"."+string(h.ID)) {
			ids = append(ids, h.ID)
		}
	}
	return ids
}
