// Package rules is the standing answers: an operator's "answer
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
	"unicode"
	"unicode/utf8"

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
	whyHidden   = "the question holds text its card does not show"
	whyQuestion = "another question"
	whyCompound = "the question chains a command the rule's text does not"
	whyTool     = "another tool"
	whyInstance = "another connection"
	whyScope    = "an unknown scope"
)

// Match reports whether rule r answers the request of card c, which
// shows s, at now, and if not, why not. It looks at the rule and the
// request only: whether the card can still be answered is the Runner's
// to check.
func Match(r store.Rule, c inbox.Card, s Seen, now time.Time) (bool, string) {
	m, req := r.Match, c.Request
	switch {
	case r.State != store.RuleActive:
		return false, whyState
	case !now.Before(r.Expires):
		return false, whyExpired
	case req.Kind != m.Kind:
		return false, whyKind
	case c.Verdict(now, inbox.Viewer{}).Placeholder:
		// The emitter withheld the labels (ids stand in for them): the
		// operator never saw what this request asks.
		return false, whyLabels
	case !slices.Equal(req.Options, m.Options):
		return false, whyOptions
	case !sameFields(req.Fields, m.Fields):
		return false, whyFields
	case len(req.Fields) > 0 && !Pins(m.Fields, r.Answer):
		return false, whyUnpinned
	case (m.Agent != "" || m.Scope != store.ScopeUnscoped) && c.Agent != m.Agent:
		// A scoped rule is always its agent's.
		return false, whyAgent
	case m.Scope != store.ScopeUnscoped && c.Tool != m.Tool:
		return false, whyTool
	case m.Session != "" && c.Key.Session != m.Session:
		return false, whySession
	case r.Answer.Option != "" && !slices.ContainsFunc(m.Options, func(o aep.Option) bool { return o.ID == r.Answer.Option }):
		return false, whyAnswer
	}
	if why := Asks(m, req.Kind, req.Prompt, s.Question); why != "" {
		return false, why
	}
	if !m.Answers(s.Instance) {
		// Last: the connection may take a roster read to know (the
		// Runner reads it only for a request that matches in all else).
		return false, whyInstance
	}
	return true, ""
}

// Asks reports whether a question of kind, prompt (raw) and q (as its
// card shows it) is within m's scope: "" when it is, else why not. A
// question holding text its card does not show is in no rule's scope.
func Asks(m store.RuleMatch, kind, prompt string, q Question) string {
	if q.Hidden {
		return whyHidden
	}
	pattern := m.Text
	switch m.Scope {
	case store.ScopeExact:
		// The same words: white space is compared as the eye reads a
		// paragraph, a line break as good as a space.
		if strings.Join(strings.Fields(q.Text), " ") != strings.Join(strings.Fields(m.Question), " ") {
			return whyQuestion
		}
		return ""
	case store.ScopePrefix:
		if m.Text == "" || !strings.HasPrefix(q.Text, m.Text) || !wordEnds(m.Text, q.Text[len(m.Text):]) {
			return whyQuestion
		}
	case store.ScopeContains:
		if m.Text == "" || !strings.Contains(q.Text, m.Text) {
			return whyQuestion
		}
	case store.ScopeAny:
	case store.ScopeUnscoped:
		// Made before scopes (paused at the upgrade, resumed by an
		// operator who read its scope): its own test, of the raw prompt.
		if m.PromptContains != "" && !strings.Contains(strings.ToLower(prompt), strings.ToLower(m.PromptContains)) {
			return whyPrompt
		}
		return ""
	default:
		return whyScope
	}
	if kind == aep.KindPermission && compound(q.Text, pattern) != "" {
		return whyCompound
	}
	return ""
}

