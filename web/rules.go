package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// Rules is the standing answers (internal/rules.Runner): where they are
// kept, the rate pause, and how many requests each answered here. A
// watch-only UI's is not Enabled: it makes and runs no rule.
type Rules interface {
	Enabled() bool
	Store() rules.Store
	Config() rules.Config
	Answered() map[string]int64
	// See reads a card as its operators see it (its visible question,
	// its connection): what a rule made from it keeps.
	See(ctx context.Context, c inbox.Card) rules.Seen
	// Version moves on after every rule change made through Store.
	Version() uint64
	// Carry lets a rule answer the connection of a card it matched in
	// all but that (the card's notice), as an operator, and answers
	// that card by it.
	Carry(ctx context.Context, id string, card inbox.CardID, by string) (rules.Carried, error)
	// Misses are the rules that matched requests only by their
	// connection since they last answered, by rule id.
	Misses() map[string]rules.Missed
}

// rulePages is the rules' concern: the Rules page and its changes, the
// rule part of a card (what it offers, checks and makes, the rule behind
// an answer), its preview over History, and what the header counts of
// the answers rules sent; History's page and exports read it too, for
// the rules they name.
type rulePages struct {
	*site
	in        Inbox
	viewer    inbox.Viewer // makes no rule when watch-only
	prompt    int          // Config.PromptBytes: a rule never answers past it
	noHistory bool         // no journal to read History from
	rules     Rules        // nil: no rules
	history   History      // nil: History is off (the preview reads it)
	// looks keeps when each operator last looked at what rules
	// answered; nil: the header counts none.
	looks RuleLooks
}

// writeRuleAnswers writes aepforms_rule_answers_total, by rule id.
func writeRuleAnswers(b *strings.Builder, rs Rules) {
	if rs == nil {
		return
	}
	counts := rs.Answered()
	fmt.Fprintf(b, "# HELP aepforms_rule_answers_total Requests answered by a rule (standing answer), by rule id.\n# TYPE aepforms_rule_answers_total counter\n")
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(b, "aepforms_rule_answers_total{rule=%q} %d\n", id, counts[id])
	}
}

// makesRules reports whether this UI makes and runs rules: it has them
// and is not watch-only.
func (p *rulePages) makesRules() bool {
	return p.rules != nil && p.rules.Enabled() && p.viewer.Answers()
}

// rulesVersion is the rules' Version (0 without rules): a card drawn
// naming a rule is drawn again once it moves on.
func (p *rulePages) rulesVersion() uint64 {
	if p.rules == nil {
		return 0
	}
	return p.rules.Version()
}

// ruleLookup names the rule behind an answer a rule sent, read from the
// journal (deleted rules too); nil without rules.
func (p *rulePages) ruleLookup(ctx context.Context) view.RuleLookup {
	if p.rules == nil {
		return nil
	}
	st, base := p.rules.Store(), strings.TrimSuffix(p.base, "/")
	// One render reads each rule it names once, however many of its rows
	// (a History page, a card list) that rule answered.
	type seen struct {
		ref   view.RuleRef
		found bool
	}
	var mu sync.Mutex
	memo := map[string]seen{}
	return func(by string) (view.RuleRef, bool) {
		id, ok := rules.RuleOf(by)
		if !ok {
			return view.RuleRef{}, false
		}
		mu.Lock()
		defer mu.Unlock()
		if s, ok := memo[id]; ok {
			return s.ref, s.found
		}
		r, found, err := st.Rule(ctx, id)
		if err != nil {
			return view.RuleRef{}, false // not remembered: the next row tries again
		}
		s := seen{found: found}
		if found {
			s.ref = view.RuleRef{Name: r.Name, Maker: r.Maker, URL: base + "/rules#" + view.RuleAnchor(id), Gone: r.State == store.RuleDeleted,
				Changes: r.Changes}
		}
		memo[id] = s
		return s.ref, s.found
	}
}

