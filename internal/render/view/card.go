package view

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// CardView is one card with everything the components need precomputed.
// Every string in it that came from an agent is plain text: the components
// escape it.
type CardView struct {
	ID      string // the inbox card id
	DOMID   string // "card-{id}": the card element's id, the push protocol's key
	Version uint64
	Kind    string // the request kind as given (data-kind)
	// Question is the agent's question as the card shows it: its
	// heading and the quoted rest.
	Question

	Prov Provenance

	// Form is the card's answer form; nil when nothing can be shown as
	// a control (malformed request, nothing asked).
	Form *form.View

	State StateView
	// Answered says who answered a settled card from this UI, and when,
	// with the link to its history entry; nil when this UI's answer is
	// not the one the agent recorded.
	Answered *AnsweredBy
	Notes    []Note // the UI's own notes on this card (watch-only, agent not connected, ...)

	// Errors is the error summary of a refused post on this card, in field
	// order, whatever the card shows: an open form's problems link to their
	// controls; a refusal of a card that shows no form (settled, in flight,
	// malformed, informational, expired) is a message without a link.
	// Empty when there is none. ErrorsID is the summary's element id,
	// "{cardID}-errors".
	Errors   []form.ErrorLink
	ErrorsID string

	Open bool // the request is still open (pending or routed, deadline not passed)
	// Pending is true when the card counts as waiting for an answer
	// (inbox.Verdict.Pending): data-pending, what the page script counts.
	// An informational, malformed or over-budget card is not.
	Pending bool
	// DropDraft tells the page script that the server holds this card's
	// answer (in flight) or the card is settled: the browser's draft of it
	// may go (data-drop-draft). Drafts are never dropped on a click.
	DropDraft bool
	Settled   bool // rendered compact in the settled section

	// Group is the DOM id of the agent+session group the card belongs to,
	// GroupLabel its heading, SortKey its order among open cards
	// (lexicographic, ascending = more urgent).
	Group, GroupLabel, SortKey string

	// DetailsText is the summary of the card's Details disclosure.
	DetailsText string

	// Owed is set when this UI's answer was sent and got no reply yet
	// (inbox.Submission.Owed): the form is shown only behind "Answer
	// differently" (a second command, replacing this one), beside "Send
	// again" (the same command) when the relay is there. Nil otherwise.
	Owed *OwedView
	// Undo is set while this UI holds the card's answer for the undo
	// window (inbox.Verdict.Undo): the card offers to take it back.
	Undo *UndoView

	// Routing is the team the card is routed to and the reminders and
	// escalations sent; nil when it is routed to none.
	Routing *RoutingView
	// RuleMiss is the rule that matched the request in all but its
	// connection, nil when none did.
	RuleMiss *RuleMissView

	// Claim is who is on the open question ("ann is on it · 2 min"), nil
	// when nobody is; ClaimControl the claim button, nil when the
	// operator may not claim it. Assigned is who it is assigned to.
	Claim        *ClaimView
	ClaimControl *ClaimControl
	Assigned     *AssignedView
	// OverClaim is the claimant a refused answer is to confirm answering
	// over: the form carries it back (ClaimFormName), so sending again
	// answers. "" otherwise.
	OverClaim string

	// BatchShape is the card's shape (inbox.Shape.ID) when it may join a
	// batch answer (inbox.Card.Selectable) from a UI that sends answers:
	// the page script offers "Select for a batch answer" while the page's
	// batch region has a form for the shape (never on the panel, which
	// has no region). "" otherwise.
	BatchShape string
}

// OwedView is what an open card offers while its answer is owed.
type OwedView struct {
	// Replaces is the owed answer's command id: the hidden field of the
	// form under "Answer differently" and of "Send again".
	Replaces string
	// AgainAction is the "Send again" form's action; "" when not offered
	// (the relay is away: it is sent again when it is back anyway).
	AgainAction, AgainLabel string
	// Summary is the "Answer differently" disclosure's summary, Warning
	// what it tells the operator first.
	Summary, Warning string
}

