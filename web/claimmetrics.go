package web

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// claimBuckets are the upper bounds, in seconds, of the time-to-first-
// claim histograms: from a question's arrival to its first "I’m on it".
var claimBuckets = []float64{5, 15, 30, 60, 120, 300, 600, 1800, 3600}

// claimTimes are the time-to-first-claim histograms: of every question,
// and of each team's (the routes file's team it is routed to).
type claimTimes struct {
	mu     sync.Mutex
	all    claimHist
	byTeam map[string]*claimHist
}

// claimHist is one time-to-first-claim histogram.
type claimHist struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func (h *claimHist) add(s float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(claimBuckets)+1)
	}
	i := 0
	for i < len(claimBuckets) && s > claimBuckets[i] {
		i++
	}
	h.counts[i]++
	h.sum += s
	h.n++
}

// FirstClaim counts one question's first claim, d after it arrived; a
// question routed to a team ("" none) is counted for it as well.
func (m *Metrics) FirstClaim(team string, d time.Duration) {
	c := &m.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	s := max(d.Seconds(), 0)
	c.all.add(s)
	if team == "" {
		return
	}
	if c.byTeam == nil {
		c.byTeam = map[string]*claimHist{}
	}
	h := c.byTeam[team]
	if h == nil {
		h = &claimHist{}
		c.byTeam[team] = h
	}
	h.add(s)
}

// writeClaimTimes writes the time-to-first-claim histograms: every
// question's, and by team (aepforms_team_time_to_first_claim_seconds,
// as aepforms_time_to_answer_seconds is).
func writeClaimTimes(b *strings.Builder, m *Metrics) {
	c := &m.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	const name = "aepforms_time_to_first_claim_seconds"
	fmt.Fprintf(b, "# HELP %s Time from a question's arrival to its first claim (\"I’m on it\").\n# TYPE %s histogram\n", name, name)
	c.all.write(b, name, "")
	const byTeam = "aepforms_team_time_to_first_claim_seconds"
	fmt.Fprintf(b, "# HELP %s Time from a routed question's arrival to its first claim (\"I’m on it\"), by the team it was routed to.\n# TYPE %s histogram\n", byTeam, byTeam)
	teams := make([]string, 0, len(c.byTeam))
	for t := range c.byTeam {
		teams = append(teams, t)
	}
	slices.Sort(teams)
	for _, t := range teams {
		c.byTeam[t].write(b, byTeam, "team="+strconv.Quote(t)+",")
	}
}

// write writes h as histogram name, each sample's labels starting with
// labels ("" or `team="oncall",`).
func (h *claimHist) write(b *strings.Builder, name, labels string) {
	var cum uint64
	for i, le := range claimBuckets {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(b, "%s_bucket{%sle=%q} %d\n", name, labels, strconv.FormatFloat(le, 'f', -1, 64), cum)
	}
	own := ""
	if labels != "" {
		own = "{" + strings.TrimSuffix(labels, ",") + "}"
	}
	fmt.Fprintf(b, "%s_bucket{%sle=\"+Inf\"} %d\n%s_sum%s %s\n%s_count%s %d\n", name, labels, h.n, name, own, strconv.FormatFloat(h.sum, 'f', -1, 64), name, own, h.n)
}
