// Package rules is the standing answers (issue 26): an operator's "answer
// like this from now on", kept in the journal, matched against each new
// request, and applied through the same journal-first, exactly-once path
// as an operator's post.
package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// ByPrefix starts the operator name an answer sent by a rule carries
// (Submission.By, the command's agent attribute): "rule:" and the rule's
// id.
const ByPrefix = "rule:"

// By is the operator name of the answers rule id sends.
func By(id string) string { return ByPrefix + id }

// RuleOf returns the rule id an answer's operator name names, if any.
func RuleOf(by string) (string, bool) {
	id, ok := strings.CutPrefix(by, ByPrefix)
	return id, ok && id != ""
}

// Why a request does not match a rule, for tests and logs.
const (
	whyState    = "not active"
	whyExpired  = "expired"
	whyKind     = "another kind"
	whyLabels   = "labels are capture placeholders"
	whyOptions  = "another option set"
	whyFields   = "another field set"
	whyUnpinned = "the rule does not pin every field"
	whyAgent    = "another agent"
	whySession  = "another session"
	whyPrompt   = "the prompt lacks the text"
	whyAnswer   = "the answer is not among the options"
)

// Match reports whether rule r answers the request of card c at now, and
// if not, why not. It looks at the rule and the request only: whether the
// card can still be answered is the Runner's to check.
func Match(r store.Rule, c inbox.Card, now time.Time) (bool, string) {
	m, req := r.Match, c.Request
	switch {
	case r.State != store.RuleActive:
		return false, whyState
	case !now.Before(r.Expires):
		return false, whyExpired
	case req.Kind != m.Kind:
		return false, whyKind
	case c.Capture <= aep.CaptureMetadata:
		// The emitter withheld the labels (ids stand in for them): the
		// operator never saw what this request asks.
		return false, whyLabels
	case !slices.Equal(req.Options, m.Options):
		return false, whyOptions
	case !sameFields(req.Fields, m.Fields):
		return false, whyFields
	case len(req.Fields) > 0 && !Pins(m.Fields, r.Answer):
		return false, whyUnpinned
	case m.Agent != "" && c.Agent != m.Agent:
		return false, whyAgent
	case m.Session != "" && c.Key.Session != m.Session:
		return false, whySession
	case m.PromptContains != "" && !strings.Contains(strings.ToLower(req.Prompt), strings.ToLower(m.PromptContains)):
		return false, whyPrompt
	case r.Answer.Option != "" && !slices.ContainsFunc(m.Options, func(o aep.Option) bool { return o.ID == r.Answer.Option }):
		return false, whyAnswer
	}
	return true, ""
}

// Pins reports whether answer gives every field a value.
func Pins(fields []aep.FieldSpec, answer aep.Answer) bool {
	for _, f := range fields {
		v, ok := answer.Values[f.ID]
		if !ok || v == nil {
			return false
		}
		if s, isString := v.(string); isString && s == "" {
			return false
		}
		if l, isList := v.([]any); isList && len(l) == 0 {
			return false
		}
	}
	return true
}

// sameFields compares field sets by what the operator saw and what the
// answer's values mean: id, type, label, multi, other and choices, in
// order.
func sameFields(a, b []aep.FieldSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Type != y.Type || x.Label != y.Label || x.Multi != y.Multi || x.Other != y.Other ||
			!slices.Equal(x.Choices, y.Choices) || !sameBound(x.Min, y.Min) || !sameBound(x.Max, y.Max) {
			return false
		}
	}
	return true
}

func sameBound(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// MatchOf is the match of a rule made from card c's request, scoped to
// agent, session and prompt text when they are given.
func MatchOf(c inbox.Card, agent, session, promptContains string) store.RuleMatch {
	return store.RuleMatch{
		Kind: c.Request.Kind, Options: slices.Clone(c.Request.Options), Fields: slices.Clone(c.Request.Fields),
		Agent: agent, Session: session, PromptContains: promptContains,
	}
}

// Name is how the page and History call a rule: its answer in the
// request's words, and the kind of request it answers.
func Name(m store.RuleMatch, a aep.Answer) string {
	what := ""
	if a.Option != "" {
		what = a.Option
		for _, o := range m.Options {
			if o.ID == a.Option {
				what = o.Label
			}
		}
	}
	if len(a.Values) > 0 {
		parts := make([]string, 0, len(m.Fields))
		for _, f := range m.Fields {
			if v, ok := a.Values[f.ID]; ok {
				parts = append(parts, f.Label+": "+valueText(v))
			}
		}
		if what != "" {
			parts = append([]string{what}, parts...)
		}
		what = strings.Join(parts, ", ")
	}
	name := fmt.Sprintf("%s to %s requests", what, m.Kind)
	if m.PromptContains != "" {
		name += fmt.Sprintf(" containing “%s”", m.PromptContains)
	}
	return cut(name, 200)
}

func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = valueText(e)
		}
		return strings.Join(s, ", ")
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
