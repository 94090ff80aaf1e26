package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// TestBatchAnswerOfTwentyCards: the demo agent asks 20 deploy forms (one
// shape, ten sessions); one batch post from the batch page answers them
// all. The agent records 20 commands, one per request, each transmitted
// once; every card shows its own outcome.
func TestBatchAnswerOfTwentyCards(t *testing.T) {
	t.Parallel()
	const n = 20
	s := startStack(t, stackOptions{})
	cfg := agent.DefaultConfig()
	cfg.RelayURL, cfg.Token = s.relayURL, s.token
	cfg.Scenarios = []string{agent.ScenarioStandby}
	cfg.Pending = n
	cfg.Host = "e2e.test"
	cfg.Every = 0
	cfg.Backoff, cfg.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	cfg.DrainTimeout = -1
	ag := runAgent(t, s, "agent", cfg)

	// The batch page offers the 20 once the UI holds them all.
	batch := s.awaitBatch(t, n)
	p := s.getPage(t, "batches")
	batch = p.doc.Find(`[data-testid="batch"][data-shape="` + batch.AttrOr("data-shape", "") + `"]`)
	require.Equal(t, 1, batch.Length())
	f := readForm(p, batch.Find(`form[data-testid="batch-form"]`))
	boxes := f.named(t, "card")
	require.Len(t, boxes, n)
	for _, b := range boxes {
		b.checked = true
	}
	f.fill(t, fieldNamed(t, batch, "Service name"), "batched")
	res := s.submit(t, f, f.button(t, "Send answer"), "")
	require.Equal(t, http.StatusOK, res.status, "batch post: %s", res.body)
	outcomes := res.doc.Find(`[data-testid="batch-outcome"]`)
	require.Equal(t, n, outcomes.Length())
	outcomes.Each(func(_ int, o *goquery.Selection) {
		assert.Equal(t, "true", o.AttrOr("data-sent", ""), "outcome %q", o.Text())
	})

	// The agent's record: 20 commands, one per request, each once.
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
		assert.Equal(t, 1, r.Count, "transmissions of %s", r.ID)
		assert.Contains(t, answerOf(t, r.Raw), `"name":"batched"`)
		subjects[r.Session+"/"+subjectOf(t, r.Raw)] = true
		ids[r.ID] = true
	}
	assert.Len(t, subjects, n, "one command per request")
	assert.Len(t, ids, n, "each its own command id")

	// Each card shows its own outcome: answered, on the inbox page.
	s.awaitPage(t, "20 cards answered", func(d *goquery.Document) bool {
		answered := 0
		d.Find(`[data-testid="card"]`).Each(func(_ int, c *goquery.Selection) {
			if stateOf(c) == "answered" {
				answered++
			}
		})
		return answered == n
	})
}

// subjectOf is a command's subject (the request it answers).
func subjectOf(t *testing.T, raw []byte) string {
	t.Helper()
	i := strings.Index(string(raw), `"subject":"`)
	require.GreaterOrEqual(t, i, 0, "command without a subject: %s", raw)
	rest := string(raw[i+len(`"subject":"`):])
	return rest[:strings.IndexByte(rest, '"')]
}

// awaitBatch waits, by push, until the batch page offers a batch of at
// least n questions, and returns it.
func (s *stack) awaitBatch(t *testing.T, n int) *goquery.Selection {
	t.Helper()
	var found *goquery.Selection
	s.awaitPage(t, "a batch of the demo's questions", func(*goquery.Document) bool {
		p := s.getPage(t, "batches")
		require.Equal(t, http.StatusOK, p.status)
		p.doc.Find(`[data-testid="batch"]`).EachWithBreak(func(_ int, b *goquery.Selection) bool {
			if b.Find(`[data-testid="batch-check"]`).Length() >= n {
				found = b
			}
			return found == nil
		})
		return found != nil
	})
	return found
}

