package e2e

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// TestBatchAnswerAllMatching: the demo agent asks 110 forms of one shape,
// more than the batch page lists (100). "Answer all 110 waiting…" asks
// first, saying how many and the answer each gets; a question of the
// same shape asked after the page was drawn is counted apart and left
// out. Confirmed, the agent records 110 commands, one per request, each
// its own and sent once; the late question gets none.
func TestBatchAnswerAllMatching(t *testing.T) {
	t.Parallel()
	const n = 110
	s := startStack(t, stackOptions{})
	standby := func(name string, pending int) *agent.Agent {
		cfg := agent.DefaultConfig()
		cfg.RelayURL, cfg.Token = s.relayURL, s.token
		cfg.Scenarios = []string{agent.ScenarioStandby}
		cfg.Pending = pending
		cfg.Host = "e2e.test"
		cfg.Every = 0
		cfg.Backoff, cfg.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
		cfg.DrainTimeout = -1
		return runAgent(t, s, name, cfg)
	}
	ag := standby("agent", n)
	countOf := func(want int) func(*goquery.Document) bool {
		return func(*goquery.Document) bool {
			b := s.getPage(t, "batches").doc.Find(`[data-testid="batch"]`)
			return b.Length() == 1 && b.AttrOr("data-count", "") == strconv.Itoa(want)
		}
	}
	s.awaitPage(t, "the batch page counts the 110", countOf(n))
	p := s.getPage(t, "batches")
	batch := p.doc.Find(`[data-testid="batch"]`)
	require.Equal(t, 100, batch.Find(`[data-testid="batch-check"]`).Length(), "the page lists 100")
	f := readForm(p, batch.Find(`form[data-testid="batch-form"]`))
	f.fill(t, fieldNamed(t, batch, "Service name"), "all-of-them")

	// A question of the same shape arrives after the page was drawn.
	late := standby("late agent", 1)
	s.awaitPage(t, "the late question held", countOf(n+1))

	confirm := s.submit(t, f, f.button(t, "Answer all 110 waiting…"), "")
	require.Equal(t, http.StatusOK, confirm.status, "the confirmation: %s", confirm.body)
	assert.Equal(t, "Send this answer to 110 questions?", confirm.doc.Find(`[data-testid="batch-confirm-heading"]`).Text())
	assert.Contains(t, confirm.doc.Find(`[data-testid="batch-confirm-values"]`).Text(), "all-of-them", "what will be sent")
	listed := map[string]bool{}
	confirm.doc.Find(`[data-testid="batch-confirm-question"]`).Each(func(_ int, q *goquery.Selection) { listed[q.AttrOr("data-card", "")] = true })
	assert.Len(t, listed, n, "every question the answer goes to is shown, the 10 past the page's 100 too")
	assert.Contains(t, confirm.doc.Find(`[data-testid="batch-confirm-later"]`).Text(), "1 question that arrived after you opened the batch page")
	assert.Empty(t, ag.Record(), "nothing sent before the confirmation")

	cf := readForm(confirm, confirm.doc.Find(`form[data-testid="batch-confirm-form"]`))
	res := s.submit(t, cf, cf.button(t, "Send to 110 questions"), "")
	require.Equal(t, http.StatusOK, res.status, "batch post: %s", res.body)
	outcomes := res.doc.Find(`[data-testid="batch-outcome"]`)
	require.Equal(t, n, outcomes.Length())
	outcomes.Each(func(_ int, o *goquery.Selection) {
		assert.Equal(t, "true", o.AttrOr("data-sent", ""), "outcome %q", o.Text())
	})
	assert.Contains(t, res.doc.Find(`[data-testid="batch-left-out"]`).Text(), "1 question that arrived after you opened the batch page were left out")

	ctx, cancel := context.WithTimeout(context.Background(), stackWait)
	defer cancel()
	var rec []agent.Received
	require.NoError(t, ag.Until(ctx, func() bool {
		rec = ag.Record()
		decided := 0
		for _, r := range rec {
			if r.Decision.Outcome != "" {
				decided++
			}
		}
		return decided >= n
	}), "the agent decided %d commands, want %d", len(rec), n)
	require.Len(t, rec, n, "commands the agent received")
	subjects, ids := map[string]bool{}, map[string]bool{}
	for _, r := range rec {
		assert.Equal(t, agent.OutcomeAccepted, r.Decision.Outcome, "decision %+v", r.Decision)
		// Sent once; a second transmission is the same command again
		// after the stack's short ack window (slow under -race), which
		// the agent records once and decides once.
		assert.GreaterOrEqual(t, r.Count, 1, "transmissions of %s", r.ID)
		assert.Contains(t, answerOf(t, r.Raw), `"name":"all-of-them"`)
		subjects[r.Session+"/"+subjectOf(t, r.Raw)] = true
		ids[r.ID] = true
	}
	assert.Len(t, subjects, n, "one command per request")
	assert.Len(t, ids, n, "each its own command id")
	assert.Empty(t, late.Record(), "the question asked after the page was drawn was not answered")

	// Posted again (a reload, a double click): each question says this
	// same batch answered it already, and nothing new is sent.
	again := s.submit(t, cf, cf.button(t, "Send to 110 questions"), "")
	require.Equal(t, http.StatusOK, again.status, "the same post again: %.300s", again.body)
	lines := again.doc.Find(`[data-testid="batch-outcome-line"]`)
	assert.Equal(t, n, lines.Length(), "each question of the batch is named")
	lines.Each(func(_ int, l *goquery.Selection) {
		assert.Contains(t, l.Text(), "Already answered by this batch; nothing new was sent.")
	})
	assert.Len(t, ag.Record(), n, "no second command")
	assert.Empty(t, late.Record(), "nor one to the late question")
}
