package view

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// StateView is a card's state line: what became of the request and of the
// operator's answer.
type StateView struct {
	ID   string // "{card}-state": replaced on its own by the browser when the card is being typed into
	Kind string // data-state: pending, routed, queued, peer-queued, sending, accepted, rejected, failed, answered, resolved, timed-out, expired, session-ended, info, malformed
	// Tone is the line's colour: "neutral", "progress", "success",
	// "warning" or "error".
	Tone string
	Text string // the UI's words; empty for a plain pending card
	// Agent are the agent's (or relay's) words inside Text (a name, a
	// reason); Spans is Text split at them, for the components to
	// isolate them (set by safeCard).
	Agent []string
	Spans []Span
	Quote string // the agent's or relay's own words (a reason, a detail), shown quoted
	// Values is the answer the line refers to: the one the operator sent
	// (while it is on its way, and after the agent rejected it or it
	// failed, so they can see what they chose), or the one
	// attention.answered recorded.
	Values []RecordedValue
	// Notes say how the values were read from the operator's input: Other
	// text sent as the choice it names (form.OtherReadings).
	Notes []Sentence
	// Withheld notes that some values were withheld by the answered
	// event's capture level (never shown as blank).
	Withheld string
	Busy     bool // an answer is in flight (a spinner when the JS runs)
	// GivesWay is true when the page script may replace this line with
	// a lock text (the deadline passed, the card left the inbox) while
	// the operator works in the card: an open card with no answer in
	// flight (data-gives-way).
	GivesWay bool
}

// RecordedValue is one line of a recorded answer.
type RecordedValue struct {
	Label       string
	Placeholder bool   // the label is a structural placeholder (an id)
	Value       string // empty when Withheld or Missing
	Withheld    bool   // withheld at the event's capture level
	Missing     bool   // no value recorded for this field
}

// stateLine words the card's state line, whose kind its verdict decided
// (inbox.Verdict.Line): this only says it.
func stateLine(c inbox.Card, vd inbox.Verdict, now time.Time, operator string, reach inbox.Reach) StateView {
	s := StateView{ID: string(c.ID) + "-state", Kind: string(vd.Line), Tone: "neutral"}
	placeholder := vd.Placeholder
	if vd.Settled {
		settledLine(&s, c, vd, placeholder, operator, now)
		return s
	}
	sub := vd.Submission
	switch vd.Line {
	case inbox.LineMalformed:
		s.Tone = "warning"
		s.Text = words.state["malformed"] + vd.Malformed
		s.Agent = []string{vd.Malformed}
	case inbox.LineInfo:
		s.Text = fmt.Sprintf(words.state["info"], strings.Join(c.Request.RespondVia, ", "))
		s.Agent = c.Request.RespondVia
	case inbox.LineOverBudget:
		s.Tone = "warning"
		s.Text = overBudgetText(c)
	case inbox.LineExpired:
		s.Tone = "warning"
		s.Text = words.state["expired-open"]
	case inbox.LineQueued:
		// Journaled, not yet on the relay: said plainly, never "sent".
		s.Tone, s.Busy = "progress", true
		s.Text = words.state["queued"]
		if sub.Reason == inbox.ReasonNoRoute {
			// Refused no-route: the relay is there, its agent is not.
			s.Text = words.state["queued-agent"]
		}
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
		s.Notes = otherNotes(c.Request, sub.Form, placeholder)
	case inbox.LineSending, inbox.LineAccepted:
		s.Tone, s.Busy = "progress", true
		s.Text = words.state[string(vd.Line)]
		if t := owedText(sub, reach); t != "" && vd.Line == inbox.LineSending {
			s.Text, s.Agent = t, []string{sub.By}
		} else if sub.Resumed {
			s.Text, s.Agent = resumedText(sub), []string{sub.By}
		}
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
		s.Notes = otherNotes(c.Request, sub.Form, placeholder)
	case inbox.LineHeld:
		s.Tone = "progress"
		s.Text = words.state["held"]
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
		s.Notes = otherNotes(c.Request, sub.Form, placeholder)
	case inbox.LineUndone:
		s.Text = words.state["undone"]
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
		s.Notes = otherNotes(c.Request, sub.Form, placeholder)
	case inbox.LineAnswering:
		// Another sender's answer (or one this UI sent before its
		// journal) is on its way: the form is locked, and this says why.
		r := vd.Answering
		s.Tone, s.Busy = "progress", true
		s.Text, s.Agent = answeringText(r)
		s.Values = recordedValues(c.Request, r.Answer, r.Capture, placeholder)
	case inbox.LinePeer:
		// Another instance's answer, on no feed yet: the form is locked,
		// and this says why and what was chosen.
		s.Tone, s.Busy = "progress", true
		s.Text = words.state["peer-queued"]
		s.Values = recordedValues(c.Request, vd.Peer.Answer, aep.CaptureFull, placeholder)
	case inbox.LineRejected:
		s.Tone = "error"
		s.Text = rejectedText(sub.Reason)
		s.Agent = []string{sub.Reason}
		s.Quote = sub.Detail
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
	case inbox.LineUnknown:
		s.Tone = "warning"
		s.Text, s.Agent = resumedText(sub), []string{sub.By}
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
	case inbox.LineFailed:
		if sub.Reason == inbox.ReasonReplaced {
			// Replaced by a later answer: that one is the card's; this
			// says only what became of this one (History has it).
			s.Tone = "warning"
			s.Text, s.Agent = resumedText(sub), []string{sub.By}
			break
		}
		s.Tone = "error"
		s.Text = failedText(sub.Reason)
		s.Agent = []string{sub.Reason}
		if ownReason[sub.Reason] {
			// The UI's own words (its respond path's): a note, never
			// quoted as if the agent or the relay said it.
			if sub.Detail != "" {
				s.Notes = append(s.Notes, Sentence{Text: sentenceCase(sub.Detail) + "."})
			}
		} else {
			s.Quote = sub.Detail
		}
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
	case inbox.LineNotSent:
		s.Tone = "warning"
		s.Text, s.Agent = resumedText(sub), []string{sub.By}
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
	case inbox.LineRouted:
		r := vd.Route
		s.Text = fmt.Sprintf(words.state["routed"], phrase(" to ", r.To), phrase(" via ", r.Via))
		s.Agent = []string{r.To, r.Via}
	}
	return s
}