// awaitPage waits, by push, until the inbox page satisfies match: it
// reads the page after subscribing, and again after every pushed change.
func (s *stack) awaitPage(t *testing.T, what string, match func(*goquery.Document) bool) {
	t.Helper()
	ps := s.openPush(t, "", "", true)
	defer ps.close()
	deadline := time.After(stackWait)
	for {
		if match(s.getPage(t, "").doc) {
			return
		}
		if _, ok := ps.nextOr(t, deadline); !ok {
			t.Fatalf("waiting %v for %s", stackWait, what)
		}
	}
}

// TestBatchAnswerDuringAnOutageSaysQueued: the relay is away when one
// batch post answers four questions. The result words each question as
// its card does ("Queued: will be sent when the relay is back"), and
// says in its heading and summary that they are queued, not sent;
// nothing reaches the agent until the relay is back, then each request
// gets its one command.
func TestBatchAnswerDuringAnOutageSaysQueued(t *testing.T) {
	t.Parallel()
	const n = 4
	s := startStack(t, stackOptions{})
	cfg := agent.DefaultConfig()
	cfg.RelayURL, cfg.Token = s.relayURL, s.token
	cfg.Scenarios = []string{agent.ScenarioStandby}
	cfg.Pending = n
	cfg.Host = "e2e.test"
	cfg.Every = 0
	cfg.Backoff, cfg.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	cfg.DrainTimeout = -1
	ag := runAgent(t, s, "agent", cfg)

	batch := s.awaitBatch(t, n)
	p := s.getPage(t, "batches")
	batch = p.doc.Find(`[data-testid="batch"][data-shape="` + batch.AttrOr("data-shape", "") + `"]`)
	require.Equal(t, 1, batch.Length())
	f := readForm(p, batch.Find(`form[data-testid="batch-form"]`))
	for _, b := range f.named(t, "card") {
		b.checked = true
	}
	f.fill(t, fieldNamed(t, batch, "Service name"), "queued")
	s.awaitRespond(t, true)

	s.restartRelay(t, func() {
		s.awaitRespond(t, false)
		res := s.submit(t, f, f.button(t, "Send answer"), "")
		require.Equal(t, http.StatusOK, res.status, "batch post: %s", res.body)
		heading := strings.TrimSpace(res.doc.Find(`[data-testid="batch-result-heading"]`).Text())
		summary := res.doc.Find(`[data-testid="batch-summary"]`).Text()
		assert.Equal(t, "Answers queued", heading)
		assert.NotContains(t, summary, "Sent to", "nothing was sent")
		assert.Contains(t, summary, "Queued for 4 questions")
		outcomes := res.doc.Find(`[data-testid="batch-outcome"]`)
		require.Equal(t, n, outcomes.Length())
		outcomes.Each(func(_ int, o *goquery.Selection) {
			assert.Equal(t, "queued", o.AttrOr("data-state", ""), "outcome %q", o.Text())
			assert.Equal(t, "Queued: will be sent when the relay is back",
				strings.TrimSpace(o.Find(`[data-testid="batch-outcome-line"]`).Text()), "as its card says")
		})
		assert.Empty(t, ag.Record(), "nothing reaches the agent during the outage")
	})

	ctx, cancel := context.WithTimeout(context.Background(), stackWait)
	defer cancel()
	require.NoError(t, ag.Until(ctx, func() bool {
		decided := 0
		for _, r := range ag.Record() {
			if r.Decision.Outcome != "" {
				decided++
			}
		}
		return decided >= n
	}), "the agent decided %d commands, want %d", len(ag.Record()), n)
	subjects := map[string]bool{}
	for _, r := range ag.Record() {
		assert.Equal(t, agent.OutcomeAccepted, r.Decision.Outcome, "decision %+v", r.Decision)
		subjects[r.Session+"/"+subjectOf(t, r.Raw)] = true
	}
	assert.Len(t, subjects, n, "one command per request")
}
