package inbox

import (
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
)

// Query narrows Cards; an empty field matches everything.
type Query struct {
	Agent   string // the event's agent attribute
	Session string // the session name
	Kind    string // the request's kind (form, permission, ...)
}

// Match reports whether q selects c (the same test Cards applies), for a
// subscriber deciding whether a changed card belongs to its view.
func (q Query) Match(c Card) bool { return q.match(&c) }

func (q Query) match(c *Card) bool {
	return (q.Agent == "" || c.Agent == q.Agent) &&
		(q.Session == "" || c.Key.Session == q.Session) &&
		(q.Kind == "" || c.Request.Kind == q.Kind)
}

// Cards returns copies of the cards q matches: open ones first, by soonest
// expires_at (cards without one after those with), then longest waiting;
// settled ones after, most recently settled first.
func (in *Inbox) Cards(q Query) []Card {
	in.mu.Lock()
	defer in.mu.Unlock()
	ens := make([]*entry, 0, len(in.byID))
	for _, en := range in.byID {
		if q.match(&en.card) {
			ens = append(ens, en)
		}
	}
	sort.Slice(ens, func(i, j int) bool { return listBefore(ens[i], ens[j]) })
	out := make([]Card, len(ens))
	for i, en := range ens {
		out[i] = cloneCard(&en.card)
	}
	return out
}

func listBefore(a, b *entry) bool {
	ao, bo := a.settledOrder == 0, b.settledOrder == 0
	if ao != bo {
		return ao
	}
	if !ao {
		return a.settledOrder > b.settledOrder
	}
	ae, be := a.card.ExpiresAt, b.card.ExpiresAt
	if ae.IsZero() != be.IsZero() {
		return !ae.IsZero()
	}
	if !ae.Equal(be) {
		return ae.Before(be)
	}
	if !a.card.ReceivedAt.Equal(b.card.ReceivedAt) {
		return a.card.ReceivedAt.Before(b.card.ReceivedAt)
	}
	return a.arrival < b.arrival
}

// Card returns a copy of the card with id, and whether it exists.
func (in *Inbox) Card(id CardID) (Card, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	en, ok := in.byID[id]
	if !ok {
		return Card{}, false
	}
	return cloneCard(&en.card), true
}

// headPrompt is how much of a prompt a head keeps: enough for the first
// line a row shows.
const headPrompt = 1 << 10

// Heads returns the cards q matches in Cards' order, each without its
// request's body: the prompt cut to its first headPrompt bytes (a
// substring: no copy), no fields, options or context, no submission,
// routes, responders or recorded answer. A page of thousands of requests
// is chosen from heads and copies in full (Card) only the few it renders
// as cards, so a page load costs one Card struct per request, not a deep
// copy of every request (Cards).
func (in *Inbox) Heads(q Query) []Card {
	in.mu.Lock()
	defer in.mu.Unlock()
	ens := make([]*entry, 0, len(in.byID))
	for _, en := range in.byID {
		if q.match(&en.card) {
			ens = append(ens, en)
		}
	}
	sort.Slice(ens, func(i, j int) bool { return listBefore(ens[i], ens[j]) })
	out := make([]Card, len(ens))
	for i, en := range ens {
		out[i] = head(&en.card)
	}
	return out
}

// head is c without its request's body (Heads).
func head(c *Card) Card {
	p := c.Request.Prompt
	if len(p) > headPrompt {
		n := headPrompt
		for n > 0 && !utf8.RuneStart(p[n]) {
			n-- // cut at a character's start, never inside one
		}
		p = p[:n]
	}
	h := Card{
		ID:            c.ID,
		Key:           c.Key,
		Version:       c.Version,
		Agent:         c.Agent,
		State:         c.State,
		AskedAt:       c.AskedAt,
		ReceivedAt:    c.ReceivedAt,
		ExpiresAt:     c.ExpiresAt,
		Informational: c.Informational,
		Malformed:     c.Malformed,
		OverBudget:    c.OverBudget,
		Capture:       c.Capture,
		Shape:         c.Shape,
		Request:       aep.Request{Kind: c.Request.Kind, Prompt: p, RespondVia: slices.Clone(c.Request.RespondVia)},
	}
	// What CanAnswer reads, and no more: whether an answer (this UI's or
	// another sender's) is on its way.
	if s := c.Submission; s != nil {
		h.Submission = &Submission{State: s.State, RecordedAt: s.RecordedAt}
	}
	for _, r := range c.Responders {
		h.Responders = append(h.Responders, Responder{CommandID: r.CommandID, Ack: r.Ack, Silent: r.Silent})
	}
	return h
}
