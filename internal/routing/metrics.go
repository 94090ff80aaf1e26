package routing

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// answerBuckets are the time-to-answer histogram's upper bounds, in
// seconds.
var answerBuckets = []float64{10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600}

// Metrics counts, per team, the reminders and escalations sent and the
// time from a question's arrival to its answer.
type Metrics struct {
	mu        sync.Mutex
	reminders map[string]int64
	escalated map[string]int64
	answers   map[string]*histogram
}

type histogram struct {
	counts []int64 // per bucket, cumulative when written
	sum    float64
	n      int64
}

// NewMetrics returns empty counts.
func NewMetrics() *Metrics {
	return &Metrics{reminders: map[string]int64{}, escalated: map[string]int64{}, answers: map[string]*histogram{}}
}

func (m *Metrics) stepped(kind, team string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if kind == inbox.StepReminded {
		m.reminders[team]++
	} else {
		m.escalated[team]++
	}
}

func (m *Metrics) answered(team string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.answers[team]
	if h == nil {
		h = &histogram{counts: make([]int64, len(answerBuckets))}
		m.answers[team] = h
	}
	s := d.Seconds()
	for i, b := range answerBuckets {
		if s <= b {
			h.counts[i]++
		}
	}
	h.sum += s
	h.n++
}

// Write writes the counts in the Prometheus text format:
// aepforms_reminders_total and aepforms_escalations_total by team,
// aepforms_time_to_answer_seconds by team.
func (m *Metrics) Write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	counter := func(name, help string, by map[string]int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for _, team := range sortedKeys(by) {
			fmt.Fprintf(w, "%s{team=%q} %d\n", name, team, by[team])
		}
	}
	counter("aepforms_reminders_total", "Reminders sent to a team of a question unanswered and unclaimed past its team's remind.", m.reminders)
	counter("aepforms_escalations_total", "Escalations sent to a team (escalate_to) of a question unanswered and unclaimed past its team's escalate or near its deadline.", m.escalated)
	const name = "aepforms_time_to_answer_seconds"
	fmt.Fprintf(w, "# HELP %s Time from a routed question's arrival to its answer, by the team it was routed to.\n# TYPE %s histogram\n", name, name)
	for _, team := range sortedKeys(m.answers) {
		h := m.answers[team]
		for i, b := range answerBuckets {
			fmt.Fprintf(w, "%s_bucket{team=%q,le=%q} %d\n", name, team, strconv.FormatFloat(b, 'f', -1, 64), h.counts[i])
		}
		fmt.Fprintf(w, "%s_bucket{team=%q,le=\"+Inf\"} %d\n%s_sum{team=%q} %s\n%s_count{team=%q} %d\n",
			name, team, h.n, name, team, strconv.FormatFloat(h.sum, 'f', -1, 64), name, team, h.n)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
