package store

import (
	"fmt"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// labelWords are the words the operator saw on s's card for its answer:
// the option pressed by its label, and each field answered by its label
// and its value's choice labels (a value that is no choice's id is the
// operator's Other text, kept as typed). History's search matches them,
// so an answer is found by what its card showed ("release/2.4"), not only
// by the hidden ids the agent receives. One line per word group.
func labelWords(s inbox.Submission) string {
	var b strings.Builder
	line := func(parts ...string) {
		for _, p := range parts {
			if p == "" {
				continue
			}
			b.WriteString("\n")
			b.WriteString(p)
		}
	}
	for _, o := range s.Options {
		if o.ID == s.Answer.Option {
			line(o.Label)
		}
	}
	for _, f := range s.Fields {
		v, ok := s.Answer.Values[f.ID]
		if !ok {
			continue
		}
		line(f.Label)
		for _, one := range valueList(v) {
			line(choiceLabel(f, one))
		}
	}
	return b.String()
}

// valueList is a field's value as strings: each of a multi select's, or
// the one value.
func valueList(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	case []string:
		return x
	case nil:
		return nil
	default:
		return []string{fmt.Sprint(x)}
	}
}

// choiceLabel is the label of f's choice id, or id itself when it is no
// choice's (Other text, a number, a boolean).
func choiceLabel(f aep.FieldSpec, id string) string {
	for _, c := range f.Choices {
		if c.ID == id {
			return c.Label
		}
	}
	return id
}
