package respond

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"

	"github.com/aepforms/aepforms/internal/aep"
)

// settlement is one report: what became of one command.
type settlement struct {
	Card           inbox.CardID
	CommandID      string
	State          inbox.SubmissionState
	Reason, Detail string
}

// reports collects settlements: outcomes on ch, the queued reports (no
// relay connection when the command was due: progress, not an outcome)
// on queued, and the owed ones (sending again with a reason: sent, no
// reply yet, the relay lost or the ack window silent) on owed.
type reports struct {
	ch     chan settlement
	queued chan settlement
	owed   chan settlement
}

func newReports() *reports {
	return &reports{ch: make(chan settlement, 1024), queued: make(chan settlement, 1024), owed: make(chan settlement, 1024)}
}

func (r *reports) SettleSubmission(card inbox.CardID, commandID string, state inbox.SubmissionState, reason, detail string) {
	if state == inbox.SubmissionQueued {
		r.queued <- settlement{card, commandID, state, reason, detail}
		return
	}
	if state == inbox.SubmissionSending {
		r.owed <- settlement{card, commandID, state, reason, detail}
		return
	}
	r.ch <- settlement{card, commandID, state, reason, detail}
}

// nextQueued returns the next queued report, failing the test after a
// deadline.
func (r *reports) nextQueued(t testing.TB) settlement {
	t.Helper()
	select {
	case o := <-r.queued:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no queued report")
		return settlement{}
	}
}

// nextOwed returns the next owed report (sending, with a reason),
// failing the test after a deadline.
func (r *reports) nextOwed(t testing.TB) settlement {
	t.Helper()
	select {
	case o := <-r.owed:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no owed report")
		return settlement{}
	}
}

// next returns the next settlement, failing the test after a deadline.
func (r *reports) next(t testing.TB) settlement {
	t.Helper()
	select {
	case o := <-r.ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome reported")
		return settlement{}
	}
}

var testNow = time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)

// testConfig is a config against base with short intervals; the ack window
// is long so only tests that want silence see it.
func testConfig(base string) Config {
	return Config{
		RelayURL:    base,
		Source:      "aep://host-a/ui/aepforms",
		Instance:    "host-a/1",
		AckWindow:   5 * time.Second,
		ReplayWait:  20 * time.Millisecond,
		ConnectWait: 5 * time.Second,
		// A submit made before the first connection is queued; most
		// tests' fake relay lists no agent, so waiting for one would only
		// slow them (TestQueuedAnswerWaitsForItsAgent waits).
		AgentWait:    time.Millisecond,
		DialTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		BackoffMin:   5 * time.Millisecond,
		BackoffMax:   50 * time.Millisecond,
		Now:          func() time.Time { return testNow },
	}
}

// start runs a client for cfg until the test ends; cleanup waits for Run.
func start(t testing.TB, cfg Config) (*Client, *reports) {
	t.Helper()
	rep := newReports()
	cfg.Reporter = rep
	c := New(cfg)
	startRunning(t, c)
	return c, rep
}

// formAnswer is a form answer of ids, numbers and booleans only.
func formAnswer() (aep.Answer, []aep.FieldSpec) {
	fields := []aep.FieldSpec{
		{ID: "n", Type: aep.FieldNumber, Label: "n"},
		{ID: "ok", Type: aep.FieldBoolean, Label: "ok"},
		{ID: "pick", Type: aep.FieldSelect, Label: "pick", Choices: []aep.Choice{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}},
	}
	return aep.Answer{Values: aep.Values{"n": json.Number("3"), "ok": true, "pick": "b"}}, fields
}

// submission is a form submission to session.
func submission(session, card string) inbox.Submission {
	a, fields := formAnswer()
	return inbox.Submission{Card: inbox.CardID(card), Key: inbox.RequestKey{Session: session, RequestID: "req-" + card}, Answer: a, Fields: fields}
}

// raws returns the raw bytes of the received frames.
func raws(rs []received) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.raw)
	}
	return out
}

// atLeast is a condition: at least n frames of type typ were received.
func atLeast(typ string, n int) func([]received) bool {
	return func(log []received) bool {
		k := 0
		for _, r := range log {
			if r.typ == typ {
				k++
			}
		}
		return k >= n
	}
}
