package agent

import (
	"fmt"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// interpret returns the answer the agent applies to req for the answer a
// command carried, or the problem that makes the command invalid. The
// problem becomes the nack's detail, so it never quotes the answer.
//
//   - A form with fields takes values, judged by the protocol core's
//     ValidateValues (the spec's MUST-reject rule only).
//   - A request with options takes an option id, or text naming one
//     (AEP-0008: trimmed, case-insensitive id, or exactly one label). On a
//     permission request unmatched text applies the refusing option with
//     the text kept as the reason, never the permissive one; on other kinds
//     it is a free-text answer.
//   - Anything else (a form without fields, kind other, input without
//     options) takes text.
func interpret(req aep.Request, refusing string, in aep.Answer) (aep.Answer, string) {
	if in.Option == "" && in.Text == nil && in.Values == nil {
		return aep.Answer{}, "the answer is empty: send option, text or values"
	}
	if req.Kind == aep.KindForm && len(req.Fields) > 0 {
		if in.Option != "" {
			return aep.Answer{}, "this form has no options: answer with values"
		}
		if in.Values == nil {
			return aep.Answer{}, "this form has fields: answer with values"
		}
		if probs := aep.ValidateValues(req.Fields, in.Values); len(probs) > 0 {
			return aep.Answer{}, problemsDetail(req.Fields, probs)
		}
		return aep.Answer{Values: in.Values, Text: in.Text}, ""
	}
	if in.Values != nil {
		return aep.Answer{}, "values answer a form with fields only"
	}
	if len(req.Options) > 0 {
		if in.Option != "" {
			if !hasOption(req.Options, in.Option) {
				return aep.Answer{}, "answer.option is not one of the request's option ids"
			}
			return aep.Answer{Option: in.Option, Text: in.Text}, ""
		}
		if id, ok := matchOption(req.Options, *in.Text); ok {
			// The matched word is the decision itself, not accompanying text.
			return aep.Answer{Option: id}, ""
		}
		if req.Kind == aep.KindPermission {
			if refusing == "" {
				return aep.Answer{}, "the text names none of the options"
			}
			return aep.Answer{Option: refusing, Text: in.Text}, ""
		}
		if strings.TrimSpace(*in.Text) == "" {
			return aep.Answer{}, "answer.text is empty"
		}
		return aep.Answer{Text: in.Text}, ""
	}
	if in.Option != "" {
		return aep.Answer{}, "this request has no options: answer with text"
	}
	if strings.TrimSpace(*in.Text) == "" {
		return aep.Answer{}, "answer.text is empty"
	}
	return aep.Answer{Text: in.Text}, ""
}

func hasOption(opts []aep.Option, id string) bool {
	for _, o := range opts {
		if o.ID == id {
			return true
		}
	}
	return false
}

// matchOption maps text to an option per AEP-0008: after trimming, a
// case-insensitive match of an option id, else of exactly one label.
func matchOption(opts []aep.Option, text string) (string, bool) {
	t := strings.TrimSpace(text)
	if t == "" {
		return "", false
	}
	for _, o := range opts {
		if strings.EqualFold(o.ID, t) {
			return o.ID, true
		}
	}
	match, n := "", 0
	for _, o := range opts {
		if strings.EqualFold(strings.TrimSpace(o.Label), t) {
			match, n = o.ID, n+1
		}
	}
	return match, n == 1
}

// problemsDetail names the fields that failed and why, by field id and
// problem code only: the operator's values never enter the detail.
func problemsDetail(fields []aep.FieldSpec, probs []aep.Problem) string {
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.ID] = true
	}
	parts := make([]string, 0, len(probs))
	for _, p := range probs {
		name := "answer"
		if p.Field != "" && known[p.Field] {
			name = fmt.Sprintf("field %q", p.Field)
		}
		code := p.Code
		if code == "" {
			code = "invalid"
		}
		parts = append(parts, name+": "+code)
	}
	return "values rejected: " + strings.Join(parts, "; ")
}
