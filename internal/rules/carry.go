package rules

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Carry-over refusals: what Carry answers a post it does not act on.
var (
	// ErrCarryGone: the question is no longer in the inbox.
	ErrCarryGone = errors.New("rules: the question is gone")
	// ErrCarryStale: the card no longer shows that rule missing it (the
	// question was answered or closed, or the rule stopped or changed).
	ErrCarryStale = errors.New("rules: the card no longer shows that rule")
	// ErrCarryUnknown: the relay's roster names no single connection for
	// the question's session, so there is none to carry the rule to.
	ErrCarryUnknown = errors.New("rules: no connection is named for the question")
	// ErrCarryOff: this UI runs no rule (watch-only).
	ErrCarryOff = errors.New("rules: this UI runs no rule")
)

// Carried is what a carry-over did.
type Carried struct {
	// Rule is the rule carried over; Instance the connection it now
	// answers too.
	Rule     store.Rule
	Instance string
	// Answered is true when the rule's answer to the card it was carried
	// from is journaled and on its way; false leaves it to the
	// operators (the rule paused itself at its rate, its maker lost
	// access, or the request was answered meanwhile).
	Answered bool
}

// Carry lets rule id answer the connection that claims card card's
// session too, as operator by, and then answers that card (whose
// question and rule the operator saw: the card showed the rule missing
// it only for its connection) as the rule would have. It answers no
// other card: a request already waiting from that connection stays for
// the operators, and each later one is the rule's. It acts only while
// the card still shows rule id missing it by its connection.
func (r *Runner) Carry(ctx context.Context, id string, card inbox.CardID, by string) (Carried, error) {
	if !r.Enabled() {
		return Carried{}, ErrCarryOff
	}
	c, ok := r.in.Card(card)
	if !ok {
		return Carried{}, ErrCarryGone
	}
	now := r.cfg.Now()
	miss := c.Verdict(now, inbox.Viewer{}).RuleMiss
	switch {
	case miss == nil || miss.Rule != id:
		return Carried{}, ErrCarryStale
	case miss.Instance == "":
		return Carried{}, ErrCarryUnknown
	}
	rule, found, err := r.store.Rule(ctx, id)
	if err != nil {
		return Carried{}, err
	}
	if !found {
		return Carried{}, ErrCarryStale
	}
	// The rule as it is now must still match the card in all but its
	// connection (or answer that connection already: carried over from
	// another of its cards): a rule changed since the card was drawn is
	// not carried on what the operator saw of it before.
	ok, why := Match(rule, c, Seen{Question: r.see(c).Question, Instance: miss.Instance}, now)
	if !ok && why != whyInstance {
		r.in.SetRuleMiss(c.ID, nil)
		return Carried{}, ErrCarryStale
	}
	if !ok {
		if _, err := r.store.CarryRule(ctx, id, miss.Instance, by, now); err != nil {
			return Carried{}, err
		}
		r.cfg.Logger.Info("rule carried over to another connection", "rule", id, "name", rule.Name, "instance", miss.Instance, "operator", by, "card", string(c.ID))
		r.carried(id, miss.Instance, c.ID)
	}
	r.in.SetRuleMiss(c.ID, nil)
	r.mu.Lock()
	delete(r.misses, id)
	r.mu.Unlock()
	out := Carried{Rule: rule, Instance: miss.Instance}
	if !slices.Contains(out.Rule.Match.Carried, miss.Instance) {
		out.Rule.Match.Carried = append(out.Rule.Match.Carried, miss.Instance)
	}
	// This card, as any request the rule answers: the oldest rule that
	// matches it, its rate and its maker's access checked, claimed once.
	found2, ok2, err := r.find(ctx, c, true)
	if err == nil && ok2 {
		err = r.answer(ctx, found2, c)
	}
	if err != nil {
		return out, err
	}
	if now, ok := r.in.Card(c.ID); ok {
		s := now.Verdict(r.cfg.Now(), inbox.Viewer{}).Submission
		out.Answered = s != nil && ok2 && s.By == By(found2.ID)
	}
	return out, nil
}

// missed tells card c that rule matched its request in everything but
// the connection (instance, "" when the roster named none) that claims
// its session: its card says which rule, which connections, and offers
// the carry-over. Nothing is answered.
func (r *Runner) missed(c inbox.Card, rule store.Rule, instance string) {
	m := &inbox.RuleMiss{Rule: rule.ID, Name: rule.Name, Instances: append([]string{rule.Match.Instance}, rule.Match.Carried...), Instance: instance}
	if r.cfg.Connected != nil {
		m.Live = slices.ContainsFunc(m.Instances, r.cfg.Connected)
	}
	r.cfg.Logger.Info("rule matched all but the connection; the request waits for the operators", "rule", rule.ID, "card", string(c.ID), "instance", instance)
	r.mu.Lock()
	ms, ok := r.misses[rule.ID]
	if !ok || c.ReceivedAt.Before(ms.Since) {
		ms.Since = c.ReceivedAt
	}
	if !c.ReceivedAt.Before(ms.Last) {
		ms.Last, ms.Instance = c.ReceivedAt, instance
	}
	ms.Requests++
	r.misses[rule.ID] = ms
	r.mu.Unlock()
	r.in.SetRuleMiss(c.ID, m)
}

// Missed is what a rule matched only by its connection since it last
// answered a request (from this process).
type Missed struct {
	// Since is when the first such request came, Last the latest;
	// Instance the connection that claimed the latest ("" when the
	// roster named none).
	Since, Last time.Time
	Instance    string
	// Requests counts them.
	Requests int
}

// Misses returns, by rule id, the rules that matched a request in all
// but its connection since they last answered one, or were carried
// over: the Rules page flags them as not answering.
func (r *Runner) Misses() map[string]Missed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.misses)
}

// carried tells the other open cards rule id missed by connection
// instance (asked before it was carried over there from card from) that
// it answers that connection now: it still answers none of them unseen.
func (r *Runner) carried(id, instance string, from inbox.CardID) {
	r.eachMiss(func(c inbox.Card, m inbox.RuleMiss) {
		if m.Rule == id && m.Instance == instance && c.ID != from {
			m.Carried = true
			r.in.SetRuleMiss(c.ID, &m)
		}
	})
}

// forgetMisses takes rule id, paused or deleted, off the cards that name
// it as the rule that missed them by their connection.
func (r *Runner) forgetMisses(id string) {
	r.eachMiss(func(c inbox.Card, m inbox.RuleMiss) {
		if m.Rule == id {
			r.in.SetRuleMiss(c.ID, nil)
		}
	})
	r.mu.Lock()
	delete(r.misses, id)
	r.mu.Unlock()
}

// eachMiss calls f with each open card that a rule missed by its
// connection, and that miss.
func (r *Runner) eachMiss(f func(inbox.Card, inbox.RuleMiss)) {
	now := r.cfg.Now()
	for _, c := range r.in.Cards(inbox.Query{}) {
		if m := c.Verdict(now, inbox.Viewer{}).RuleMiss; m != nil {
			f(c, *m)
		}
	}
}
