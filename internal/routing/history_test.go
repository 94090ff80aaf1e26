package routing

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/webpush"
)

// A question routed to oncall, reminded, escalated to leads and then
// answered keeps its routing in History as long as its answer: 30 days
// on, past the week the push claims are kept and within the answers'
// 90 days, its History row still says where it went and when, and the
// team and escalated filters still find it.
func TestRoutingHistoryIsKeptWithItsAnswer(t *testing.T) {
	t.Parallel()
	f := loadRoutes(t, `{"teams": {"oncall": {"remind": "2m", "escalate": "4m", "escalate_to": "leads"},
		"leads": {}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	rg := newRig(t, clk, f, j, quietLog())
	ctx := context.Background()

	id := ask(t, rg.in, "deploy-1", "r1", "form", 1)
	rg.waitSteps(t, id, "oncall")
	for _, want := range [][]string{{"reminded oncall"}, {"reminded oncall", "escalated leads"}} {
		clk.Add(2 * time.Minute)
		rg.router.Sweep(ctx, rg.in)
		rg.waitSteps(t, id, "oncall", want...)
	}
	c, _ := rg.in.Card(id)
	clk.Add(time.Minute)
	text := "go"
	require.NoError(t, j.Record(inbox.Submission{Card: id, Key: c.Key, Agent: c.Agent, Question: "Deploy?", Token: "t1", CommandID: "cmd-1",
		By: "lee", Answer: aep.Answer{Text: &text}, State: inbox.SubmissionSending, At: clk.Now()}))

	clk.Add(30 * 24 * time.Hour)
	_, err := j.PrunePushClaims(ctx, clk.Now().Add(-webpush.ClaimsKept))
	require.NoError(t, err)
	n, err := j.Prune(ctx, clk.Now().Add(-90*24*time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "the answer is within its 90 days")

	for _, q := range []store.HistoryQuery{{}, {Team: "oncall"}, {Escalated: true}} {
		page, err := j.History(ctx, q)
		require.NoError(t, err)
		require.Len(t, page.Entries, 1, "%+v finds the answer", q)
		v := view.History(page, view.HistoryOptions{})
		require.Len(t, v.Rows, 1)
		line := v.Rows[0].Routing + " "
		for _, st := range v.Rows[0].RoutingSteps {
			line += st.Words + " " + st.AtText + st.After // as History shows it
		}
		assert.Equal(t, "Routed to oncall; reminded oncall 09:12 UTC, escalated to leads 09:14 UTC", line, "%+v", q)
		assert.True(t, v.Rows[0].Escalated)
	}
}

// The router's push claims (a chat message sent, an answer counted) are
// pruned after store.PushClaimsKept with Web Push off too, and a settled
// question's claims are let go here; its routing history stays.
func TestRouterPrunesItsPushClaims(t *testing.T) {
	t.Parallel()
	oncall := newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	ctx, cancel := context.WithCancel(context.Background())
	hooks := NewWebhooks(ctx, WebhookConfig{Logger: quietLog()})
	t.Cleanup(func() { cancel(); hooks.Wait() })
	in := inbox.New(inbox.Options{Now: clk.Now})
	// Driven here, one look at a time, as Run does on each change.
	r := New(Config{Routes: f, Journal: j, Now: clk.Now, Logger: quietLog()})
	r.Attach(nil, hooks, nil)
	look := func(id inbox.CardID) {
		c, ok := in.Card(id)
		require.True(t, ok)
		r.Observe(ctx, in, c)
	}

	id := ask(t, in, "deploy-1", "r1", "form", 1)
	look(id)
	assert.Contains(t, oncall.next(t), "New question for oncall")
	text := "go"
	e, err := aep.Build(aep.Envelope{ID: "ans-1", Type: "attention.answered", Source: testSource, Agent: "claude-code",
		Session: "deploy-1", Seq: aep.Int64(2), Capture: "full", Time: "2026-07-03T09:15:00Z", Subject: "r1", Cause: "r1",
		Data: aep.Answered{Answer: aep.Answer{Text: &text}, By: "lee"}})
	require.NoError(t, err)
	in.Apply(e)
	look(id)
	claims := func() []string {
		all, err := j.PushClaimsOf(ctx, store.RoutingPrefix)
		require.NoError(t, err)
		var kinds []string
		for _, c := range all {
			kinds = append(kinds, c.Kind)
		}
		return kinds
	}
	assert.ElementsMatch(t, []string{"routing:new:oncall", "routing:answered:oncall"}, claims())
	r.mu.Lock()
	assert.Empty(t, r.sent, "a settled question's claims are let go here")
	r.mu.Unlock()

	clk.Add(store.PushClaimsKept + time.Minute)
	r.pruneClaims(ctx)
	assert.Empty(t, claims(), "pruned after their week")
	steps, err := j.RoutingSteps(ctx, string(id))
	require.NoError(t, err)
	assert.Len(t, steps, 1, "its routing history (its team) stays")
}