// AnsweredBy is who answered a settled card from this UI and when: the
// operator's name (as given at sign-in), the time posted (relative, the
// exact time for a title) and the answer's history entry.
type AnsweredBy struct {
	Lead  string // "Answered here by" (words.go)
	Who   string // the operator's name; the no-name words when none was given
	Named bool   // an operator name was given
	// AtISO is the time posted for <time datetime>, AtText it relative to
	// the page's now ("3 min ago"), AtTitle the exact time.
	AtISO, AtText, AtTitle string
	// HistoryURL is the answer's history entry ("" when History is off),
	// HistoryText its link text.
	HistoryURL, HistoryText string
	// Rule is the rule that sent the answer; nil for an operator's.
	Rule *RuleRef
	// Made is the rule the operator made from this answer; nil when
	// none was.
	Made *RuleMade
}

// Provenance is the card's origin, in the UI's own voice.
type Provenance struct {
	Agent        string
	Session      string
	SessionShort string
	Run          string
	RunShort     string
	Source       string
	SourceShort  string
	AskedISO     string // RFC 3339, for <time datetime>; empty when unknown
	AskedRel     string // "3 min ago"
	AskedTitle   string // exact time in words, for title
	Capture      string // capture level name
	Request      string // the request id (the event's subject)
	RequestShort string
	Card         string // the inbox card id
	AskedLead    string // the word before AskedRel on the provenance line: "asked"
	Severity     string // set only when warning or above
	Reach        inbox.Reach
	// ReachKind is data-reach: yes (connected, takes answers), no-control
	// (connected, takes no answers over the relay), ambiguous, no (not
	// connected), unknown (no roster); "" shows nothing (watch-only).
	ReachKind string
	ReachText string     // ReachKind in words (words.go)
	Deadline  *Countdown // nil when the request has no expires_at
}

// Countdown is a live deadline: the browser ticks it, the server renders
// its value at Now.
type Countdown struct {
	ISO    string // RFC 3339 deadline (data-deadline, <time datetime>)
	Text   string // "4:59 left", "Deadline passed"
	Title  string // exact deadline in words
	Soon   bool   // under a minute left (amber)
	Passed bool
	// PassedText is what the countdown says once the script has counted
	// it down to zero (data-passed-text): the server's words. The script
	// locks nothing: the inbox sweep settles the card at its deadline
	// and the push stream brings its locked version.
	PassedText string
	// LeftText is how the script says the time left ("%s left", the %s
	// its clock, data-left-text): the server's words too.
	LeftText string
}

// Prompt is the agent's question.
type Prompt struct {
	ID          string // element id of the quoted block
	Text        string // line breaks kept (the CSS preserves them); at most Options.PromptBytes
	Long        bool   // collapsed behind "Show all" when the browser runs the JS
	Placeholder bool   // a structural placeholder, not the agent's words
	// Cut is set when Text is only the start of the prompt: the rest is
	// fetched by "Show all" (budget.go).
	Cut *PromptCut
	// Blocks is Text read as Markdown (package markdown), without the
	// line that became the card's title when it stood alone; empty when
	// the title is the whole prompt. Unset for a placeholder prompt,
	// which is shown as Text.
	Blocks []markdown.Block
}

// Note is one of the UI's notes on a card (not a feed notice: those are
// the page's Notices). Tone is "info", "warning" or "error".
type Note struct {
	Tone, Text string
	Agent      []string // the agent text inside Text (a name)
	Spans      []Span   // Text split at Agent (set by safeCard)
}

// Card builds the view of one card at opts.Now, its agent text made safe
// to show (text.go).
func Card(c inbox.Card, opts Options) CardView {
	v := card(c, opts)
	safeCard(&v)
	return v
}

