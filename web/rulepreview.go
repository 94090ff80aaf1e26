package web

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// The rule preview reads History's requests of the last previewWindow,
// at most previewMax entries (newest first), so a preview costs a
// bounded read however long History is.
const (
	previewWindow = 30 * 24 * time.Hour
	previewMax    = 2000
	previewBeyond = 3
)

// previewRule answers a "Preview" post (form.NameRulePreview) to card
// id: nothing is sent; the card comes back with the operator's input
// kept and, in its rule maker, how many of History's recent requests
// each scope would have answered. A post, not a script's fetch: it works
// without JavaScript, and the page script takes it as any answer post
// (the card's fragment, in place).
func (p *pages) previewRule(w http.ResponseWriter, r *http.Request, id inbox.CardID, post url.Values, panel bool) {
	c, ok := p.in.Card(id)
	if !ok {
		p.gone(w, r, post, panel)
		return
	}
	spec, probs := form.ParseRule(post)
	prev, err := p.rules.rulePreview(r.Context(), c, spec, post)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	status := http.StatusOK
	if len(probs) > 0 {
		status = http.StatusUnprocessableEntity
	}
	refused := &view.Refused{Card: id, Input: post, Problems: probs, Preview: prev}
	if wantsFragment(r) {
		p.cardFragment(w, r, status, id, refused)
		return
	}
	p.page(w, r, status, panel, refused)
}

// previewChoice is one scope the rule maker offers, as a match.
type previewChoice struct {
	scope, words string
	m            store.RuleMatch
}

// rulePreview counts, for each scope, the requests History holds from
// the last previewWindow that a rule made from card c as spec says
// would have answered, and names up to previewBeyond that the exact
// question would not.
func (p *rulePages) rulePreview(ctx context.Context, c inbox.Card, spec form.RuleSpec, post url.Values) (*form.RulePreview, error) {
	prev := &form.RulePreview{Window: "the last 30 days",
		Note: "History keeps the requests answered from this UI; it keeps no tool or connection, so the rule may answer fewer than these."}
	if p.history == nil {
		prev.Note = "History is off on this UI: there is nothing to look back at."
		return prev, nil
	}
	choices := p.previewChoices(c, spec, post)
	chosen := cmp.Or(spec.Scope, store.ScopeExact)
	// The requests listed beyond the exact question: the chosen scope's,
	// or, when exact is chosen, the widest's (what widening would add).
	wide := chosen
	if wide == store.ScopeExact {
		wide = store.ScopeAny
		prev.BeyondTitle = "Of this shape, but not this question (only a wider choice would answer them):"
	} else {
		prev.BeyondTitle = "Your choice would have answered these, which are not this question:"
	}
	counts, err := p.tallyPreview(ctx, c, choices, wide, prev)
	if err != nil {
		return nil, err
	}
	for i, ch := range choices {
		prev.Choices = append(prev.Choices, form.PreviewChoice{Scope: ch.scope, Words: ch.words, Count: counts[i], Chosen: ch.scope == chosen})
	}
	return prev, nil
}

// previewChoices are the rule maker's scopes, narrow to wide, as rules
// made from card c with the texts posted (or, left empty, pre-filled).
func (p *rulePages) previewChoices(c inbox.Card, spec form.RuleSpec, post url.Values) []previewChoice {
	seen := rules.Seen{Question: rules.QuestionOf(c.Request.Prompt, p.prompt)}
	prefix, contains := rules.Lead(seen.Question)
	prefix = cmp.Or(strings.TrimSpace(post.Get(form.NameRulePrefix)), prefix)
	contains = cmp.Or(strings.TrimSpace(post.Get(form.NameRuleContains)), contains)
	session := ""
	if spec.Session {
		session = c.Key.Session
	}
	choices := []previewChoice{
		{scope: store.ScopeExact, words: "Exactly this question"},
		{scope: store.ScopePrefix, words: "Questions that start with “" + rules.Cut(prefix, rules.LabelRunes) + "”"},
		{scope: store.ScopeContains, words: "Questions that contain “" + rules.Cut(contains, rules.LabelRunes) + "”"},
		{scope: store.ScopeAny, words: "Any question of this shape from " + rules.Cut(c.Agent, rules.LabelRunes)},
	}
	texts := map[string]string{store.ScopePrefix: prefix, store.ScopeContains: contains}
	for i := range choices {
		choices[i].m = rules.MatchOf(c, seen, choices[i].scope, texts[choices[i].scope], session)
	}
	return choices
}

// tallyPreview reads History's requests from card c's agent of the last
// previewWindow (at most previewMax entries, a request answered twice
// counted once) and counts those each choice would have answered; the
// ones wide would answer and the exact question would not go in
// prev.Beyond, up to previewBeyond.
func (p *rulePages) tallyPreview(ctx context.Context, c inbox.Card, choices []previewChoice, wide string, prev *form.RulePreview) ([]int, error) {
	counts := make([]int, len(choices))
	base := strings.TrimSuffix(p.base, "/")
	done := map[inbox.RequestKey]bool{c.Key: true}
	q := store.HistoryQuery{Agent: c.Agent, Since: p.now().Add(-previewWindow)}
	for read := 0; read < previewMax; {
		page, err := p.history.History(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, e := range page.Entries {
			read++
			s := e.Submission
			if done[s.Key] {
				continue
			}
			done[s.Key] = true
			m := choices[0].m
			if !rules.Shaped(m, s.Kind, s.Options, s.Fields) || (m.Session != "" && s.Key.Session != m.Session) {
				continue
			}
			qs := rules.QuestionOf(s.Question, p.prompt)
			var exact, inWide bool
			for i, ch := range choices {
				if rules.Asks(ch.m, s.Kind, s.Question, qs) == "" {
					counts[i]++
					exact = exact || ch.scope == store.ScopeExact
					inWide = inWide || ch.scope == wide
				}
			}
			if inWide && !exact && len(prev.Beyond) < previewBeyond {
				prev.Beyond = append(prev.Beyond, form.PreviewEntry{
					Question: rules.Cut(qs.Text, rules.LabelRunes),
					URL:      base + "/history?" + url.Values{"session": {s.Key.Session}}.Encode() + "#" + view.HistoryAnchor(s.CommandID),
				})
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	return counts, nil
}
