package agent

import (
	"fmt"

	"github.com/aepforms/aepforms/internal/aep"
)

// This file holds what the agent, as the adapter that owns the content,
// puts into its events at its capture level (AEP-0003 §9.1-9.4): full keeps
// the text, redacted passes it through the protocol core's redaction
// pipeline, metadata synthesizes the prompt and turns every label into its
// id (the structural placeholder of the [metadata*] exception).

// requestAt returns r as emitted at capture c. metaPrompt is the prompt
// synthesized from structure for capture metadata.
func requestAt(r aep.Request, metaPrompt string, c aep.Capture) aep.Request {
	out := r
	out.Options = append([]aep.Option(nil), r.Options...)
	out.Fields = make([]aep.FieldSpec, len(r.Fields))
	for i, f := range r.Fields {
		f.Choices = append([]aep.Choice(nil), f.Choices...)
		out.Fields[i] = f
	}
	if len(r.Fields) == 0 {
		out.Fields = nil
	}
	if c < aep.CaptureFull {
		out.Context = nil // [full]
	}
	var label func(id, text string) string
	switch {
	case c >= aep.CaptureFull:
		return out
	case c == aep.CaptureRedacted:
		out.Prompt = aep.Redact(r.Prompt)
		label = func(_, text string) string { return aep.Redact(text) }
	default:
		out.Prompt = metaPrompt
		label = func(id, _ string) string { return id }
	}
	for i := range out.Options {
		out.Options[i].Label = label(out.Options[i].ID, out.Options[i].Label)
	}
	for i := range out.Fields {
		f := &out.Fields[i]
		f.Label = label(f.ID, f.Label)
		for j := range f.Choices {
			f.Choices[j].Label = label(f.Choices[j].ID, f.Choices[j].Label)
		}
	}
	return out
}

// metadataPrompt is the generic structural prompt, "{agent} requests {kind}: {subject}"
// (AEP-0003 §9.2), with the scenario name as the subject.
func metadataPrompt(agent, kind, subject string) string {
	return fmt.Sprintf("%s requests %s: %s", agent, kind, subject)
}

// answerAt returns the applied answer as attention.answered may carry it at
// capture c: option always (an id), text at redacted or above (redacted at
// redacted), values gated per field type by the protocol core (which also
// redacts the free text among them at redacted).
func answerAt(fields []aep.FieldSpec, a aep.Answer, c aep.Capture) aep.Answer {
	out := aep.Answer{Option: a.Option}
	if a.Text != nil && c >= aep.CaptureRedacted {
		t := *a.Text
		if c == aep.CaptureRedacted {
			t = aep.Redact(t)
		}
		out.Text = &t
	}
	if a.Values != nil {
		out.Values = aep.GateValues(fields, a.Values, c)
	}
	return out
}

// textAt returns operator or agent free text as an event at capture c may
// carry it ([redacted] members): nil below redacted, redacted at redacted.
func textAt(s string, c aep.Capture) string {
	switch {
	case c >= aep.CaptureFull:
		return s
	case c == aep.CaptureRedacted:
		return aep.Redact(s)
	}
	return ""
}