func card(c inbox.Card, opts Options) CardView {
	base := root(opts.BasePath)
	id := string(c.ID)
	// Everything below reads the card's verdict: the domain decides
	// whether and how it may be answered, its state line and who
	// answered it; the view only words it.
	vd := c.Verdict(opts.Now, opts.Viewer)
	placeholder := vd.Placeholder
	v := CardView{
		ID:          id,
		DOMID:       "card-" + id,
		Version:     c.Version,
		Kind:        c.Request.Kind,
		Question:    question(c, vd, opts),
		ErrorsID:    id + "-errors",
		DetailsText: words.card["details"],
	}
	v.Group, v.GroupLabel = groupOf(c)
	v.SortKey = sortKey(c, vd)
	v.Prov = provenance(c, vd, opts)
	v.Routing = routingOf(vd.Routing, opts.Now)
	v.Open, v.Settled, v.Pending = vd.Open, vd.Settled, vd.Pending
	v.Answered = answeredBy(c, vd, base, opts)
	v.State = cardState(c, vd, v.Answered, opts)
	v.State.GivesWay = v.Open && givesWay[v.State.Kind]
	if vd.Submission != nil && (opts.Operator == "" || vd.Submission.By == opts.Operator) {
		// Only the operator who sent it may take it back.
		v.Undo = undoView(c, vd, base, v.State.Values)
	}
	if v.Undo != nil {
		v.Undo.Question = v.Title
	}
	v.Claim, v.Assigned = claimOf(vd, opts), assignedOf(vd, opts)
	v.ClaimControl = claimControl(id, vd, v.Claim, opts)
	v.OverClaim = overClaim(vd, opts.Problems)

	if vd.NoForm {
		// Nothing to offer as a form: a malformed request, or one with
		// more controls than the inbox shows (never rendered as a huge
		// form); its state line says why.
		v.Errors = form.Unlinked(c.Request, opts.Problems, placeholder)
		return v
	}
	kept := opts.Input
	if kept == nil && vd.Submission != nil {
		kept = vd.Submission.Form
	}
	answerable := vd.Answerable
	if vd.Owed {
		// Sent, no reply: a different answer only explicitly, behind
		// "Answer differently" (components).
		v.Owed, answerable = owedView(vd, base, id), true
	}
	answerProbs, ruleProbs := splitRuleProblems(opts.Problems)
	f, errs := form.Build(form.Spec{
		Card: id, Request: c.Request, Action: base + "/cards/" + url.PathEscape(id) + "/answer", Token: opts.Token,
		Answerable: answerable, Kept: kept, Problems: answerProbs, Placeholder: placeholder,
	})
	noteWords(f)
	if f != nil && f.Answerable && opts.Rules && v.Owed == nil && vd.RuleMaker {
		f.Rule = ruleMaker(c, id, opts.PromptBytes, opts.Input, ruleProbs)
		f.Rule.RulesURL = base + "/rules"
		f.Rule.Preview = opts.Preview
		if f.Rule.Preview != nil {
			f.Rule.Open = true
		}
		for i := range f.Options {
			o := &f.Options[i]
			o.Rule = true
			o.Head, o.Once = splitOnce(o.Label)
		}
		errs = append(errs, ruleErrorLinks(f.Rule)...)
	} else {
		// No rule part on this card (it offers none): a post that asked
		// for a rule anyway still reads why it was refused.
		for _, p := range ruleProbs {
			errs = append(errs, form.ErrorLink{Href: "#" + v.DOMID, Message: p.Message, Field: "Rule"})
		}
	}
	v.Errors = errs
	v.DropDraft = vd.DropDraft
	if vd.Settled || vd.Locked {
		// A settled card shows its outcome, an answer in flight shows
		// what was sent: not the controls (and no control to jump to).
		f = nil
		v.Errors = form.Unlinked(c.Request, opts.Problems, placeholder)
	}
	v.Form = f
	v.Notes = cardNotes(c, vd, opts)
	v.RuleMiss = ruleMiss(c, vd, base)
	if vd.Batchable {
		v.BatchShape = c.Shape.ID()
	}
	return v
}