// ruleProblems checks the rule part of an answer post to card c (when
// it asks for a rule) before anything is sent: its own controls, and
// that the rule would be a rule (a form's answer fills every field).
func (p *rulePages) ruleProblems(ctx context.Context, c inbox.Card, post url.Values) (form.RuleSpec, []aep.Problem) {
	spec, probs := form.ParseRule(post)
	if !spec.Make {
		return spec, nil
	}
	if !p.makesRules() || !c.Verdict(p.now(), p.viewer).RuleMaker {
		return spec, []aep.Problem{{Field: form.NameRule, Message: "No rule can be made from this card here; send the answer without “Keep answering”."}}
	}
	if rules.QuestionOf(c.Request.Prompt, p.prompt).Hidden {
		// It would answer nothing: no request holding text its card does
		// not show is answered by a rule.
		return spec, []aep.Problem{{Field: form.NameRule, Message: "No rule can be made from this question: it holds text its card does not show (past “Show all”, or hidden by its Markdown). Send the answer without “Keep answering”."}}
	}
	// At most --rule-max rules kept at once: the process stays bounded
	// however many an operator makes. This count refuses before anything
	// is sent; the journal's insert is the one that holds against makers
	// posting at once (makeRule).
	if max := p.rules.Config().MaxRules; max > 0 {
		n, err := p.rules.Store().RuleCount(ctx, p.now())
		switch {
		case err != nil:
			p.log.Error("web: rules not read to count them", "err", err)
			return spec, []aep.Problem{{Field: form.NameRule, Message: "The rules could not be read just now: try again, or untick “Keep answering”."}}
		case n >= max:
			return spec, []aep.Problem{{Field: form.NameRule, Message: ruleMaxMessage(max, n)}}
		}
	}
	if len(c.Request.Fields) > 0 {
		if answer, errs := form.ParseAnswer(c.Request, post); len(errs) == 0 && !rules.Pins(c.Request.Fields, answer) {
			probs = append(probs, aep.Problem{Field: form.NameRule, Message: "A rule must fill every field: fill them all, or untick “Keep answering”."})
		}
	}
	return spec, probs
}

// pendingRule is the rule an answer post asks for ("Answer like this
// from now on"), its problems checked, to be made once the answer is
// journaled (keepRule).
type pendingRule struct {
	spec form.RuleSpec
	card inbox.Card
}

// ruleOfPost reads the rule part of an answer post to card id: nil when
// it asks for none, or, when its problems are the operator's to fix, the
// post refused with them (at its controls, the input kept; the answer's
// own problems too, so one round fixes both). Nothing is sent until they
// are fixed.
func (p *rulePages) ruleOfPost(ctx context.Context, id inbox.CardID, post url.Values) (*pendingRule, *view.Refused) {
	if post.Get(form.NameRule) == "" {
		return nil, nil
	}
	c, ok := p.in.Card(id)
	if !ok {
		return nil, nil // the answer service says it is gone
	}
	spec, probs := p.ruleProblems(context.WithoutCancel(ctx), c, post)
	if len(probs) > 0 {
		if _, answerProbs := form.ParseAnswer(c.Request, post); len(answerProbs) > 0 {
			probs = append(answerProbs, probs...)
		}
		return nil, &view.Refused{Card: id, Input: post, Problems: probs}
	}
	if !spec.Make {
		return nil, nil
	}
	return &pendingRule{spec: spec, card: c}, nil
}

// keepRule makes the rule cp asks for from a's answer, just journaled,
// by maker; the error says why it was not kept (the answer is sent
// whatever it says).
func (p *rulePages) keepRule(ctx context.Context, cp cardPost, a answer.Answer, maker string) error {
	if cp.rule == nil || !a.Recorded() {
		return nil
	}
	made, err := p.makeRule(ctx, cp.rule.card, cp.rule.spec, a.Submission, maker)
	if err != nil {
		p.log.Error("web: rule not kept; the answer is sent", "card", string(cp.id), "err", err)
		return err
	}
	p.log.Info("rule made", "rule", made.ID, "name", made.Name, "operator", made.Maker)
	return nil
}

// makeRule keeps the rule spec describes, made by maker from the answer
// s sent to card c.
func (p *rulePages) makeRule(ctx context.Context, c inbox.Card, spec form.RuleSpec, s inbox.Submission, maker string) (store.Rule, error) {
	session := ""
	if spec.Session {
		session = c.Key.Session
	}
	m := rules.MatchOf(c, p.rules.See(ctx, c), spec.Scope, spec.Text, session)
	now := p.now()
	r := store.Rule{
		ID: ulid.Make().String(), Name: rules.Name(m, s.Answer), Match: m, Answer: s.Answer, Note: spec.Note, Maker: maker,
		Created: now, Expires: now.Add(spec.Expires), State: store.RuleActive, Card: string(c.ID),
	}
	return r, p.rules.Store().CreateRule(ctx, r, p.rules.Config().MaxRules)
}

// ruleMade returns, for a card's view, the rule made from a card's
// answer, read from the journal (once per card per render); nil without
// rules.
func (p *rulePages) ruleMade(ctx context.Context) func(card string) (view.RuleMade, bool) {
	if p.rules == nil {
		return nil
	}
	st, base := p.rules.Store(), strings.TrimSuffix(p.base, "/")
	return func(card string) (view.RuleMade, bool) {
		r, found, err := st.RuleFromCard(ctx, card)
		if err != nil || !found {
			return view.RuleMade{}, false
		}
		return view.RuleMade{Name: r.Name, Scope: rules.ScopeWords(r.Match), URL: base + "/rules#" + view.RuleAnchor(r.ID),
			Gone: r.State == store.RuleDeleted}, true
	}
}

