package web

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aepforms/aepforms/internal/rules"
)

// Rules is the standing answers (internal/rules.Runner): where they are
// kept, the rate pause, and how many requests each answered here. A
// watch-only UI's is not Enabled: it makes and runs no rule.
type Rules interface {
	Enabled() bool
	Store() rules.Store
	Config() rules.Config
	Answered() map[string]int64
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
