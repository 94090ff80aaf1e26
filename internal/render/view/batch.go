package view

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// Batch form control names: the cards chosen (one value each) and the
// shape they share.
const (
	BatchNameCard  = "card"
	BatchNameShape = "shape"
)

// BatchErrorsID is the DOM id of the batch page's own error summary: a
// refused post's problems when no form of its shape is shown.
const BatchErrorsID = "batch-errors"

// BatchesView is the page of batch answers (GET /batches, no script
// needed): the pending questions that ask the same thing, by shape, each
// with its questions as checkboxes and one answer form.
type BatchesView struct {
	Page    PageView
	Heading string
	Intro   string
	Empty   string // what the page says when no two questions share a shape
	Groups  []BatchGroup
	// Problems are a refused post's, when the page shows no form of its
	// shape to show them on (this UI batches nothing, or the shape's
	// questions are gone): said above the groups.
	Problems []string
}

// BatchGroup is one shape's batch: what it asks, its pending questions
// and the one answer form given to every question chosen.
type BatchGroup struct {
	Shape   string // inbox.Shape.ID
	DOMID   string // "batch-{shape}"
	Heading string // "Permission request: Allow / Deny"
	Count   int    // pending questions of the shape
	// Items are the questions offered, at most the batch limit; More
	// says how many more there are ("" when none).
	Items []BatchItem
	More  string
	// Form is the answer, drawn from the first question of the shape;
	// Errors its error summary (a refused post), ErrorsID its id.
	Form     *form.View
	Errors   []form.ErrorLink
	ErrorsID string
	Token    string
	Action   string // {base}/batch/answer
	// AllSnapshot is the "Answer all" button's value (BatchAllSnapshot;
	// "" where the questions are not listed: the inbox's region),
	// AllFilter the page's filter, AllText and AllHint its words.
	AllSnapshot, AllFilter, AllText, AllHint string
}

// BatchItem is one question of a batch: the question as its card shows
// it (heading, quote, "Show all"), so a tick answers only what was shown,
// and who asks it.
type BatchItem struct {
	ID, From, URL string
	Question      Question
	Checked       bool
}

// BatchOptions are what Batches needs beyond the cards.
type BatchOptions struct {
	BasePath string
	Assets   Assets
	Now      time.Time
	Theme    string
	SignedIn bool
	Operator string
	Prompts  *markdown.Cache
	// PromptBytes is how much of each question is shown, as on its card
	// (Options.PromptBytes).
	PromptBytes int
	// Max is the batch limit (web.MaxBatch): at most this many questions
	// a post, and on the page.
	Max int
	// Token mints each batch form's token.
	Token func() string
	// Refused is a refused batch post to show again: its shape's form
	// keeps the operator's input and choices and shows the problems.
	Refused *BatchRefused
	// Filter narrows the page as the inbox's filter narrows the inbox
	// (agent, session, kind): the page names it with a way to clear it.
	Filter inbox.Query
}

// BatchRefused is a batch post refused as a whole (nothing sent): the
// shape, the operator's input and the problems.
type BatchRefused struct {
	Shape    string
	Input    url.Values
	Problems []aep.Problem
}

