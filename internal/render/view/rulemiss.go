package view

import (
	"net/url"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/rules"
)

// RuleMissView is an open card's notice of a rule that matched its
// request in everything but the connection that claims its session: which
// rule, the connections it answers and this one, and, for an operator
// who answers, the carry-over.
type RuleMissView struct {
	// Tone is "info", or "warning" when a connection the rule answers
	// is connected too (Live).
	Tone string
	// Rule is the rule's name, RuleURL where it is on the Rules page,
	// RuleID its id (the carry-over post's field).
	Rule, RuleURL, RuleID string
	// Agent is the agent's name; Instances the connections the rule
	// answers (the one it was made for first); Instance this
	// question's ("" when the relay names none).
	Agent     string
	Instances []string
	Instance  string
	// Live: a connection the rule answers is connected as well, so two
	// connections claim the agent's name at once.
	Live bool
	// Carried: the rule was set to answer Instance since this question
	// came (from another card); it answers the later ones from there.
	Carried bool
	// Action is the carry-over post's URL; "" when not offered (a
	// viewer, a card that cannot be answered now, no connection named).
	Action string
}

// ruleMiss is the notice of card c's verdict's rule miss, nil when
// none (or the card is in flight).
func ruleMiss(c inbox.Card, vd inbox.Verdict, base string) *RuleMissView {
	m := vd.RuleMiss
	if m == nil || vd.Locked || vd.Settled {
		return nil
	}
	v := &RuleMissView{Tone: "info", Rule: Marked(rules.Cut(m.Name, rules.LabelRunes)), RuleURL: base + "/rules#" + RuleAnchor(m.Rule), RuleID: m.Rule,
		Agent: Marked(rules.Cut(c.Agent, rules.LabelRunes)), Instance: Marked(rules.Cut(m.Instance, rules.LabelRunes)), Live: m.Live && !m.Carried, Carried: m.Carried}
	for _, in := range m.Instances {
		v.Instances = append(v.Instances, Marked(rules.Cut(in, rules.LabelRunes)))
	}
	if v.Live {
		v.Tone = "warning"
	}
	if vd.Answerable && m.Instance != "" {
		v.Action = base + "/cards/" + url.PathEscape(string(c.ID)) + "/carry"
	}
	return v
}