// cardState is the card's state line as the card shows it, beside who
// answered it (answeredBy's, nil when nobody did).
func cardState(c inbox.Card, vd inbox.Verdict, answered *AnsweredBy, opts Options) StateView {
	if answered == nil {
		return stateLine(c, vd, opts.Now, opts.Operator, opts.Reachable)
	}
	// The line under the state names who sent it, when, and where it
	// is in History: the state line says only how it was answered.
	anon, ans := vd, *vd.Answered
	ans.By, anon.Answered = "", &ans
	if answered.Rule != nil && ans.Via == aep.ViaControl {
		// Sent over control by a rule of this UI, not "from this page":
		// nobody pressed anything.
		ans.Via = viaRule
	}
	return stateLine(c, anon, opts.Now, opts.Operator, opts.Reachable)
}

// CardState is card c's state line as its card shows it for opts: what
// a page that lists the card without drawing it (a batch's result) says
// of it, in the card's own words.
func CardState(c inbox.Card, opts Options) StateView {
	vd := c.Verdict(opts.Now, opts.Viewer)
	return cardState(c, vd, answeredBy(c, vd, root(opts.BasePath), opts), opts)
}

// owedView is what an open card offers while this UI's answer is owed
// (sent, no reply yet): the verdict's Owed says when.
func owedView(vd inbox.Verdict, base, id string) *OwedView {
	o := &OwedView{Replaces: vd.OwedCommand, Summary: words.flow["differently"], Warning: words.flow["differently-warning"]}
	if vd.SendAgain {
		o.AgainAction = base + "/cards/" + url.PathEscape(id) + "/again"
		o.AgainLabel = words.flow["send-again"]
	}
	return o
}

// givesWay are the state lines of an open card that the removed-card
// text replaces (an answer in flight keeps its line).
var givesWay = map[string]bool{"pending": true, "routed": true, "rejected": true, "failed": true, "undone": true}

// cardNotes are the UI's notes for an open card, from its verdict.
func cardNotes(c inbox.Card, vd inbox.Verdict, opts Options) []Note {
	if !vd.Open || errors.Is(vd.Closed, inbox.ErrMalformed) || errors.Is(vd.Closed, inbox.ErrInformational) {
		return nil
	}
	var n []Note
	if errors.Is(vd.Refusal, inbox.ErrWatchOnly) {
		n = append(n, Note{Tone: "info", Text: words.note["watch-only"]})
	} else if errors.Is(vd.Refusal, inbox.ErrReadOnly) {
		n = append(n, Note{Tone: "info", Text: words.note["read-only"]})
	} else if !vd.Locked {
		switch opts.Reachable {
		case inbox.ReachNotConnected:
			n = append(n, Note{Tone: "warning", Text: words.note["not-connected"]})
		case inbox.ReachNoControl:
			n = append(n, Note{Tone: "warning", Text: words.note["no-control"]})
		case inbox.ReachAmbiguous:
			n = append(n, Note{Tone: "warning", Text: words.note["ambiguous"]})
		}
	}
	shown := vd.Answering // on the state line, unless this UI's own answer is
	for _, r := range vd.Others {
		if shown != nil && r.CommandID == shown.CommandID {
			continue
		}
		who := senderOf(&r)
		if who == "" {
			who = words.note["another"]
		}
		key := "answering"
		switch {
		case r.Ack == inbox.SubmissionRejected:
			key = "refused-other"
		case r.Ack == "" && r.Silent:
			key = "unacked-other"
		}
		if r.Own {
			n = append(n, Note{Tone: "info", Text: words.note[key+"-here"]})
			continue
		}
		tone := "info"
		if r.InFlight() {
			tone = "warning"
		}
		n = append(n, Note{Tone: tone, Text: fmt.Sprintf(words.note[key], who), Agent: []string{who}})
	}
	return n
}

