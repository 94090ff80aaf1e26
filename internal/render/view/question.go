package view

import (
	"reflect"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// Question is the agent's question as a card shows it: the heading and
// the quoted rest of the prompt, within the prompt budget, with "Show
// all". Wherever a question may be answered (its card, the batch page) it
// is drawn from this one view, so no page approves text the card would
// have shown and this one did not.
type Question struct {
	// Title is the heading: the question, i.e. the prompt's first line
	// without its Markdown (TitleAgent), else the kind in the UI's
	// words. KindTitle is the kind in the UI's words ("Form",
	// "Permission request", ...), the heading's tag.
	Title      string
	TitleAgent bool
	// TitleSpans is Title in pieces when the agent wrote part of it as
	// inline code (a permission's command): the heading shows that part
	// as code, exactly. Nil otherwise, or when Title was cut.
	TitleSpans []markdown.Span
	KindTitle  string
	Prompt     Prompt
	// Placeholder is non-empty when the prompt and labels are structural
	// placeholders (capture metadata or none): the note to show, e.g.
	// "labels withheld at capture metadata".
	Placeholder string
}

// QuestionOf is card c's question as its card shows it at opts
// (PromptBytes, Prompts, BasePath), its agent text made safe to show.
func QuestionOf(c inbox.Card, opts Options) Question {
	q := question(c, c.Verdict(opts.Now, opts.Viewer), opts)
	scrub(reflect.ValueOf(&q).Elem())
	return q
}

func question(c inbox.Card, vd inbox.Verdict, opts Options) Question {
	id := string(c.ID)
	placeholder := vd.Placeholder
	q := Question{
		Title:     kindTitle(c.Request.Kind),
		KindTitle: kindTitle(c.Request.Kind),
		Prompt:    promptView(id, root(opts.BasePath), c.Request.Prompt, promptBudget(opts.PromptBytes), placeholder),
	}
	if placeholder {
		q.Placeholder = "labels withheld at capture " + vd.Capture.String()
		placeholderTitle(&q, c)
	} else {
		questionOf(&q, opts.Prompts)
		questionTitle(&q, c)
	}
	return q
}

// Quoted reports whether anything is drawn under the heading: the rest of
// the prompt (or the part of it within the budget), or a placeholder's
// note.
func (q Question) Quoted() bool {
	return q.Prompt.Placeholder || len(q.Prompt.Blocks) > 0 || q.Prompt.Cut != nil
}

// QuoteID is the id of the quote drawn under the heading, "" when there
// is none: what a control answering the question is described by.
func (q Question) QuoteID() string {
	if q.Quoted() && (!q.Prompt.Placeholder || q.Prompt.Text != "") {
		return q.Prompt.ID
	}
	return ""
}
