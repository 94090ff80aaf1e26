package web

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// harnessInbox is the harness's inbox for a part made before it is.
type harnessInbox struct{ h **harness }

func (x harnessInbox) Subscribe(buf int) *inbox.Subscription { return (*x.h).in.Subscribe(buf) }
func (x harnessInbox) Card(id inbox.CardID) (inbox.Card, bool) {
	return (*x.h).in.Card(id)
}
func (x harnessInbox) BeginSubmission(id inbox.CardID, s inbox.Submission) (inbox.Submission, error) {
	return (*x.h).in.BeginSubmission(id, s)
}
func (x harnessInbox) SettleSubmission(id inbox.CardID, cmd string, st inbox.SubmissionState, reason, detail string) {
	(*x.h).in.SettleSubmission(id, cmd, st, reason, detail)
}

// rulesHarness is a harness whose inbox keeps its answers in a SQLite
// journal that also keeps the rules, with a rules.Runner on them.
type rulesHarness struct {
	*harness
	j      *sqlite.Journal
	runner *rules.Runner
}

func newRulesHarness(t *testing.T, opts ...option) *rulesHarness {
	t.Helper()
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "state", "j.db"), sqlite.Options{Host: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	rh := &rulesHarness{j: j}
	var h *harness
	opts = append([]option{withInbox(func(o *inbox.Options) { o.Journal = j }), func(s *setup) {
		sub := rules.Submitter(s.deps.Submitter)
		if s.cfg.WatchOnly || s.deps.Submitter == nil {
			sub = nil
		}
		rh.runner = rules.New(rules.Config{Now: s.cfg.Now}, j, harnessInbox{&h}, sub)
		s.deps.Rules = rh.runner
		s.deps.History, s.deps.Sessions = j, j
	}}, opts...)
	h = newHarness(t, opts...)
	rh.harness = h
	return rh
}

// observe lets the runner see card id as the inbox now holds it.
func (rh *rulesHarness) observe(id inbox.CardID) {
	rh.t.Helper()
	c, ok := rh.in.Card(id)
	require.True(rh.t, ok)
	rh.runner.Observe(context.Background(), c)
}

// /metrics counts the requests each rule answered.
func TestMetricsCountRuleAnswers(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	ctx := context.Background()
	require.NoError(t, rh.j.CreateRule(ctx, store.Rule{ID: "R1", Name: "Allow once", Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
		Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, "", "", ""), Answer: aep.Answer{Option: "allow"}}))
	rh.observe(rh.ask("s1", "r1", permissionReq()))
	rh.observe(rh.ask("s1", "r2", permissionReq()))
	m := rh.scrape("Authorization", "Bearer "+secret)
	assert.Equal(t, 2.0, m[`aepforms_rule_answers_total{rule="R1"}`], "%v", m)
	assert.Len(t, rh.sub.all(), 2)
}
