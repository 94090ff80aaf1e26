package view

import (
	"net/url"
	"strconv"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// RuleRef is the rule (standing answer, issue 26) that sent an answer,
// as a card and History name it: "Answered by rule ‘…’ set by alice",
// linking to the rule on the Rules page.
type RuleRef struct {
	Name  string
	Maker string // "" when the maker gave no name
	URL   string // {base}/rules#rule-{id}
	// Gone is true when the rule was deleted since (still named).
	Gone bool
}

// RuleLookup returns the rule an answer's operator name stands for
// ("rule:{id}"), or false when it names an operator.
type RuleLookup func(by string) (RuleRef, bool)

// RuleAnchor is a rule's element id on the Rules page.
func RuleAnchor(id string) string { return "rule-" + id }

// ruleOf is by's rule through lookup, if any.
func ruleOf(lookup RuleLookup, by string) *RuleRef {
	if lookup == nil || by == "" {
		return nil
	}
	if r, ok := lookup(by); ok {
		return &r
	}
	return nil
}

// RuleKind reports whether a rule can be made from an answer to req: a
// permission or review, a choice among options, or a form of fields.
func RuleKind(req aep.Request) bool {
	switch req.Kind {
	case aep.KindAuth:
		return false
	case aep.KindInput:
		return len(req.Options) > 0
	case aep.KindPermission, aep.KindReview:
		return true
	}
	return len(req.Options) > 0 || len(req.Fields) > 0
}

// splitRuleProblems parts a refused post's problems: the answer's, and
// the rule part's.
func splitRuleProblems(all []aep.Problem) (answer, rule []aep.Problem) {
	for _, p := range all {
		if form.IsRuleProblem(p) {
			rule = append(rule, p)
		} else {
			answer = append(answer, p)
		}
	}
	return answer, rule
}

// ruleMaker is card c's "Answer like this from now on…", with a refused
// post's rule input and problems.
func ruleMaker(c inbox.Card, id string, kept url.Values, probs []aep.Problem) *form.RuleMaker {
	// "Only from agent …" starts ticked: one Allow should not become a
	// standing Allow for every agent's request of that shape unless the
	// operator widens it on purpose.
	m := &form.RuleMaker{ID: id + "-rule", Agent: c.Agent, ByAgent: c.Agent != "", Session: shortenID(c.Key.Session, idRunes),
		Hours: strconv.Itoa(form.RuleHoursDefault)}
	if kept != nil && kept.Get(form.NameRule) != "" {
		m.Open, m.Make = true, true
		m.ByAgent, m.BySess = kept.Get(form.NameRuleAgent) != "", kept.Get(form.NameRuleSession) != ""
		m.Contains, m.Note = kept.Get(form.NameRuleContains), kept.Get(form.NameRuleNote)
		if h := kept.Get(form.NameRuleHours); h != "" {
			m.Hours = h
		}
	}
	for _, p := range probs {
		m.Open = true
		switch p.Field {
		case form.NameRuleHours:
			m.HoursError = p.Message
		case form.NameRuleContains:
			m.ContainsError = p.Message
		default:
			m.MakeError = p.Message
		}
	}
	return m
}

// ruleErrorLinks are the rule part's lines of the error summary.
func ruleErrorLinks(m *form.RuleMaker) []form.ErrorLink {
	var out []form.ErrorLink
	if m.MakeError != "" {
		out = append(out, form.ErrorLink{Href: "#" + m.ID + "-make", Message: m.MakeError, Field: "Rule"})
	}
	if m.ContainsError != "" {
		out = append(out, form.ErrorLink{Href: "#" + m.ID + "-contains", Message: m.ContainsError, Field: "Rule: question contains"})
	}
	if m.HoursError != "" {
		out = append(out, form.ErrorLink{Href: "#" + m.ID + "-hours", Message: m.HoursError, Field: "Rule: expires after"})
	}
	return out
}