// settledLine fills the state line of a settled card.
func settledLine(s *StateView, c inbox.Card, vd inbox.Verdict, placeholder bool, operator string, now time.Time) {
	if vd.Answered != nil {
		o := vd.Answered.Recorded
		s.Kind, s.Tone = "answered", "success"
		lead := words.state["answered"]
		if vd.Answered.Elsewhere {
			lead = words.state["elsewhere"]
		}
		// Who answered is the verdict's (this UI's operator for its own
		// answer, else who the agent recorded).
		s.Text, s.Agent = answeredText(lead, vd.Answered, o, operator, now)
		s.Values = recordedValues(c.Request, o.Answer, o.Capture, placeholder)
		if sub := vd.Submission; sub != nil && !vd.Answered.Elsewhere {
			// The recorded answer is this UI's: keep saying how its
			// Other text was read.
			s.Notes = otherNotes(c.Request, sub.Form, placeholder)
		}
		if sub := vd.Submission; sub != nil && sub.State == inbox.SubmissionSuperseded && vd.Answered.Elsewhere {
			s.Notes = append(s.Notes, Sentence{Text: resumedText(sub), Agent: []string{sub.By}})
		}
		if hasWithheld(s.Values) {
			s.Withheld = "Values withheld at capture " + o.Capture.String() + " are not shown."
		}
		if o.Malformed != "" {
			// Why the recorded answer did not decode: the UI's words.
			s.Notes = append(s.Notes, Sentence{Text: o.Malformed, Agent: []string{o.Malformed}})
		}
		return
	}
	switch vd.Line {
	case inbox.LineResolved:
		s.Kind, s.Tone = "resolved", "neutral"
		if t, ok := words.resolved[vd.Resolution]; ok {
			s.Text = t
		} else {
			s.Text = words.resolved[""]
		}
	case inbox.LineTimedOut:
		s.Kind, s.Tone = "timed-out", "warning"
		s.Text = words.state["timed-out"]
		if vd.TimeoutMS != nil {
			s.Text += " after " + formatDuration(time.Duration(*vd.TimeoutMS)*time.Millisecond)
		}
	case inbox.LineExpired:
		s.Kind, s.Tone = "expired", "warning"
		s.Text = words.state["expired"]
	case inbox.LineEnded:
		s.Kind, s.Tone = "session-ended", "neutral"
		s.Text = words.state["session-ended"]
	default:
		s.Kind = string(vd.Line)
		s.Text = fmt.Sprintf(words.state["settled"], vd.Line)
	}
	if sub := vd.Submission; sub != nil && (sub.State == inbox.SubmissionSuperseded || sub.State == inbox.SubmissionUnknown) {
		s.Notes = append(s.Notes, Sentence{Text: resumedText(sub), Agent: []string{sub.By}})
	}
	if vd.Malformed != "" {
		// The rule the request broke: the UI's words (with the agent's
		// ids in them, isolated), never quoted as the agent's.
		s.Notes = append(s.Notes, Sentence{Text: vd.Malformed, Agent: []string{vd.Malformed}})
	}
}

// ownReason are the failure reasons the UI itself gives (its respond
// path), whose detail is the UI's words, not the relay's or the agent's.
var ownReason = map[string]bool{inbox.ReasonTimeout: true, inbox.ReasonUnreachable: true}

