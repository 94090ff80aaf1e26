package view

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// RuleRef is the rule (a standing answer) that sent an answer,
// as a card and History name it: "Answered by rule ‘…’ set by alice",
// linking to the rule on the Rules page.
type RuleRef struct {
	Name  string
	Maker string // "" when the maker gave no name
	URL   string // {base}/rules#rule-{id}
	// Gone is true when the rule was deleted since (still named).
	Gone bool
	// Changes are the rule's pauses and resumes, oldest first
	// (store.Rule.Changes); ResumedBy, set per answer (ruleAt), is who
	// last resumed it before it sent that answer: the answer went out on
	// their say too.
	Changes   []store.RuleChange
	ResumedBy string
}

// RuleLookup returns the rule an answer's operator name stands for
// ("rule:{id}"), or false when it names an operator.
type RuleLookup func(by string) (RuleRef, bool)

// RuleAnchor is a rule's element id on the Rules page.
func RuleAnchor(id string) string { return "rule-" + id }

// ruleOf is by's rule through lookup, if any, as it stood when it sent
// an answer at at.
func ruleOf(lookup RuleLookup, by string, at time.Time) *RuleRef {
	if lookup == nil || by == "" {
		return nil
	}
	if r, ok := lookup(by); ok {
		r.ResumedBy = resumedBefore(r.Changes, at)
		return &r
	}
	return nil
}

// resumedBefore is who last resumed a rule before at, when its last
// change before at is a resume ("" when none is).
func resumedBefore(changes []store.RuleChange, at time.Time) string {
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.At.After(at) || c.Change == store.RuleChangeCarried {
			// Later, or a carry-over (it changes no state).
			continue
		}
		if c.Change != store.RuleChangeResumed {
			return ""
		}
		if c.By == "" {
			return words.answered["no-name"]
		}
		return c.By
	}
	return ""
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
// or previewed post's rule input and problems. The rule answers exactly
// this question unless the operator widens it; the wider scopes' texts
// are pre-filled from the question's command.
func ruleMaker(c inbox.Card, id string, budget int, kept url.Values, probs []aep.Problem) *form.RuleMaker {
	q := rules.QuestionOf(c.Request.Prompt, budget)
	prefix, contains := rules.Lead(q)
	m := &form.RuleMaker{ID: id + "-rule", Agent: c.Agent, Session: shortenID(c.Key.Session, idRunes),
		Question: rules.Cut(q.Text, questionRunes), Scope: form.ScopeExact, Prefix: prefix, Contains: contains,
		Permission: c.Request.Kind == aep.KindPermission, Hours: strconv.Itoa(form.RuleHoursDefault)}
	if kept != nil && (kept.Get(form.NameRule) != "" || kept.Get(form.NameRulePreview) != "") {
		m.Open, m.Make = true, kept.Get(form.NameRule) != ""
		m.BySess = kept.Get(form.NameRuleSession) != ""
		m.Note = kept.Get(form.NameRuleNote)
		switch sc := kept.Get(form.NameRuleScope); sc {
		case form.ScopeExact, form.ScopePrefix, form.ScopeContains, form.ScopeAny:
			m.Scope = sc
		}
		if _, ok := kept[form.NameRulePrefix]; ok {
			m.Prefix = kept.Get(form.NameRulePrefix)
		}
		if _, ok := kept[form.NameRuleContains]; ok {
			m.Contains = kept.Get(form.NameRuleContains)
		}
		if h := kept.Get(form.NameRuleHours); h != "" {
			m.Hours = h
		}
	}
	for _, p := range probs {
		m.Open = true
		switch p.Field {
		case form.NameRuleHours:
			m.HoursError = p.Message
		case form.NameRulePrefix, form.NameRuleContains:
			m.TextError = p.Message
		default:
			m.MakeError = p.Message
		}
	}
	return m
}

// questionRunes is how much of the question the rule maker repeats (the
// card above shows it whole).
const questionRunes = 600

// splitOnce parts an option's label into its head and a trailing " once"
// (any case), which a rule's button drops with the box ticked: "Allow
// once" reads "Allow, and always for this question".
func splitOnce(label string) (head, once string) {
	if n := len(label); n > 5 && strings.EqualFold(label[n-5:], " once") && strings.TrimSpace(label[:n-5]) != "" {
		return label[:n-5], label[n-5:]
	}
	return label, ""
}

// ruleErrorLinks are the rule part's lines of the error summary.
func ruleErrorLinks(m *form.RuleMaker) []form.ErrorLink {
	var out []form.ErrorLink
	if m.MakeError != "" {
		out = append(out, form.ErrorLink{Href: "#" + m.ID + "-make", Message: m.MakeError, Field: "Rule"})
	}
	if m.TextError != "" {
		href := "#" + m.ID + "-prefix"
		if m.Scope == form.ScopeContains {
			href = "#" + m.ID + "-contains"
		}
		out = append(out, form.ErrorLink{Href: href, Message: m.TextError, Field: "Rule: which questions"})
	}
	if m.HoursError != "" {
		out = append(out, form.ErrorLink{Href: "#" + m.ID + "-hours", Message: m.HoursError, Field: "Rule: expires after"})
	}
	return out
}
