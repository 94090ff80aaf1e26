package web

import (
	"context"
	"net/http"
	"time"

	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
)

// RuleLooks keeps when each operator last looked at the answers rules
// sent (the journal's store.RuleLooks): the header counts the ones
// after it.
type RuleLooks interface {
	RuleAnswers(ctx context.Context, operator string) (int, error)
	SawRuleAnswers(ctx context.Context, operator string, upTo time.Time) error
}

// ruleAnswers is the header's count of the requests rules answered since
// the request's operator last looked; nil when there are none, or no
// journal to count them in. An operator is their sign-in name: the count
// follows them from device to device; operators who gave no name (or a
// UI without sign-in) share one.
func (p *rulePages) ruleAnswers(r *http.Request) *view.RuleAnswers {
	if p.looks == nil {
		return nil
	}
	n, err := p.looks.RuleAnswers(r.Context(), operatorFrom(r.Context()))
	if err != nil {
		// The header goes without its count; the page is still the page.
		p.log.Warn("web: rule answers not counted", "err", err)
		return nil
	}
	return view.RuleAnswersOf(p.base, n)
}

// everyRuleAnswer reports whether History shows, from the newest, every
// answer any rule sent and nothing narrower: the list the header's count
// links to, whose sight resets it.
func everyRuleAnswer(f view.HistoryFilter, q store.HistoryQuery) bool {
	return f.Rule == view.HistoryRuleAny && q.After == "" &&
		(f == view.HistoryFilter{Rule: view.HistoryRuleAny})
}

// sawRuleAnswers records that the request's operator has seen the rules'
// answers up to the newest on page (nothing when it shows none): one a
// rule sends after the page was read stays counted.
func (p *rulePages) sawRuleAnswers(r *http.Request, page store.HistoryPage) {
	if p.looks == nil || len(page.Entries) == 0 {
		return
	}
	if err := p.looks.SawRuleAnswers(r.Context(), operatorFrom(r.Context()), page.Entries[0].Submission.At); err != nil {
		p.log.Warn("web: rule answers seen, not kept", "err", err)
	}
}

// ruleChoices are the rules the History filter offers, as the Rules page
// lists them; none without rules or when they cannot be read (the filter
// still offers any rule's answers).
func (p *rulePages) ruleChoices(ctx context.Context) []view.RuleChoice {
	if p.rules == nil {
		return nil
	}
	list, err := p.rules.Store().Rules(ctx)
	if err != nil {
		p.log.Warn("web: rules not read for the History filter", "err", err)
		return nil
	}
	out := make([]view.RuleChoice, 0, len(list))
	for _, r := range list {
		out = append(out, view.RuleChoice{ID: r.ID, Name: r.Name, Maker: r.Maker})
	}
	return out
}