// ruleMaxMessage is the refusal of one rule more than max,
// when n are kept.
func ruleMaxMessage(max, n int) string {
	return fmt.Sprintf("At most %d rules are kept at once, and there are %d: delete one on the Rules page, or untick “Keep answering”.", max, n)
}

// HeaderGo is the response header that tells the page script, beside
// the card it posted an answer from, where to take the operator next (a
// path of this UI): set when the answer was sent but its rule was not
// kept, the Rules page saying why.
const HeaderGo = "X-Aepforms-Go"

// ruleNotKept answers a post whose answer was sent (journaled and let go)
// but whose rule makeRule did not keep (err): another maker took the
// last place under --rule-max between this post's count and its insert,
// or the journal failed. The operator is taken to the Rules page, which
// says so (refusedNote): a 303 there, or to the page script its card, as
// for any answer, with HeaderGo naming the page.
func (p *pages) ruleNotKept(w http.ResponseWriter, r *http.Request, id inbox.CardID, err error) {
	why := "failed"
	var capped *store.RuleMaxError
	if errors.As(err, &capped) {
		why = "max"
	}
	target := p.base + "rules?refused=" + why
	if wantsFragment(r) {
		w.Header().Set(HeaderGo, target)
		p.cardFragment(w, r, http.StatusOK, id, nil)
		return
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// refusedNote is the Rules page's note for ?refused= (ruleNotKept): a
// fixed sentence for each known value, "" for anything else and on a UI
// without rules.
func (p *rulePages) refusedNote(why string) string {
	if p.rules == nil {
		return ""
	}
	switch why {
	case "max":
		return fmt.Sprintf("Your answer was sent, but its rule was not kept: at most %d rules are kept at once, and another was made at the same moment. Delete one here, then tick “Keep answering” on the next request like it.", p.rules.Config().MaxRules)
	case "failed":
		return "Your answer was sent, but its rule could not be kept just now (the journal failed). Tick “Keep answering” again on the next request like it."
	}
	return ""
}

// handleRules renders the Rules page.
func handleRules(pg *rulePages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pg.rulesPage(w, r, http.StatusOK, pg.refusedNote(r.URL.Query().Get("refused")))
	}
}

// ruleAnsweredShown is how many of the requests a rule answered the
// Rules page lists (its count says how many there are).
const ruleAnsweredShown = 5

func (p *rulePages) rulesPage(w http.ResponseWriter, r *http.Request, status int, problem string) {
	opts := view.RulesOptions{BasePath: p.base, Assets: p.assets, Theme: r.URL.Query().Get("theme"), SignedIn: p.signedIn,
		Operator: operatorFrom(r.Context()), Now: p.now(), CanChange: p.makesRules() && roleFrom(r.Context()).answers(), Answerer: !roleFrom(r.Context()).administers(), MaxRate: rules.DefaultMaxRate,
		Window: "1 minute", Problem: problem}
	var list []store.Rule
	if p.rules != nil {
		cfg := p.rules.Config()
		opts.MaxRate, opts.Window = cfg.MaxRate, rules.Words(cfg.RateWindow)
		var err error
		if list, err = p.rules.Store().Rules(r.Context()); err != nil {
			p.internalError(w, r, err)
			return
		}
		// What each rule answered: the newest few, read only for the
		// rules that answered any.
		opts.Answered, opts.NoHistory = map[string][]store.RuleUseRecord{}, p.noHistory
		opts.Misses = p.rules.Misses()
		for _, rule := range list {
			if rule.Uses == 0 {
				continue
			}
			if opts.Answered[rule.ID], err = p.rules.Store().RuleAnswered(r.Context(), rule.ID, ruleAnsweredShown); err != nil {
				p.internalError(w, r, err)
				return
			}
		}
	}
	v := view.Rules(list, opts)
	v.Page.RoutesURL = p.routesURL(r)
	buf, err := render.Rules(r.Context(), v)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// handleRuleChange pauses, resumes or deletes a rule (a plain form
// post), then shows the Rules page at the rule (post/redirect/get).
// Every replica reads the rules from the journal: the change holds
// everywhere at once.
func handleRuleChange(pg *rulePages, action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if !pg.makesRules() {
			pg.rulesPage(w, r, http.StatusConflict, "This UI is watch-only: it changes no rule.")
			return
		}
		st, now, ctx := pg.rules.Store(), pg.now(), r.Context()
		who := operatorFrom(ctx)
		var err error
		switch action {
		case "pause":
			_, err = st.SetRuleState(ctx, id, store.RulePaused, "", who, now)
		case "resume":
			_, err = st.SetRuleState(ctx, id, store.RuleActive, "", who, now)
		case "delete":
			_, err = st.DeleteRule(ctx, id, who, now)
		}
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		pg.log.Info("rule changed", "rule", id, "action", action, "operator", operatorFrom(ctx))
		target := strings.TrimSuffix(pg.base, "/") + "/rules"
		if action != "delete" {
			target += "#" + view.RuleAnchor(id)
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
	}
}
