package render

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// StateView is a card's state line: what became of the request and of the
// operator's answer.
type StateView struct {
	ID   string // "{card}-state": replaced on its own by the browser when the card is being typed into
	Kind string // data-state: pending, routed, sending, accepted, rejected, failed, answered, resolved, timed-out, expired, session-ended, info, malformed
	// Tone is the line's colour: "neutral", "progress", "success",
	// "warning" or "error".
	Tone  string
	Text  string // the UI's words; empty for a plain pending card
	Quote string // the agent's or relay's own words (a reason, a detail), shown quoted
	// Values is the answer the line refers to: the submitted one while
	// sending, the one attention.answered recorded after.
	Values []RecordedValue
	// Withheld notes that some values were withheld by the answered
	// event's capture level (never shown as blank).
	Withheld string
	Busy     bool // an answer is in flight (a spinner when the JS runs)
}

// RecordedValue is one line of a recorded answer.
type RecordedValue struct {
	Label       string
	Placeholder bool   // the label is a structural placeholder (an id)
	Value       string // empty when Withheld or Missing
	Withheld    bool   // withheld at the event's capture level
	Missing     bool   // no value recorded for this field
}

// stateLine derives a card's state line at now.
func stateLine(c inbox.Card, now time.Time) StateView {
	s := StateView{ID: string(c.ID) + "-state", Kind: "pending", Tone: "neutral"}
	placeholder := c.Capture <= aep.CaptureMetadata
	if !c.State.Open() {
		settledLine(&s, c, placeholder)
		return s
	}
	expired := !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt)
	sub := c.Submission
	switch {
	case c.Malformed != "":
		s.Kind, s.Tone = "malformed", "warning"
		s.Text = "This request is malformed and cannot be answered: " + c.Malformed
	case c.Informational || !c.Request.Controllable():
		s.Kind, s.Tone = "info", "neutral"
		s.Text = "For information: the agent takes its answer another way (" + strings.Join(c.Request.RespondVia, ", ") + "), not from here."
	case sub != nil && sub.State == inbox.SubmissionSending:
		s.Kind, s.Tone, s.Busy = "sending", "progress", true
		s.Text = "Sent, waiting for the agent"
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
	case sub != nil && sub.State == inbox.SubmissionAccepted:
		s.Kind, s.Tone, s.Busy = "accepted", "progress", true
		s.Text = "The agent accepted the answer; waiting for it to record it"
		s.Values = recordedValues(c.Request, sub.Answer, aep.CaptureFull, placeholder)
	case expired:
		s.Kind, s.Tone = "expired", "warning"
		s.Text = "The deadline has passed: this can no longer be answered."
	case sub != nil && sub.State == inbox.SubmissionRejected:
		s.Kind, s.Tone = "rejected", "error"
		s.Text = rejectedText(sub.Reason)
		s.Quote = sub.Detail
	case sub != nil && sub.State == inbox.SubmissionFailed:
		s.Kind, s.Tone = "failed", "error"
		s.Text = failedText(sub.Reason)
		s.Quote = sub.Detail
	case len(c.Routes) > 0:
		r := c.Routes[len(c.Routes)-1]
		s.Kind = "routed"
		s.Text = "Routed" + phrase(" to ", r.To) + phrase(" via ", r.Via) + "; still open"
	}
	return s
}

// settledLine fills the state line of a settled card.
func settledLine(s *StateView, c inbox.Card, placeholder bool) {
	if o := c.Recorded; o != nil {
		s.Kind, s.Tone = "answered", "success"
		lead := "Answered"
		if c.AnsweredElsewhere {
			lead = "Answered elsewhere"
		}
		s.Text = lead + phrase(" by ", o.By) + phrase(" via ", o.Via)
		s.Values = recordedValues(c.Request, o.Answer, o.Capture, placeholder)
		if hasWithheld(s.Values) {
			s.Withheld = "Values withheld at capture " + o.Capture.String() + " are not shown."
		}
		if o.Malformed != "" {
			s.Quote = o.Malformed
		}
		return
	}
	switch c.State {
	case inbox.StateResolved:
		s.Kind, s.Tone = "resolved", "neutral"
		switch c.Resolution {
		case aep.ResolutionAuto:
			s.Text = "Resolved by the agent on its own"
		case aep.ResolutionDismissed:
			s.Text = "Dismissed by the agent"
		default:
			s.Text = "Answered; the answer itself was not in the event stream"
		}
	case inbox.StateTimedOut:
		s.Kind, s.Tone = "timed-out", "warning"
		s.Text = "Timed out: the agent stopped waiting"
		if c.TimeoutMS != nil {
			s.Text += " after " + formatDuration(time.Duration(*c.TimeoutMS)*time.Millisecond)
		}
	case inbox.StateExpired:
		s.Kind, s.Tone = "expired", "warning"
		s.Text = "Expired: the deadline passed without an answer"
	case inbox.StateEnded:
		s.Kind, s.Tone = "session-ended", "neutral"
		s.Text = "The session ended before this was answered"
	default:
		s.Kind = string(c.State)
		s.Text = "Settled (" + string(c.State) + ")"
	}
	if c.Malformed != "" {
		s.Quote = c.Malformed
	}
}

// rejectedText says what a control.rejected reason means to the operator.
func rejectedText(reason string) string {
	switch reason {
	case aep.ReasonInvalid:
		return "The agent did not accept the answer. Correct it below and send it again."
	case aep.ReasonBusy:
		return "The agent was busy and did not take the answer. Send it again in a moment."
	case aep.ReasonRefused:
		return "The agent refused the answer."
	case aep.ReasonUnsupported:
		return "The agent does not take this kind of answer."
	case aep.ReasonUnauthorized:
		return "The agent does not take answers from this UI."
	default:
		return "The agent rejected the answer" + phrase(" (", reason) + closeParen(reason) + "."
	}
}

// failedText says why an answer did not reach the agent.
func failedText(reason string) string {
	switch reason {
	case "no-route":
		return "Not delivered: the agent is not connected. Your answer is kept."
	case "unauthorized":
		return "Not delivered: this UI has no control token for the relay."
	case "ambiguous":
		return "Not delivered: the relay could not tell which agent should get it. Your answer is kept."
	case "unsupported":
		return "Not delivered: the relay does not route answers for this request. Your answer is kept."
	case "timeout":
		return "No answer from the agent in time; it may still act."
	case "unreachable":
		return "Not sent; your answer is kept. The relay could not be reached."
	default:
		return "Not delivered" + phrase(" (", reason) + closeParen(reason) + ". Your answer is kept."
	}
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
			if placeholder || c.Label == "" {
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