// BatchShapes groups open cards by shape: only cards v may batch at now
// (inbox.Verdict.Batchable) and only shapes with at least two of them,
// in the order of the cards given (the inbox's: most urgent first).
// Heads are enough.
func BatchShapes(heads []inbox.Card, now time.Time, v inbox.Viewer) [][]inbox.Card {
	index := map[inbox.Shape]int{}
	var out [][]inbox.Card
	for _, c := range heads {
		if !c.Verdict(now, v).Batchable {
			continue
		}
		i, ok := index[c.Shape]
		if !ok {
			i = len(out)
			index[c.Shape] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	kept := out[:0]
	for _, g := range out {
		if len(g) >= 2 {
			kept = append(kept, g)
		}
	}
	return kept
}

// Batches builds the batch page from the shapes' cards (BatchShapes),
// of each shape the first opts.Max in full (the first at least: the form
// is drawn from it; the questions offered are shown whole). With Max 0
// no questions are listed (the inbox's region: their cards carry the
// picks).
func Batches(shapes [][]inbox.Card, opts BatchOptions) BatchesView {
	base := root(opts.BasePath)
	title := batchWords["title"]
	v := BatchesView{
		Page:    subPage(title, base, opts.Assets, opts.Theme, opts.SignedIn, opts.Operator),
		Heading: batchWords["heading"],
		Intro:   strings.ReplaceAll(batchWords["intro"], "{max}", strconv.Itoa(opts.Max)),
		Empty:   batchWords["empty"],
	}
	v.Page.Filter, _ = filterTerms(opts.Filter)
	v.Page.ClearURL = base + "/batches"
	for _, cards := range shapes {
		v.Groups = append(v.Groups, batchGroup(cards, opts, &v.Page))
	}
	if r := opts.Refused; r != nil {
		v.Page.Title = "Error: " + title
		if !slices.ContainsFunc(v.Groups, func(g BatchGroup) bool { return g.Shape == r.Shape }) {
			for _, p := range r.Problems {
				v.Problems = append(v.Problems, p.Message)
			}
			v.Page.FocusErrors = BatchErrorsID
		}
	}
	return v
}

func batchGroup(cards []inbox.Card, opts BatchOptions, page *PageView) BatchGroup {
	base := root(opts.BasePath)
	first := cards[0]
	shape := first.Shape.ID()
	g := BatchGroup{
		Shape: shape, DOMID: "batch-" + shape, Count: len(cards),
		Heading:  BatchHeading(first),
		ErrorsID: "batch-" + shape + "-errors",
		Action:   base + "/batch/answer",
	}
	if opts.Token != nil {
		g.Token = opts.Token()
	}
	if opts.Max > 0 {
		g.AllSnapshot, g.AllFilter = BatchAllSnapshot(opts.Now), BatchAllFilter(opts.Filter)
		g.AllText = strings.ReplaceAll(batchWords["all"], "{n}", Count(len(cards)))
		g.AllHint = batchWords["all-hint"]
	}
	var kept url.Values
	var problems []aep.Problem
	chosen := map[string]bool{}
	if r := opts.Refused; r != nil && r.Shape == shape {
		kept, problems = r.Input, r.Problems
		for _, id := range r.Input[BatchNameCard] {
			chosen[id] = true
		}
		page.FocusErrors = g.ErrorsID
	}
	for i, c := range cards {
		if i == opts.Max {
			if opts.Max > 0 {
				g.More = strings.ReplaceAll(batchWords["more"], "{n}", strconv.Itoa(len(cards)-i))
			}
			break
		}
		_, from := groupOf(c)
		g.Items = append(g.Items, BatchItem{
			ID: string(c.ID), From: Marked(from), URL: base + "/cards/" + url.PathEscape(string(c.ID)) + "/page",
			Question: QuestionOf(c, Options{BasePath: opts.BasePath, Prompts: opts.Prompts, PromptBytes: opts.PromptBytes}),
			Checked:  chosen[string(c.ID)],
		})
	}
	f, errs := form.Build(form.Spec{
		Card: g.DOMID, Request: first.Request, Action: g.Action, Token: g.Token,
		Answerable: true, Kept: kept, Problems: problems,
	})
	noteWords(f)
	g.Form, g.Errors = f, errs
	if len(problems) > 0 && len(errs) == 0 {
		for _, p := range problems {
			g.Errors = append(g.Errors, form.ErrorLink{Message: p.Message})
		}
	}
	return g
}

// BatchHeading names what a shape asks: its kind and its options' (or
// fields') labels, "Permission request: Allow / Deny".
func BatchHeading(c inbox.Card) string {
	var parts []string
	for _, o := range c.Request.Options {
		parts = append(parts, form.Label(Text(o.Label)))
	}
	if len(parts) == 0 {
		for _, f := range c.Request.Fields {
			parts = append(parts, form.Label(Text(f.Label)))
		}
	}
	h := kindTitle(c.Request.Kind)
	if len(parts) > 4 {
		parts = append(parts[:4], "…")
	}
	if len(parts) > 0 {
		h += ": " + strings.Join(parts, " / ")
	}
	return h
}

// BatchResultView is the page a batch post is answered with (and, to the
// page script, its result list alone): each question's outcome, the
// failures named with why.
type BatchResultView struct {
	Page     PageView
	Heading  string
	Summary  string
	LeftOut  string // an "Answer all"'s questions that arrived since the page ("" none)
	Outcomes []BatchOutcome
	// Sent counts the questions whose answer the batch kept (Taken),
	// Failed those it sent nothing to.
	Sent     int
	Failed   int
	InboxURL string
	BackURL  string // {base}/batches
	// Undo takes back every answer of the batch still held for the undo
	// window (UndoBatch); nil when none is.
	Undo *UndoView
}

// BatchOutcome is one question's outcome in a batch.
type BatchOutcome struct {
	ID, Gist, URL string
	// Sent is true when the batch kept an answer for the question (it
	// is journaled, or was by this batch before): Line then says what
	// became of it as its card does (Taken). False: nothing was sent,
	// and Line says why.
	Sent bool
	// Kind and Tone are the card's state line's (data-state, its
	// colour) for an answer kept; "" and "error" for one not sent.
	Kind, Tone string
	Line       string
}

// Taken words the outcome of a question whose answer the batch kept as
// card c now says it (queued while the relay is away, sent, accepted,
// or what became of it), never a fixed "sent"; again is true when an
// earlier post of the same batch kept it (nothing new was sent).
func (o *BatchOutcome) Taken(c inbox.Card, opts Options, again bool) {
	st := CardState(c, opts)
	o.Sent, o.Kind, o.Tone, o.Line = true, st.Kind, st.Tone, st.Text
	if o.Line == "" {
		// No line of its own (an answer kept on another replica that
		// this card does not hold yet).
		o.Line = batchWords["kept-here"]
	}
	if again {
		o.Line = batchWords["kept"] + " " + o.Line
	}
}

// TakenGone is the outcome of a question whose answer the batch kept
// and which left the inbox before the result was drawn.
func (o *BatchOutcome) TakenGone() {
	o.Sent, o.Kind, o.Tone, o.Line = true, "", "neutral", batchWords["kept-gone"]
}

// trouble reports a kept answer that did not get through (its card's
// line is an error or a warning: not delivered, rejected, not sent
// again), listed with the failures.
func (o BatchOutcome) trouble() bool { return o.Sent && (o.Tone == "error" || o.Tone == "warning") }

// BatchResult builds the result page of a batch post.
func BatchResult(outcomes []BatchOutcome, opts BatchOptions) BatchResultView {
	base := root(opts.BasePath)
	v := BatchResultView{
		Page:     subPage(batchWords["result-title"], base, opts.Assets, opts.Theme, opts.SignedIn, opts.Operator),
		InboxURL: InboxLink(base, opts.Filter),
		BackURL:  BatchesLink(base, opts.Filter),
	}
	queued, trouble := 0, 0
	for i, o := range outcomes {
		switch {
		case !o.Sent:
			v.Failed++
			outcomes[i].Tone = "error"
		case o.Kind == string(inbox.LineQueued):
			v.Sent++
			queued++
		case o.trouble():
			v.Sent++
			trouble++
		default:
			v.Sent++
		}
	}
	sent := v.Sent - queued - trouble
	n := func(k int) string {
		if k == 1 {
			return "1 question"
		}
		return strconv.Itoa(k) + " questions"
	}
	// The summary says each group as it is: sent, queued, kept but not
	// delivered, not sent at all.
	var parts []string
	if sent > 0 {
		parts = append(parts, "sent to "+n(sent))
	}
	if queued > 0 {
		parts = append(parts, "queued for "+n(queued)+" until the relay is back")
	}
	if trouble > 0 {
		parts = append(parts, "kept for "+n(trouble)+" but not delivered")
	}
	if v.Failed > 0 {
		parts = append(parts, "not sent to "+n(v.Failed))
	}
	summary := sentenceCase(strings.Join(parts, "; "))
	switch {
	case v.Sent == 0:
		v.Heading = batchWords["result-none"]
		summary = "Nothing was sent: none of the " + n(v.Failed) + " could take this answer."
		v.Page.Title = "Error: " + v.Page.Title
	case v.Failed > 0 || trouble > 0:
		v.Heading = batchWords["result-partial"]
		summary += ", listed first with why."
	case queued == v.Sent:
		v.Heading = batchWords["result-queued"]
		summary += ". Each question shows what became of its answer."
	case queued > 0:
		v.Heading = batchWords["result-sent-queued"]
		summary += ". Each question shows what became of its answer."
	default:
		v.Heading = batchWords["result-sent"]
		summary += ". Each question shows what became of its answer."
	}
	v.Summary = summary
	// The failures first: what the operator must look at.
	ordered := make([]BatchOutcome, 0, len(outcomes))
	for _, first := range []func(BatchOutcome) bool{
		func(o BatchOutcome) bool { return !o.Sent },
		BatchOutcome.trouble,
		func(o BatchOutcome) bool { return o.Sent && !o.trouble() },
	} {
		for _, o := range outcomes {
			if first(o) {
				ordered = append(ordered, o)
			}
		}
	}
	v.Outcomes = ordered
	return v
}

// batchWords are the words of answering many at once.
var batchWords = map[string]string{
	"title":   "Answer several at once · aepforms",
	"heading": "Answer several at once",
	"intro": "Questions that ask the same thing (the same kind and the same options) can take one answer together. " +
		"Tick the questions, then give the answer once: each question gets its own answer and shows what became of it. " +
		"At most {max} questions at a time.",
	"empty":         "No two open questions ask the same thing right now.",
	"more":          "and {n} more: answer these first.",
	"result-title":  "Batch answer · aepforms",
	"result-sent":   "Answers sent",
	"result-queued": "Answers queued",
	// Some sent, some queued while the relay is away.
	"result-sent-queued": "Answers sent and queued",
	"result-none":        "Nothing sent",
	"result-partial":     "Some answers not sent",
	"none-chosen":        "Choose at least one question to answer.",
	"too-many":           "Choose at most {max} questions at a time.",
	"replaces":           "Nothing was sent: a batch answer cannot replace an answer already sent. Open the question and use “Answer differently” there, which says what a second answer means.",
	// An answer this batch posted before (the same form sent again):
	// nothing new is sent; the card's line follows.
	"kept":         "Already answered by this batch; nothing new was sent.",
	"kept-here":    "Your answer is kept.",
	"kept-gone":    "Your answer is kept; this question has since left the inbox (History has it).",
	"gone":         "Not sent: this question is no longer in the inbox",
	"shape":        "Not sent: this question now asks something else; answer it on its own",
	"broken":       "Not sent: the server could not record the answer",
	"placeholders": "Not sent: this question's labels were withheld by its sender, so one answer cannot mean the same to each; answer it on its own",
	// Answer all: every question of a shape the page counted, whether
	// listed or not, after a confirmation that says how many and what.
	"all":             "Answer all {n} waiting…",
	"all-hint":        "You confirm the count and the answer first. Questions that arrive after this page was drawn are not included.",
	"confirm-title":   "Confirm the batch answer · aepforms",
	"confirm-heading": "Send this answer to {n}?",
	"confirm-send":    "Send to {n}",
	"confirm-later":   "{n} that arrived after you opened the batch page are not included: answer them afterwards.",
	"all-later":       "{n} that arrived after you opened the batch page were left out: nothing was sent to them.",
}

// BatchWord is one of the batch words, for the web handlers.
func BatchWord(name string) string { return batchWords[name] }

// BatchSummary is what the inbox's batch region shows of its groups
// without their forms: each group's count and the region's. It is
// derived once on the server and pushed to every page of the same filter
// (the `batches` push event, as JSON); the page updates its region from
// it and fetches the region only for a group it has never drawn.
type BatchSummary struct {
	Count  string              `json:"count"` // "1 201 questions in 1 group"
	Groups []BatchSummaryGroup `json:"groups"`
}

// BatchSummaryGroup is one group of a BatchSummary.
type BatchSummaryGroup struct {
	Shape string `json:"shape"` // inbox.Shape.ID, the group's data-shape
	Count int    `json:"n"`
	Text  string `json:"text"` // "12 waiting"
}

// BatchSummaryOf is the summary of shapes (BatchShapes).
func BatchSummaryOf(shapes [][]inbox.Card) BatchSummary {
	s := BatchSummary{Groups: make([]BatchSummaryGroup, 0, len(shapes))}
	counts := make([]int, 0, len(shapes))
	for _, cards := range shapes {
		s.Groups = append(s.Groups, BatchSummaryGroup{Shape: cards[0].Shape.ID(), Count: len(cards), Text: BatchWaiting(len(cards))})
		counts = append(counts, len(cards))
	}
	s.Count = BatchRegionCount(counts)
	return s
}

// BatchWaiting is a group's count for reading: "1 201 waiting".
func BatchWaiting(n int) string { return Count(n) + " waiting" }

// BatchRegionCount is the region's count for reading, its numbers
// grouped like the header's: "1 201 questions in 1 group".
func BatchRegionCount(counts []int) string {
	n := 0
	for _, c := range counts {
		n += c
	}
	groups := " groups"
	if len(counts) == 1 {
		groups = " group"
	}
	questions := " questions in "
	if n == 1 {
		questions = " question in "
	}
	return Count(n) + questions + Count(len(counts)) + groups
}
