package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// The flood test's sizes: one emitter asks floodRequests questions into an
// inbox bounded to floodBound open cards, in batches of floodBatch (each
// batch waited for, so the count stays exact on two cores under -race).
const (
	floodRequests = 20_000
	floodBound    = 500
	floodBatch    = 1000
)

// startFloodStack is a relay and a UI (serve --relay) with the given extra
// serve flags, stopped when the test ends. The ack window is long, so an
// answer sent to an agent that never acks stays in flight for the test.
func startFloodStack(t *testing.T, uiArgs ...string) *stack {
	t.Helper()
	s := &stack{token: "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36), relayEnv: map[string]string{}}
	s.relayEnv["AEP_TOKEN"] = s.token
	s.relayURL, _, s.stopRelay = runApp(t, "relay", []string{"relay", "--port", "0"}, s.relayEnv, relayReady)
	args := append([]string{"serve", "--relay", s.relayURL, "--addr", "127.0.0.1:0", "--ack-window", "10m"}, uiArgs...)
	s.uiURL, s.ctx, _ = runApp(t, "ui", args, map[string]string{"AEP_TOKEN": s.token, "HOME": t.TempDir()},
		`aepforms UI listening on (http://[^\s"]+)`)
	u, err := url.Parse(s.uiURL)
	require.NoError(t, err)
	s.origin = u.Scheme + "://" + u.Host
	return s
}

// startNamedAgent runs a demo agent asking one prompt-only question under
// the agent name name until the test ends.
func (s *stack) startNamedAgent(t *testing.T, name string, neverAck bool) *agent.Agent {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.RelayURL, cfg.Token, cfg.Agent = s.relayURL, s.token, name
	cfg.Scenarios = []string{agent.ScenarioPromptOnly}
	cfg.Host = "e2e.test"
	cfg.Every = 0
	cfg.Backoff, cfg.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	cfg.DrainTimeout = -1
	cfg.NeverAck = neverAck
	return runAgent(t, s, "agent "+name, cfg)
}

// postBatch posts events to the relay's POST /events as one NDJSON batch.
func (s *stack) postBatch(t *testing.T, evs []*aep.Event) {
	t.Helper()
	var body bytes.Buffer
	for _, ev := range evs {
		body.Write(ev.Raw())
		body.WriteByte('\n')
	}
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.relayURL+"/events", &body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("AEP-Version", aep.Version)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "POST /events: %s", msg)
}

// metric reads one sample of the UI's /metrics (0 and false when absent).
func (s *stack) metric(t *testing.T, sample string) (float64, bool) {
	t.Helper()
	return s.metricWithin(t, sample, stackWait)
}

// metricWithin is metric with a deadline of its own for the request.
func (s *stack) metricWithin(t *testing.T, sample string, within time.Duration) (float64, bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.resolve(t, nil, "metrics").String(), nil)
	require.NoError(t, err)
	p := s.doWithin(t, req, within)
	require.Equal(t, http.StatusOK, p.status)
	for _, line := range strings.Split(p.body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, "metric line %q", line)
			return f, true
		}
	}
	return 0, false
}

// awaitMetric polls /metrics until sample reads want, failing at stackWait.
func (s *stack) awaitMetric(t *testing.T, sample string, want float64) {
	t.Helper()
	s.awaitMetricWithin(t, sample, want, stackWait)
}

// awaitMetricWithin is awaitMetric with a deadline of its own, for work
// whose time grows with the machine's load (megabytes through the race
// detector): the deadline only ends a test that hangs.
func (s *stack) awaitMetricWithin(t *testing.T, sample string, want float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got, _ := s.metricWithin(t, sample, within)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s = %v: it reads %v", within, sample, want, got)
		}
		<-tick.C
	}
}

