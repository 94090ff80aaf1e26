//go:build unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// relayOutage is how long the killed relay stays down in
// TestRelayKilledWithAnswersInFlight: 12 s, longer than the
// respond path's 10 s connect wait that used to give in-flight answers
// up. Not scaled down: it is the fault, not a wait for an event.
const relayOutage = 12 * time.Second

// The fault, as a process: a standalone relay is killed with
// SIGKILL while 40 answers are in flight (the agent stalled: their
// commands reach it and are lost unread, no ack), stays down 12 s
// (longer than the respond path's connect wait), 10 more answers are
// posted during the outage, and it comes back empty on the same port.
// Every answer that got its 303 is executed by the agent exactly once,
// under one command id; meanwhile no card reopened its form or said the
// answer failed; afterwards every card is answered as this UI's own and
// History lists each executed command, accepted, once.
func TestRelayKilledWithAnswersInFlight(t *testing.T) {
	t.Parallel()
	const inFlight, during = 40, 10
	bin := buildCrashBinary(t, t.TempDir())
	token := "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	relayURL, relay := runRelayProcess(t, bin, "relay (to be killed)", token, "--port", "0")
	ru, err := url.Parse(relayURL)
	require.NoError(t, err)

	s := runServe(t, "ui", token, relayURL)
	gate := newCommandGate()
	ag, sessions, forms := askMany(t, s, inFlight+during, agentOptions{gate: gate})
	ctx, cancel := context.WithTimeout(t.Context(), stackWait)
	defer cancel()
	s.awaitRespond(t, true)

	// 40 answers in flight: each got its 303, its command reached the
	// stalled agent and was lost there, unacknowledged.
	resume := gate.stall()
	first, rest := sessions[:inFlight], sessions[inFlight:]
	for _, sess := range first {
		status, err := s.post(t, forms[sess], forms[sess].button(t, "Deny"))
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "session %s", sess)
	}
	dropped, err := gate.awaitDropped(ctx, inFlight)
	require.NoError(t, err, "every answer's command reached the agent before the kill (%d of %d)", dropped, inFlight)

	relay.killed(t) // kill -9: no drain, nothing handed over
	down := time.Now()
	s.awaitRespond(t, false)
	for _, sess := range rest {
		status, err := s.post(t, forms[sess], forms[sess].button(t, "Deny"))
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "session %s, posted during the outage", sess)
	}
	// Through the outage, past the respond path's connect wait: no
	// answer given up, no form open again.
	<-time.After(time.Until(down.Add(relayOutage)))
	sent := 0
	for i, sess := range sessions {
		card := s.getPage(t, "?session="+url.QueryEscape(sess)).cardOf(t, sess)
		state := card.Find(`[data-testid="state"]`)
		// No second answer by accident: a form only behind the
		// explicit "Answer differently" of an owed answer.
		assert.Zero(t, card.Find(`form[data-testid="answer-form"]`).Not(`details[data-testid="answer-differently"] form`).
			Find(`button[name="option"]:not([disabled])`).Length(),
			"session %s: no second answer while the first is owed", sess)
		switch got := state.AttrOr("data-state", ""); {
		case i < inFlight && got == "sending":
			// Written before the kill: owed, and the card says so.
			sent++
			assert.Contains(t, state.Text(), "will send again when the relay is back", "session %s", sess)
		case got == "queued":
			// Never written (posted during the outage, or waiting for a
			// free worker at the kill): said plainly, never "sent".
			assert.Contains(t, state.Text(), "Queued: will be sent when the relay is back", "session %s", sess)
		default:
			t.Errorf("session %s after %v down: state %q: %s", sess, relayOutage, got, state.Text())
		}
	}
	assert.Positive(t, sent, "answers were written before the kill")
	assert.Zero(t, commandsTo(ag, sessions[0]), "nothing executed while the agent was stalled")

	resume()
	_, _ = runRelayProcess(t, bin, "relay (restarted)", token, "--port", ru.Port())

	assertExecutedOnce(t, s, ag, sessions)
}

// historyRow is one History entry as the JSON lines export has it.
type historyRow struct {
	CommandID string          `json:"command_id"`
	State     string          `json:"state"`
	Reason    string          `json:"reason"`
	RecordedJ json.RawMessage `json:"recorded"`
	Recorded  bool            `json:"-"`
}

// historyRows reads the UI's History (its JSON lines export).
func historyRows(t *testing.T, s *stack) []historyRow {
	t.Helper()
	p := s.resolve(t, nil, "history.jsonl")
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, p.String(), nil)
	require.NoError(t, err)
	resp, err := uiClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var rows []historyRow
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r historyRow
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		r.Recorded = len(r.RecordedJ) > 0 && string(r.RecordedJ) != "null"
		rows = append(rows, r)
	}
	require.NoError(t, sc.Err())
	return rows
}
