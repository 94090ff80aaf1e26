package answer

import (
	"context"
	"net/url"
	"slices"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// MaxBatch is the most questions one batch answer may go to: a batch
// naming more is refused whole (ErrTooMany).
const MaxBatch = 100

// Batch is one answer to several questions of one shape.
type Batch struct {
	// Cards are the questions chosen, as posted ("" and repeats are
	// ignored).
	Cards []inbox.CardID
	// Shape is the shape they were chosen under (inbox.Shape.ID).
	Shape string
	// Token is the batch form's token: each question's answer takes
	// Token.{card} as its own, so the same batch posted again is the
	// same command per question.
	Token string
	// Replaces is refused when set (ErrReplaces): a batch never replaces
	// an owed answer.
	Replaces string
	// Form is the answer's fields, kept with each submission.
	Form url.Values
	By   string
	// Many lifts MaxBatch: an "Answer all" the operator confirmed by
	// its count, every question of the shape waiting when they looked.
	Many bool
}

// BatchItem is what became of one question of a batch: Err nil, begun
// (Recorded: Send it) or kept; else one of Refusals, or unexpected.
type BatchItem struct {
	ID inbox.CardID
	// Answer's Card is the question as read (zero when it is gone).
	Answer
	Err error
}

// BeginBatch begins b's answer on each of its questions, each through
// Begin (its own command id, journaled before anything is sent). A batch
// refused whole (watch-only, no token, none chosen, more than MaxBatch,
// a replacement, an answer the operator must fix: Problems) begins
// nothing and returns the refusal. The answer is checked once, against
// a question of the shape: it means the same to every one of them.
func (s *Service) BeginBatch(ctx context.Context, b Batch) ([]BatchItem, error) {
	var ids []inbox.CardID
	for _, id := range b.Cards {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	switch {
	case !s.cfg.Viewer.Answers():
		return nil, s.cfg.Viewer.Refusal()
	case b.Token == "":
		return nil, ErrNoToken
	case len(ids) == 0:
		return nil, ErrNoneChosen
	case len(ids) > MaxBatch && !b.Many:
		return nil, ErrTooMany
	case b.Replaces != "":
		return nil, ErrReplaces
	}
	for _, id := range ids {
		c, ok := s.cfg.Inbox.Card(id)
		if !ok || c.Shape.ID() != b.Shape {
			continue
		}
		if _, problems := form.ParseAnswer(c.Request, b.Form); len(problems) > 0 {
			return nil, Problems(problems)
		}
		break
	}
	items := make([]BatchItem, 0, len(ids))
	for _, id := range ids {
		items = append(items, s.beginOf(ctx, id, b))
	}
	return items, nil
}

// beginOf begins b's answer on question id, refused when it no longer
// asks the batch's shape, or could not be in a batch at all: the page's
// own test (the verdict's Batchable, the same shape), so a hand-made post cannot batch
// a question the page never offers. A question that can take no answer
// at all is left to Begin, which says why.
func (s *Service) beginOf(ctx context.Context, id inbox.CardID, b Batch) BatchItem {
	c, ok := s.cfg.Inbox.Card(id)
	if !ok {
		return BatchItem{ID: id, Err: inbox.ErrNotFound}
	}
	token := b.Token + "." + string(id)
	vd := c.Verdict(s.cfg.Now(), s.cfg.Viewer)
	if !c.Posted(token) {
		switch {
		case c.Shape == "" || c.Shape.ID() != b.Shape:
			return BatchItem{ID: id, Answer: Answer{Card: c, Verdict: vd}, Err: ErrShape}
		case !vd.Batchable && vd.Answerable:
			// Answerable alone, but not in a batch: its labels are
			// capture placeholders.
			return BatchItem{ID: id, Answer: Answer{Card: c, Verdict: vd}, Err: ErrPlaceholders}
		}
	}
	one := make(url.Values, len(b.Form)+1)
	for k, v := range b.Form {
		one[k] = slices.Clone(v)
	}
	one.Set(form.NameToken, token)
	a, err := s.Begin(ctx, Post{Card: id, Token: token, Form: one, By: b.By})
	if a.Card.ID == "" {
		a.Card, a.Verdict = c, vd // left since: its words are still the question's
	}
	return BatchItem{ID: id, Answer: a, Err: err}
}