// senderOf is who sent another sender's command, as it names them; "" when
// it names no one.
func senderOf(r *inbox.Responder) string {
	if r.By != "" {
		return Name(r.By)
	}
	return Name(r.Agent)
}

// questionOf reads the prompt as Markdown: its first line, without
// markup, becomes the card's title, the rest what the quote shows.
func questionOf(v *Question, cache *markdown.Cache) {
	opts := markdown.Options{Clean: Text}
	var d *markdown.Doc
	if cache != nil {
		d = cache.Parse(v.Prompt.Text, opts)
	} else {
		d = markdown.Parse(v.Prompt.Text, opts)
	}
	line, rest := d.FirstLine()
	if line == "" {
		v.Prompt.Blocks = d.Blocks
		return
	}
	if r := []rune(line); len(r) > GistRunes {
		// A first line too long for a heading stays whole in the quote.
		line, rest = string(r[:GistRunes-1])+"…", d.Blocks
	} else {
		v.TitleSpans = d.FirstLineSpans()
	}
	v.Title, v.TitleAgent, v.Prompt.Blocks = line, true, rest
}

// kindTitle names a request kind in the UI's words.
func kindTitle(kind string) string {
	switch kind {
	case aep.KindForm:
		return "Form"
	case aep.KindPermission:
		return "Permission request"
	case aep.KindInput:
		return "Question"
	case aep.KindReview:
		return "Review"
	case aep.KindAuth:
		return "Sign-in request"
	default:
		return "Request"
	}
}

// GistRunes is the longest card title taken from a prompt, in runes: a
// longer first line stays whole in the quote, and the title is cut.
const GistRunes = 160

// longPrompt reports whether a prompt is long enough to collapse.
func longPrompt(p string) bool {
	return len(p) > 600 || strings.Count(p, "\n") >= 8
}

// root is a base path ("/" or "/forms/", as web.CleanBasePath makes it)
// without its trailing slash, for joining with "/path": "" or "/forms".
func root(basePath string) string { return strings.TrimSuffix(basePath, "/") }

// answeredBy is who answered a settled card from this UI and when, from
// the verdict's Answered, or nil when the answer the agent recorded is
// not this UI's.
func answeredBy(c inbox.Card, vd inbox.Verdict, base string, opts Options) *AnsweredBy {
	ans := vd.Answered
	if !vd.Settled || ans == nil || !ans.Here {
		return nil
	}
	a := &AnsweredBy{
		Lead: words.answered["lead"], Who: ans.By, Named: ans.By != "",
		AtISO: ans.At.UTC().Format(htmlTime), AtText: relTime(ans.At, opts.Now), AtTitle: exactTime(ans.At),
	}
	a.Who = whoAnswered(ans.By, opts.Operator)
	a.Rule = ruleOf(opts.Rule, ans.By, ans.At)
	if a.Rule == nil && opts.RuleMade != nil {
		if m, ok := opts.RuleMade(string(c.ID)); ok {
			a.Made = &m
		}
	}
	if !opts.NoHistory && !opts.Panel && ans.CommandID != "" {
		// The session's history holds the entry on its first page for
		// any recent answer; the anchor is the entry's row.
		a.HistoryURL = withQuery(base+"/history", url.Values{"session": {c.Key.Session}}) + "#" + HistoryAnchor(ans.CommandID)
		a.HistoryText = words.answered["history"]
	}
	return a
}

// whoAnswered names who answered in the UI's words: "you (alice)" for
// the operator the card is drawn for, the no-name words when no name is
// known. The state line, "Answered here by" and the notification that
// replaces a pushed question all name them with it.
func whoAnswered(by, operator string) string {
	switch {
	case by == "":
		return words.answered["no-name"]
	case by == operator:
		return fmt.Sprintf(words.card["by-you"], by)
	}
	return by
}