// answeredText is the line of a recorded answer: "Answered by you
// (alice) from this page · 2 min ago", "Answered in the agent's own
// window", with the agent text inside it.
func answeredText(lead string, ans *inbox.Answered, o *inbox.Recorded, operator string, now time.Time) (string, []string) {
	text, agent := lead, []string{}
	who, elsewhere := ans.By, ans.Elsewhere
	if elsewhere {
		operator = "" // another's answer is never "you"
	}
	if who != "" {
		text += " by " + whoAnswered(who, operator)
		agent = append(agent, who)
	}
	switch via := ans.Via; {
	case via == "control" && elsewhere:
		text += " " + words.via["control-elsewhere"]
	case words.via[via] != "" && via != "":
		text += " " + words.via[via]
	case via != "":
		text += " " + fmt.Sprintf(words.via[""], via)
		agent = append(agent, via)
	}
	if at, err := time.Parse(time.RFC3339Nano, o.Time); err == nil && !now.IsZero() {
		text += fmt.Sprintf(words.card["ago"], relTime(at, now))
	}
	return text, agent
}

// sentenceCase starts s with a capital letter (the UI's own details
// are written as clauses).
func sentenceCase(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// otherNotes say which Other text of the operator's post was sent as a
// choice, naming the choice as the form shows it.
func otherNotes(req aep.Request, post url.Values, placeholder bool) []Sentence {
	var out []Sentence
	for _, r := range form.OtherReadings(req, post) {
		shown := r.Choice.Label
		if placeholder || shown == "" {
			shown = r.Choice.ID
		}
		text := strings.TrimSpace(r.Text)
		out = append(out, Sentence{Text: fmt.Sprintf(words.state["other-sent-as"], text, shown), Agent: []string{text, shown}})
	}
	return out
}

// recordedValues lists an answer for reading, labelled through the
// request's field specs and options. capture is the level the answer was
// recorded at: values above it were withheld and say so.
func recordedValues(req aep.Request, a aep.Answer, capture aep.Capture, placeholder bool) []RecordedValue {
	var out []RecordedValue
	if a.Option != "" {
		rv := RecordedValue{Label: "Option", Value: a.Option}
		for _, o := range req.Options {
			if o.ID == a.Option && o.Label != "" && !placeholder {
				rv.Value = o.Label
			}
		}
		out = append(out, rv)
	}
	if a.Text != nil {
		out = append(out, RecordedValue{Label: "Reply", Value: *a.Text})
	}
	if req.Kind == aep.KindForm {
		for _, f := range req.Fields {
			rv := RecordedValue{Label: f.Label, Placeholder: placeholder}
			if placeholder || rv.Label == "" {
				rv.Label = f.ID
			}
			v, ok := a.Values[f.ID]
			switch {
			case ok:
				rv.Value = formatValue(f, v, placeholder)
			case capture == aep.CaptureNone || (capture < aep.CaptureRedacted && mayHoldText(f)):
				// Below redacted an answer holding operator text is left
				// out of the event (aep.GateValues): say so, never "not
				// answered".
				rv.Withheld = true
			default:
				rv.Missing = true
			}
			out = append(out, rv)
		}
	}
	if len(out) == 0 && capture < aep.CaptureRedacted {
		// Text answers are redacted-level: an empty record at a lower level
		// was withheld, not blank.
		out = append(out, RecordedValue{Label: "Answer", Withheld: true})
	}
	return out
}

// mayHoldText reports whether a field's answer may be operator text,
// which capture below redacted withholds: a string, or a select with Other.
func mayHoldText(f aep.FieldSpec) bool {
	return f.Type == aep.FieldString || (f.Type == aep.FieldSelect && f.Other)
}

func hasWithheld(vs []RecordedValue) bool {
	for _, v := range vs {
		if v.Withheld {
			return true
		}
	}
	return false
}

// formatValue renders one answer value for reading.
func formatValue(f aep.FieldSpec, v any, placeholder bool) string {
	switch x := v.(type) {
	case string:
		if f.Type == aep.FieldSelect {
			return choiceText(f, x, placeholder)
		}
		return x
	case bool:
		if x {
			return "Yes"
		}
		return "No"
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				parts = append(parts, choiceText(f, s, placeholder))
				continue
			}
			parts = append(parts, formatValue(aep.FieldSpec{}, e, placeholder))
		}
		if len(parts) == 0 {
			return "None chosen"
		}
		return strings.Join(parts, ", ")
	case nil:
		return "(empty)"
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "(unreadable value)"
		}
		return string(b)
	}
}

// choiceText is a choice's label for a select value, or the Other text.
func choiceText(f aep.FieldSpec, id string, placeholder bool) string {
	for _, c := range f.Choices {
		if c.ID == id {
			if placeholder {
				// Labels withheld at capture: the id, said to be one,
				// as the form shows it ("Field 1: choice 1", not "1: 1").
				return "choice " + c.ID
			}
			if c.Label == "" {
				return c.ID
			}
			return c.Label
		}
	}
	return "Other: “" + id + "”"
}

// phrase returns prefix+s, or "" when s is empty.
func phrase(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func closeParen(s string) string {
	if s == "" {
		return ""
	}
	return ")"
}
