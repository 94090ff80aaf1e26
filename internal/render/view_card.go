package render

import (
	"net/url"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// CardView is one card with everything the components need precomputed.
// Every string in it that came from an agent is plain text: the components
// escape it.
type CardView struct {
	ID      string // the inbox card id
	DOMID   string // "card-{id}": the card element's id, the push protocol's key
	Version uint64
	Kind    string // the request kind as given (data-kind)
	Title   string // the kind in the UI's words: "Form", "Permission request", ...

	Prov   Provenance
	Prompt Prompt
	// Gist is the prompt's first line, cut to GistRunes, for a settled
	// card that shows its question only behind a disclosure.
	Gist string
	// Placeholder is non-empty when the prompt and labels are structural
	// placeholders (capture metadata or none): the note to show, e.g.
	// "labels withheld at capture metadata".
	Placeholder string

	// Form is the card's answer form; nil when nothing can be shown as
	// a control (malformed request, nothing asked).
	Form *FormView

	State   StateView
	Notices []Notice // the UI's own notes on this card (watch-only, agent not connected, ...)

	// Errors is the error summary of a refused post on this card, in field
	// order, whatever the card shows: an open form's problems link to their
	// controls; a refusal of a card that shows no form (settled, in flight,
	// malformed, informational, expired) is a message without a link.
	// Empty when there is none. ErrorsID is the summary's element id,
	// "{cardID}-errors".
	Errors   []ErrorLink
	ErrorsID string

	Open    bool // the request is still open (pending or routed, deadline not passed)
	Settled bool // rendered compact in the settled section

	// Group is the DOM id of the agent+session group the card belongs to,
	// GroupLabel its heading, SortKey its order among open cards
	// (lexicographic, ascending = more urgent).
	Group, GroupLabel, SortKey string
}

// FormView is a card's form: its controls and how it is submitted.
type FormView struct {
	Action string // POST URL: {base}/cards/{id}/answer
	Token  string // hidden form token
	// Answerable is true when a submit is offered; when false the controls
	// are shown disabled (watch-only, sending, informational, settled).
	Answerable bool
	Fields     []FieldView
	Options    []OptionView // permission, review, input with options
	Reply      *ReplyView   // free-text reply: input, form without fields, unknown kind
	// SubmitLabel is the primary button's label ("Send answer"); empty when
	// the only submits are option buttons.
	SubmitLabel string
	// Kept is true when the controls hold input kept on the server (a
	// refused post, a submission): the browser must not restore a draft over it.
	Kept bool
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
	Severity     string // set only when warning or above
	Reach        inbox.Reach
	Deadline     *Countdown // nil when the request has no expires_at
}

// Countdown is a live deadline: the browser ticks it, the server renders
// its value at Now.
type Countdown struct {
	ISO    string // RFC 3339 deadline (data-deadline, <time datetime>)
	Text   string // "4:59 left", "Deadline passed"
	Title  string // exact deadline in words
	Soon   bool   // under a minute left (amber)
	Passed bool
}

// Prompt is the agent's question.
type Prompt struct {
	ID          string // element id of the quoted block
	Text        string // line breaks kept (the CSS preserves them)
	Long        bool   // collapsed behind "Show all" when the browser runs the JS
	Placeholder bool   // a structural placeholder, not the agent's words
}

// Notice is one UI note on a card. Tone is "info", "warning" or "error".
type Notice struct {
	Tone, Text string
}

// ErrorLink is one line of an error summary: the message and the id of
// the control it jumps to.
type ErrorLink struct {
	Href    string // "#{control id}"; empty for a problem with the whole answer
	Message string
	// Field names the field the problem is with ("Service name", or
	// "Field f_1" when labels are placeholders), so the summary line reads
	// on its own; empty for a whole-answer problem or when the message
	// already names the field.
	Field string
}

// OptionView is one option of a permission, review or input request.
type OptionView struct {
	Index       int
	Value       string // the option button's value: the option index
	Label       string
	AgentID     string // the option id, shown when the label is a placeholder
	Placeholder bool
	// Style is "primary" (the first non-deny option), "secondary" or
	// "deny" (a destructive choice: never the default).
	Style string
}

// ReplyView is a free-text reply control.
type ReplyView struct {
	Name, ID    string
	Label       string
	Required    bool
	Value       string
	Hint        string
	HintID      string
	Error       string
	ErrorID     string
	DescribedBy string
	Invalid     bool
	Disabled    bool
}

// Card builds the view of one card at opts.Now.
func Card(c inbox.Card, opts Options) CardView {
	base := cleanBase(opts.BasePath)
	id := string(c.ID)
	placeholder := c.Capture <= aep.CaptureMetadata
	v := CardView{
		ID:       id,
		DOMID:    "card-" + id,
		Version:  c.Version,
		Kind:     c.Request.Kind,
		Title:    kindTitle(c.Request.Kind),
		Prov:     provenance(c, opts),
		ErrorsID: id + "-errors",
		Prompt: Prompt{
			ID:          id + "-prompt",
			Text:        c.Request.Prompt,
			Long:        longPrompt(c.Request.Prompt),
			Placeholder: placeholder,
		},
	}
	if placeholder {
		v.Placeholder = "labels withheld at capture " + c.Capture.String()
	}
	v.Gist = gist(c.Request.Prompt)
	v.Group, v.GroupLabel = groupOf(c)
	v.SortKey = sortKey(c)

	expired := !c.ExpiresAt.IsZero() && !opts.Now.Before(c.ExpiresAt)
	v.Open = c.State.Open() && !expired
	v.Settled = !c.State.Open()
	v.State = stateLine(c, opts.Now)

	probs := problemsByField(c.Request, opts.Problems)
	if c.Malformed != "" {
		v.Errors = probs.unlinked(c.Request, placeholder)
		return v
	}
	kept := opts.Input
	if kept == nil && c.Submission != nil {
		kept = c.Submission.Form
	}
	inFlight := c.Submission != nil && v.Open &&
		(c.Submission.State == inbox.SubmissionSending || c.Submission.State == inbox.SubmissionAccepted)
	answerable := opts.CanSubmit && v.Open && !c.Informational && c.Request.Controllable() && !inFlight

	f := &FormView{
		Action:     base + "/cards/" + url.PathEscape(id) + "/answer",
		Token:      opts.Token,
		Answerable: answerable,
		Kept:       len(kept) > 0,
	}
	build := formBuilder{card: id, req: c.Request, kept: kept, probs: probs, disabled: !answerable, placeholder: placeholder}
	f.Fields = build.fields()
	f.Options = build.options()
	f.Reply = build.reply()
	if f.Reply != nil || len(f.Fields) > 0 {
		f.SubmitLabel = "Send answer"
	}
	if len(f.Fields) == 0 && len(f.Options) == 0 && f.Reply == nil {
		f = nil
	}
	if v.Settled || inFlight {
		// A settled card shows its outcome, an answer in flight shows
		// what was sent: not the controls.
		f = nil
	}
	if f != nil && f.Answerable {
		v.Errors = build.summary(f)
	} else {
		// No control to jump to: the controls are not shown, or shown
		// disabled (a disabled control cannot take focus).
		v.Errors = probs.unlinked(c.Request, placeholder)
	}
	v.Form = f
	v.Notices = cardNotices(c, opts, v.Open, inFlight)
	return v
}

// cardNotices are the UI's notes for an open card.
func cardNotices(c inbox.Card, opts Options, open, inFlight bool) []Notice {
	if !open || c.Malformed != "" || c.Informational || !c.Request.Controllable() {
		return nil
	}
	var n []Notice
	if !opts.CanSubmit {
		n = append(n, Notice{Tone: "info", Text: "Watch-only: this UI has no control token for the relay, so it cannot send answers."})
	} else if opts.Reachable.Known() && !opts.Reachable.TakesAnswers() && !inFlight {
		n = append(n, Notice{Tone: "warning", Text: "The agent is not connected: an answer sent now will not reach it."})
	}
	for _, r := range c.Responders {
		who := r.Agent
		if who == "" {
			who = "another sender"
		}
		switch r.Ack {
		case inbox.SubmissionRejected:
			n = append(n, Notice{Tone: "info", Text: "An answer from " + who + " was refused by the agent."})
		default:
			n = append(n, Notice{Tone: "warning", Text: "Someone else is answering: " + who + " sent an answer."})
		}
	}
	return n
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

// GistRunes is the longest gist of a prompt, in runes (the CSS may cut
// it shorter to one line).
const GistRunes = 160

// gist is a prompt's first non-blank line, cut to GistRunes.
func gist(p string) string {
	for line := range strings.SplitSeq(p, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > GistRunes {
				return string(r[:GistRunes-1]) + "…"
			}
			return line
		}
	}
	return ""
}

// longPrompt reports whether a prompt is long enough to collapse.
func longPrompt(p string) bool {
	return len(p) > 600 || strings.Count(p, "\n") >= 8
}

// cleanBase normalises a base path: "" or "/x/y" (no trailing slash).
func cleanBase(b string) string {
	b = strings.TrimRight(b, "/")
	if b != "" && !strings.HasPrefix(b, "/") {
		b = "/" + b
	}
	return b
}
