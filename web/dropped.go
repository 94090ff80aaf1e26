package web

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/aepforms/aepforms/internal/inbox"
)

// droppedLabels is how many agents aepforms_dropped_requests_total names;
// the rest are summed under agent="other". Agent names are the emitters'
// to choose, so the label set must stay bounded.
const droppedLabels = 20

// writeDropped writes aepforms_dropped_requests_total: the open requests
// the inbox let go to stay within its bounds, by agent. The 20 agents that
// lost the most are named (a tie goes to the earlier name), every other
// one is summed as agent="other" (as is an agent whose name is "other").
// When the 20 change, a count moves between series: Prometheus reads the
// series that shrank as a counter reset.
func writeDropped(b *strings.Builder, st inbox.Status) {
	named := st.Dropped // most first, then by name
	other := st.DroppedOthers
	if len(named) > droppedLabels {
		for _, d := range named[droppedLabels:] {
			other += d.Count
		}
		named = named[:droppedLabels]
	}
	named = slices.Clone(named)
	named = slices.DeleteFunc(named, func(d inbox.Dropped) bool {
		if d.Agent == "other" {
			other += d.Count
			return true
		}
		return false
	})
	slices.SortFunc(named, func(a, b inbox.Dropped) int { return cmp.Compare(a.Agent, b.Agent) })
	fmt.Fprintf(b, "# HELP aepforms_dropped_requests_total Open requests dropped to keep the inbox within its bounds, by agent (the 20 that lost the most; the rest as other).\n# TYPE aepforms_dropped_requests_total counter\n")
	for _, d := range named {
		fmt.Fprintf(b, "aepforms_dropped_requests_total{agent=\"%s\"} %d\n", labelValue(d.Agent), d.Count)
	}
	if other > 0 || len(named) == 0 {
		fmt.Fprintf(b, "aepforms_dropped_requests_total{agent=\"other\"} %d\n", other)
	}
}

// labelValue escapes a Prometheus label value (text format 0.0.4):
// backslash, double quote and line feed; invalid UTF-8 is replaced.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
