package view

import (
	"net/url"
	"strconv"

	"github.com/aepforms/aepforms/internal/store"
)

// RuleAnswers is the header's count of the requests rules answered since
// the operator last looked (store.RuleLooks), linking to them in History
// (which, opened so, counts as looking).
type RuleAnswers struct {
	N    int
	Text string // "3 answered by rules"
	URL  string // {base}/history?rule=any
}

// HistoryRuleAny is the History filter's value for the answers any rule
// sent (?rule=any); a rule's id is that rule's.
const HistoryRuleAny = "any"

// RuleAnswersOf is the header's count for n answers (at most
// store.RuleAnswersMax, which reads "100+"); nil for none.
func RuleAnswersOf(basePath string, n int) *RuleAnswers {
	if n <= 0 {
		return nil
	}
	count := strconv.Itoa(n)
	if n >= store.RuleAnswersMax {
		count = strconv.Itoa(store.RuleAnswersMax) + "+"
	}
	text := count + " answered by rules"
	if n == 1 {
		text = "1 answered by a rule"
	}
	return &RuleAnswers{N: n, Text: text, URL: withQuery(root(basePath)+"/history", url.Values{"rule": {HistoryRuleAny}})}
}

// RuleChoice is one rule the History filter offers: its id, and its name
// and maker as the Rules page words them.
type RuleChoice struct {
	ID, Name, Maker string
}

// historyRuleChoices are the rule filter's choices: any answer, any
// rule's, then each rule's, the one in force selected (kept when it is
// no longer listed, by its id).
func historyRuleChoices(rules []RuleChoice, selected string) []HistoryChoice {
	out := []HistoryChoice{
		{Value: "", Label: words.history["rule-none"], Selected: selected == ""},
		{Value: HistoryRuleAny, Label: words.history["rule-any"], Selected: selected == HistoryRuleAny},
	}
	found := selected == "" || selected == HistoryRuleAny
	for _, r := range rules {
		label := "Rule ‘" + r.Name + "’, set by " + r.Maker
		if r.Maker == "" {
			label = "Rule ‘" + r.Name + "’, set by " + words.history["no-name"]
		}
		out = append(out, HistoryChoice{Value: r.ID, Label: Marked(label), Selected: r.ID == selected})
		found = found || r.ID == selected
	}
	if !found {
		out = append(out, HistoryChoice{Value: selected, Label: Marked("Rule " + selected), Selected: true})
	}
	return out
}
