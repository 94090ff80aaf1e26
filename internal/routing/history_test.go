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
		assert.Equal(t, "Routed to oncall; reminded oncall 3 Jul 2026 09:12:00 UTC, escalated to leads 3 Jul 2026 09:14:00 UTC", v.Rows[0].Routing, "%+v", q)
		assert.True(t, v.Rows[0].Escalated)
	}
}