// Shaped reports whether a request of kind, options and fields is of
// m's shape: what a rule compares besides the question, its agent and
// where it comes from.
func Shaped(m store.RuleMatch, kind string, options []aep.Option, fields []aep.FieldSpec) bool {
	return kind == m.Kind && slices.Equal(options, m.Options) && sameFields(fields, m.Fields)
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

// MatchOf is the match of a rule made from card c's request, which
// showed s: scope (store.ScopeExact unless the operator widened it, with
// text for ScopePrefix and ScopeContains), the card's agent, tool and
// the instance of its connection, and session when given.
func MatchOf(c inbox.Card, s Seen, scope, text, session string) store.RuleMatch {
	m := store.RuleMatch{
		Kind: c.Request.Kind, Options: slices.Clone(c.Request.Options), Fields: slices.Clone(c.Request.Fields),
		Agent: c.Agent, Session: session, Scope: scope, Question: s.Question.Text, Tool: c.Tool, Instance: s.Instance,
	}
	if scope == store.ScopePrefix || scope == store.ScopeContains {
		m.Text = text
	}
	return m
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
	switch m.Scope {
	case store.ScopeExact:
		name += fmt.Sprintf(" asking exactly “%s”", cut(m.Question, 80))
	case store.ScopePrefix:
		name += fmt.Sprintf(" starting “%s”", cut(m.Text, 80))
	case store.ScopeContains:
		name += fmt.Sprintf(" containing “%s”", cut(m.Text, 80))
	case store.ScopeAny:
		name += " of any question"
	case store.ScopeUnscoped:
		if m.PromptContains != "" {
			name += fmt.Sprintf(" containing “%s”", cut(m.PromptContains, 80))
		}
	}
	return cut(name, 200)
}

// LabelRunes is how much of a label or question a rule's words show, as
// a card cuts option labels.
const LabelRunes = 200

// ScopeWords says, in the operator's words, which questions a rule with
// match m answers: "exactly: …", "starting with: …", "containing: …",
// "any question of this shape from …". The question and text are cut
// at LabelRunes (the Rules page shows the question whole beside it).
func ScopeWords(m store.RuleMatch) string {
	switch m.Scope {
	case store.ScopeExact:
		return fmt.Sprintf("exactly: “%s”", cut(m.Question, LabelRunes))
	case store.ScopePrefix:
		return fmt.Sprintf("starting with: “%s”", cut(m.Text, LabelRunes))
	case store.ScopeContains:
		return fmt.Sprintf("containing: “%s”", cut(m.Text, LabelRunes))
	case store.ScopeAny:
		return "any question of this shape from " + cut(m.Agent, LabelRunes)
	case store.ScopeUnscoped:
		w := "any question of this shape"
		if m.PromptContains != "" {
			w = fmt.Sprintf("any question of this shape containing “%s” (any case, in the agent's raw text)", cut(m.PromptContains, LabelRunes))
		}
		return w + ", made before rules were scoped to the question"
	}
	return "an unknown scope (" + cut(m.Scope, 40) + "): it answers nothing"
}

// Cut is s cut to n characters, an ellipsis marking the cut.
func Cut(s string, n int) string { return cut(s, n) }

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

// sentenceEnd is what may follow a word at the end of a sentence or a
// clause without making it another word.
const sentenceEnd = "?!.,:;)]}'\"’”»…"

// wordEnds reports whether a question going on with rest after the
// words of a "starting with" scope (pattern) leaves the last of them
// whole: "npm test" starts "npm test -- --watch" and "npm test?", not
// "npm test-evil" or "npm test.js". A pattern ending in a space or a
// sign ends its word itself.
func wordEnds(pattern, rest string) bool {
	last, _ := utf8.DecodeLastRuneInString(pattern)
	if !unicode.IsLetter(last) && !unicode.IsDigit(last) && last != '_' {
		return true
	}
	next := strings.IndexFunc(rest, unicode.IsSpace)
	if next < 0 {
		next = len(rest)
	}
	return strings.Trim(rest[:next], sentenceEnd) == ""
}
