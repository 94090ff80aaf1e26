package view

import (
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// QuestionText is an agent's question as plain text (its Markdown read,
// the markup dropped, line breaks kept): how the history and its exports
// show it, never as raw Markdown.
func QuestionText(q string) string {
	if strings.TrimSpace(q) == "" {
		return q
	}
	if t := markdown.Parse(q, markdown.Options{Clean: Text}).PlainText(); t != "" {
		return t
	}
	return Text(q)
}

// AnswerWords is an answer as its card showed it, for the history's
// exports: "Label: value" per option, reply and field, joined by "; ",
// choices by their labels and Other text marked as typed
// ("Other: “eu-central”"), so the export reads without the form at
// hand. The ids the agent received stay in the export's own columns.
func AnswerWords(s inbox.Submission, a aep.Answer) string {
	req := aep.Request{Kind: s.Kind, Options: s.Options, Fields: s.Fields}
	if len(s.Fields) > 0 && req.Kind == "" {
		req.Kind = aep.KindForm
	}
	var parts []string
	for _, rv := range recordedValues(req, a, aep.CaptureFull, false) {
		switch {
		case rv.Withheld:
			parts = append(parts, rv.Label+": withheld")
		case rv.Missing:
			parts = append(parts, rv.Label+": not answered")
		default:
			parts = append(parts, rv.Label+": "+rv.Value)
		}
	}
	return strings.Join(parts, "; ")
}
