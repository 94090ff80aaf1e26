package inbox

import "slices"

// RuleMiss is a standing answer (a rule) that matched a request in
// everything but the connection that claims the request's session: the
// rule's agent asked through another connection than the rule answers
// (the agent restarted, or a second connection claims its name). It
// informs and decides nothing: the request waits for the operators, and
// its card says why the rule did not answer.
type RuleMiss struct {
	// Rule is the rule's id, Name how the pages call it.
	Rule, Name string
	// Instances are the connections the rule answers (the agent's
	// instance at hello), the one it was made for first.
	Instances []string
	// Instance is the connection that claims the request's session; ""
	// when the relay's roster names none, or more than one.
	Instance string
	// Live is true when a connection the rule answers was connected
	// when the request came: two connections claim the agent's name at
	// once.
	Live bool
	// Carried is true when the rule was set to answer Instance since (from
	// another card): it answers the later requests from there, not this
	// one, asked before.
	Carried bool
}

// SetRuleMiss sets card id's rule miss (nil: none); a change is
// published to the inbox's subscribers as any other. False when the
// card is not in the inbox.
func (in *Inbox) SetRuleMiss(id CardID, m *RuleMiss) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok {
		return false
	}
	if sameRuleMiss(en.card.RuleMiss, m) {
		return true
	}
	defer in.commit()
	en.card.RuleMiss = cloneRuleMiss(m)
	in.touch(en, true)
	return true
}

func sameRuleMiss(a, b *RuleMiss) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Rule == b.Rule && a.Name == b.Name && a.Instance == b.Instance && a.Live == b.Live && a.Carried == b.Carried && slices.Equal(a.Instances, b.Instances)
}

func cloneRuleMiss(m *RuleMiss) *RuleMiss {
	if m == nil {
		return nil
	}
	out := *m
	out.Instances = slices.Clone(m.Instances)
	return &out
}
