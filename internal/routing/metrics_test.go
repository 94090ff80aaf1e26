package routing

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store/postgres"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// TestMain stops the throwaway PostgreSQL server the replicas' test
// starts (pgtest.Need), once the package's tests end.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Two replicas on one PostgreSQL journal, each following the same
// question: the reminder, the escalation and the answer's time to answer
// are each counted by one of them, so /metrics summed across the
// replicas counts each once.
func TestReplicasCountEachAnswerAndStepOnce(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Need(t).NewDatabase(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"remind": "2m", "escalate": "4m", "escalate_to": "leads"},
		"leads": {}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	ctx := context.Background()
	type replica struct {
		in     *inbox.Inbox
		router *Router
	}
	var replicas []replica
	for _, name := range []string{"a", "b"} {
		j, err := postgres.Open(ctx, dbURL, postgres.Options{Host: "h", Replica: name})
		require.NoError(t, err)
		t.Cleanup(func() { _ = j.Close() })
		// Driven here, one look at a time (Observe, Sweep), as Run does
		// on each change and each Tick.
		replicas = append(replicas, replica{in: inbox.New(inbox.Options{Now: clk.Now}),
			router: New(Config{Routes: f, Journal: j, Now: clk.Now, Logger: quietLog()})})
	}
	look := func(id inbox.CardID) {
		for _, r := range replicas {
			c, ok := r.in.Card(id)
			require.True(t, ok)
			r.router.Observe(ctx, r.in, c)
			r.router.Sweep(ctx, r.in)
		}
	}

	var id inbox.CardID
	for _, r := range replicas {
		id = ask(t, r.in, "deploy-1", "r1", "form", 1)
	}
	look(id)
	for range 2 {
		clk.Add(2 * time.Minute)
		look(id)
	}
	for _, r := range replicas {
		c, _ := r.in.Card(id)
		assert.True(t, c.Verdict(clk.Now(), inbox.Viewer{}).Routing.Escalated(), "every replica shows the escalation")
	}
	clk.Add(time.Minute)
	for _, r := range replicas {
		e, err := aep.Build(aep.Envelope{ID: "ans-1", Type: "attention.answered", Source: testSource, Agent: "claude-code",
			Session: "deploy-1", Seq: aep.Int64(2), Capture: "full", Time: "2026-07-03T09:15:00Z", Subject: "r1", Cause: "r1",
			Data: aep.Answered{Answer: aep.Answer{Option: "allow"}, By: "lee"}})
		require.NoError(t, err)
		r.in.Apply(e)
	}
	look(id)
	look(id) // a second look counts nothing again

	var m bytes.Buffer
	for _, r := range replicas {
		r.router.Metrics().Write(&m)
	}
	assert.Equal(t, 1, strings.Count(m.String(), `aepforms_time_to_answer_seconds_count{team="oncall"} 1`), "%s", m.String())
	assert.Equal(t, 1, strings.Count(m.String(), `aepforms_time_to_answer_seconds_sum{team="oncall"} 300`), "asked 09:10, answered 09:15: %s", m.String())
	assert.Equal(t, 1, strings.Count(m.String(), `aepforms_reminders_total{team="oncall"} 1`), "%s", m.String())
	assert.Equal(t, 1, strings.Count(m.String(), `aepforms_escalations_total{team="leads"} 1`), "%s", m.String())
	assert.NotContains(t, m.String(), "} 2\n", "nothing counted twice by one replica")
}