// One emitter floods the inbox while another asks one question, and the
// operator has answered one of the flood's questions to an agent that has
// not acked: the quiet agent's question survives, pending and answerable;
// the flood loses exactly its own oldest questions, counted on the page and
// in /metrics; the card with the answer in flight is never evicted.
func TestFloodKeepsAQuietAgentsQuestion(t *testing.T) {
	t.Parallel()
	s := startFloodStack(t, "--max-pending", strconv.Itoa(floodBound))

	// The quiet agent asks first: its card is the oldest in the inbox, the
	// first an oldest-first bound would take.
	quiet := s.startNamedAgent(t, "quiet", false)
	quietSess, _ := askedRequest(t, quiet, agent.ScenarioPromptOnly)
	s.awaitCard(t, quietSess.ID, "the quiet agent's card", func(c *goquery.Selection) bool { return c.AttrOr("data-open", "") == "true" })

	// One of the flood's own questions, answered to an agent that never
	// acks: the answer stays in flight.
	slow := s.startNamedAgent(t, "flood", true)
	slowSess, _ := askedRequest(t, slow, agent.ScenarioPromptOnly)
	_, _, f := s.openForm(t, slowSess.ID)
	f.fill(t, "text", "held")
	s.follow(t, s.submit(t, f, nil, ""))
	awaitCommands(t, slow, slowSess.ID, 1, func(agent.Received) bool { return true })

	// The flood: floodRequests questions from the same agent name.
	const floodSource = "aep://e2e.test/agents/flood/emitter"
	for sent := 0; sent < floodRequests; {
		batch := make([]*aep.Event, 0, floodBatch)
		for ; len(batch) < floodBatch && sent < floodRequests; sent++ {
			ev, err := aep.Build(aep.Envelope{
				ID: fmt.Sprintf("flood-%05d", sent), Type: "attention.requested", Source: floodSource, Agent: "flood",
				Session: "flood-session", Seq: aep.Int64(int64(sent + 1)), Time: time.Now().UTC().Format(time.RFC3339Nano),
				Capture: "full", Data: aep.Request{Kind: aep.KindInput, Prompt: "Question " + strconv.Itoa(sent)},
			})
			require.NoError(t, err)
			batch = append(batch, ev)
		}
		s.postBatch(t, batch)
		// Every flood question but floodBound-2 (the bound less the quiet
		// card and the one in flight) is dropped once it is in.
		if want := sent + 2 - floodBound; want > 0 {
			s.awaitMetric(t, `aepforms_dropped_requests_total{agent="flood"}`, float64(want))
		}
	}
	wantDropped := floodRequests + 2 - floodBound
	s.awaitMetric(t, "aepforms_pending_cards", floodBound)
	_, ok := s.metric(t, `aepforms_dropped_requests_total{agent="quiet"}`)
	assert.False(t, ok, "the quiet agent lost nothing")

	// One status line names the flood and its exact count.
	p := s.getPage(t, "?agent=quiet")
	notices := p.doc.Find(`[data-testid="notice"]`)
	require.Equal(t, 1, notices.Length(), "one status line for the drops")
	assert.Contains(t, notices.Text(), "flood: "+groupDigits(wantDropped)+" questions dropped, oldest first")

	// The card with the answer in flight is still there, still sending.
	held := s.getPage(t, "?session="+url.QueryEscape(slowSess.ID)).cardOf(t, slowSess.ID)
	assert.Equal(t, "sending", held.AttrOr("data-state", ""), "the answer in flight keeps its card")

	// The quiet agent's question is still pending and answerable.
	_, card, qf := s.openForm(t, quietSess.ID)
	assert.Equal(t, "pending", card.AttrOr("data-state", ""))
	qf.fill(t, "text", "still here")
	got := s.sendAndAccept(t, quiet, quietSess.ID, qf, nil)
	assert.Equal(t, `{"text":"still here"}`, answerOf(t, got.Raw))
}

// groupDigits writes n as the page does: thousands grouped by a no-break
// space.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u00a0')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// The hostile sizes through the whole stack: an 8 MB prompt and a form of
// 450 multi-selects × 999 choices (449 550 controls) each render within
// their budgets. The page stays small; the first stays answerable with its
// whole prompt one link away, the second is read-only and says why.
func TestHostileSizesRenderWithinBudgets(t *testing.T) {
	t.Parallel()
	s := startFloodStack(t)
	const source = "aep://e2e.test/agents/hostile/emitter"
	prompt := strings.Repeat("+ a line of a very long diff\n", 8<<20/29)
	huge := aep.Request{Kind: aep.KindForm, Prompt: "Tick what applies"}
	for i := range 450 {
		f := aep.FieldSpec{ID: "f" + strconv.Itoa(i), Type: aep.FieldSelect, Label: "Field " + strconv.Itoa(i), Multi: true}
		for j := range 999 {
			f.Choices = append(f.Choices, aep.Choice{ID: "c" + strconv.Itoa(j), Label: "Choice " + strconv.Itoa(j)})
		}
		huge.Fields = append(huge.Fields, f)
	}
	for i, req := range []aep.Request{{Kind: aep.KindInput, Prompt: prompt}, huge} {
		ev, err := aep.Build(aep.Envelope{
			ID: "hostile-" + strconv.Itoa(i), Type: "attention.requested", Source: source, Agent: "hostile",
			Session: "hostile-" + strconv.Itoa(i), Seq: aep.Int64(1), Time: time.Now().UTC().Format(time.RFC3339Nano),
			Capture: "full", Data: req,
		})
		require.NoError(t, err)
		s.postBatch(t, []*aep.Event{ev})
	}
	// 8 MB and 449 550 choices through relay and UI take seconds under
	// the race detector on a loaded machine; a minute only ends a hang.
	s.awaitMetricWithin(t, "aepforms_pending_cards", 2, time.Minute)

	p := s.getPage(t, "")
	require.Equal(t, http.StatusOK, p.status)
	assert.Less(t, len(p.body), 128<<10, "the page stays small: %d bytes", len(p.body))

	big := p.cardOf(t, "hostile-0")
	assert.Equal(t, 1, big.Find(`form[data-testid="answer-form"]`).Length(), "a large prompt alone never makes a request unanswerable")
	href, ok := big.Find(`[data-testid="prompt-all"]`).Attr("href")
	require.True(t, ok, "Show all links to the whole prompt")
	whole := s.getPage(t, s.resolve(t, p.url, href).String())
	require.Equal(t, http.StatusOK, whole.status)
	assert.Equal(t, prompt, whole.doc.Find(`[data-testid="prompt-full"]`).Text())

	many := p.cardOf(t, "hostile-1")
	assert.Equal(t, "over-budget", many.AttrOr("data-state", ""))
	assert.Zero(t, many.Find("form, input, select").Length(), "never rendered as a huge form")
	assert.Contains(t, many.Find(`[data-testid="state-text"]`).Text(), "Too many options to show safely: 449\u00a0550; answer it in the agent's own interface.")
}
