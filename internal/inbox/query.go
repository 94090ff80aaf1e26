package inbox

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
)

// Query narrows Cards; an empty field matches everything.
type Query struct {
	Agent   string // the event's agent attribute
	Session string // the session name
	Kind    string // the request's kind (form, permission, ...)
	// Claim narrows to the open questions claimed by or assigned to
	// Operator, or assigned to one of Operator's Teams (ClaimMine), or
	// claimed by nobody (ClaimNone); "" is all.
	Claim    string
	Operator string
	// Teams are Operator's teams, comma-separated ("oncall,leads"; a
	// team's name holds no comma): a string, so a Query stays a map key.
	Teams string
}

// Claim filters (Query.Claim).
const (
	ClaimMine = "mine"
	ClaimNone = "unclaimed"
)

// Match reports whether q selects c (the same test Cards applies), for a
// subscriber deciding whether a changed card belongs to its view.
func (q Query) Match(c Card) bool { return q.match(&c) }

func (q Query) match(c *Card) bool {
	return (q.Agent == "" || c.Agent == q.Agent) &&
		(q.Session == "" || c.Key.Session == q.Session) &&
		(q.Kind == "" || c.Request.Kind == q.Kind) &&
		q.matchClaim(c)
}

// matchClaim reports whether c passes q's claim filter. A claim lapsed
// since the last Sweep still counts until that sweep ends it.
func (q Query) matchClaim(c *Card) bool {
	switch q.Claim {
	case ClaimMine:
		return c.State.Open() && q.Operator != "" &&
			(c.Claim.By == q.Operator || (!c.Assigned.Team && c.Assigned.To == q.Operator) || q.inTeam(c.Assigned))
	case ClaimNone:
		return c.State.Open() && c.Claim.By == ""
	}
	return true
}

// inTeam reports whether a is to one of q's Teams.
func (q Query) inTeam(a Assignment) bool {
	if !a.Team || a.To == "" {
		return false
	}
	for t := range strings.SplitSeq(q.Teams, ",") {
		if t == a.To {
			return true
		}
	}
	return false
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
	return cardBefore(a.settledOrder, a.arrival, &a.card, b.settledOrder, b.arrival, &b.card)
}

// cardBefore is listBefore on a card and its order numbers.
func cardBefore(aSettled, aArrival uint64, a *Card, bSettled, bArrival uint64, b *Card) bool {
	ao, bo := aSettled == 0, bSettled == 0
	if ao != bo {
		return ao
	}
	if !ao {
		return aSettled > bSettled
	}
	ae, be := a.ExpiresAt, b.ExpiresAt
	if ae.IsZero() != be.IsZero() {
		return !ae.IsZero()
	}
	if !ae.Equal(be) {
		return ae.Before(be)
	}
	if !a.ReceivedAt.Equal(b.ReceivedAt) {
		return a.ReceivedAt.Before(b.ReceivedAt)
	}
	return aArrival < bArrival
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
	// Copied under the lock, sorted after it: the feed, the posts and the
	// pushes wait for the copy only.
	in.mu.Lock()
	out := make([]Card, 0, len(in.byID))
	keys := make([]headKey, 0, len(in.byID))
	for _, en := range in.byID {
		if q.match(&en.card) {
			keys = append(keys, headKey{settledOrder: en.settledOrder, arrival: en.arrival, at: len(out)})
			out = append(out, head(&en.card))
		}
	}
	in.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		a, b := &keys[i], &keys[j]
		return cardBefore(a.settledOrder, a.arrival, &out[a.at], b.settledOrder, b.arrival, &out[b.at])
	})
	// Put each head where its key went, in place (following the
	// permutation's cycles).
	for i := range keys {
		if keys[i].at < 0 {
			continue
		}
		first := out[i]
		j := i
		for {
			from := keys[j].at
			keys[j].at = -1
			if from == i {
				out[j] = first
				break
			}
			out[j] = out[from]
			j = from
		}
	}
	return out
}

// WaitingHeads returns the heads (Heads) of the open cards that match q,
// in no order: what the choice of the next card to answer reads (it
// sorts them its own way), without the settled cards' copies or a sort
// under the lock.
func (in *Inbox) WaitingHeads(q Query) []Card {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]Card, 0, len(in.byID))
	for _, en := range in.byID {
		if en.card.State.Open() && q.match(&en.card) {
			out = append(out, head(&en.card))
		}
	}
	return out
}

// headKey is what listBefore orders a copied head by, and where it is.
type headKey struct {
	settledOrder, arrival uint64
	at                    int
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
		Claim:         c.Claim,
		Assigned:      c.Assigned,
	}
	// What CanAnswer reads, and no more: whether an answer (this UI's or
	// another sender's) is on its way, and whether it is held for Undo
	// (the page's undo bar).
	if s := c.Submission; s != nil {
		h.Submission = &Submission{State: s.State, RecordedAt: s.RecordedAt, HeldUntil: s.HeldUntil}
	}
	for _, r := range c.Responders {
		h.Responders = append(h.Responders, Responder{CommandID: r.CommandID, Ack: r.Ack, Silent: r.Silent})
	}
	if c.Peer != nil {
		h.Peer = &Submission{State: c.Peer.State}
	}
	return h
}
