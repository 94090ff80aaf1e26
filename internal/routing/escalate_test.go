package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/backoff"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// clock is a controlled clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// hook is a chat channel's incoming webhook: a real local HTTP server
// that keeps each message's text; fail makes its first answers 500.
type hook struct {
	srv  *httptest.Server
	msgs chan string
	mu   sync.Mutex
	fail int
}

func newHook(t *testing.T) *hook {
	t.Helper()
	h := &hook{msgs: make(chan string, 16)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		failing := h.fail > 0
		h.fail--
		h.mu.Unlock()
		if failing {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		h.msgs <- m.Text
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// url is the hook's address, with the secret path a chat service gives.
func (h *hook) url() string { return h.srv.URL + "/hooks/s3cr3t-path" }

// next waits for the hook's next message.
func (h *hook) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-h.msgs:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no message reached the webhook within 30 s")
		return ""
	}
}

// none says no message is waiting at the hook now.
func (h *hook) none(t *testing.T, why string) {
	t.Helper()
	select {
	case m := <-h.msgs:
		t.Fatalf("%s: got %q", why, m)
	default:
	}
}

// rig is one process's routing: its inbox, its router, on a journal
// replicas may share.
type rig struct {
	in     *inbox.Inbox
	router *Router
	hooks  *Webhooks
	watch  *inbox.Subscription
}

func newRig(t *testing.T, clk *clock, f Table, j Journal, log *slog.Logger) *rig {
	t.Helper()
	return newRigOn(t, clk, f, j, log, inbox.Options{Now: clk.Now})
}

// newRigOn is newRig with its inbox's options (a journal of the answers,
// claims and assignments the replicas share).
func newRigOn(t *testing.T, clk *clock, f Table, j Journal, log *slog.Logger, opts inbox.Options) *rig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rg := &rig{in: inbox.New(opts)}
	rg.hooks = NewWebhooks(ctx, WebhookConfig{Backoff: backoff.Policy{Min: time.Millisecond, Max: 5 * time.Millisecond}, Logger: log})
	rg.router = New(Config{Routes: f, Journal: j, Now: clk.Now, Tick: time.Hour, Logger: log,
		Link: func(c inbox.Card) string { return "https://forms.example/cards/" + string(c.ID) + "/page" }})
	rg.router.Attach(nil, rg.hooks, nil)
	done := make(chan struct{})
	sub := rg.in.Subscribe(64) // before any question, as serve does
	go func() { defer close(done); rg.router.Run(ctx, rg.in, sub) }()
	rg.watch = rg.in.Subscribe(64)
	t.Cleanup(func() { cancel(); <-done; rg.hooks.Wait(); rg.watch.Close() })
	return rg
}

// routing waits until card id's routing is want's (team and steps' kinds and teams).
func (rg *rig) waitSteps(t *testing.T, id inbox.CardID, team string, steps ...string) inbox.Routing {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c, ok := rg.in.Card(id)
		if ok {
			rt := c.Verdict(time.Now(), inbox.Viewer{}).Routing
			var got []string
			for _, s := range rt.Steps {
				got = append(got, s.Kind+" "+s.Team)
			}
			if rt.Team == team && strings.Join(got, ", ") == strings.Join(steps, ", ") {
				return rt
			}
		}
		select {
		case <-rg.watch.C():
		case <-deadline:
			c, _ := rg.in.Card(id)
			t.Fatalf("card %s: routing %+v, want team %q steps %v", id, c.Verdict(time.Now(), inbox.Viewer{}).Routing, team, steps)
		}
	}
}

func openJournal(t *testing.T, path string) *sqlite.Journal {
	t.Helper()
	j, err := sqlite.Open(path, sqlite.Options{Host: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

// A question nobody answers or claims: its team's channel gets it, then
// after remind a reminder, then after escalate escalate_to's channel; each
// step is on its card, sent once, never answering it; a replica on the
// same journal shows the steps and sends none again, and a restarted
// process shows them with their times.
func TestRemindThenEscalateNeverAnswers(t *testing.T) {
	t.Parallel()
	oncall, leads := newHook(t), newHook(t)
	oncall.fail = 2 // a failing channel is tried again
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`", "remind": "2m", "escalate": "4m", "escalate_to": "leads"},
		"leads": {"webhook": "`+leads.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	// Two replicas on one journal (SQLite stands for the database
	// replicas share: one process holds its file).
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	a := newRig(t, clk, f, j, log)
	b := newRig(t, clk, f, j, log)

	id := ask(t, a.in, "deploy-1", "r1", "form", 1)
	ask(t, b.in, "deploy-1", "r1", "form", 1)
	a.waitSteps(t, id, "oncall")
	b.waitSteps(t, id, "oncall")
	msg := oncall.next(t)
	assert.Equal(t, "New question for oncall from claude-code: “Deploy?” (form). Answer it here: https://forms.example/cards/"+string(id)+"/page", msg)

	clk.Add(2 * time.Minute)
	a.router.Sweep(context.Background(), a.in)
	b.router.Sweep(context.Background(), b.in)
	reminded := a.waitSteps(t, id, "oncall", "reminded oncall")
	b.waitSteps(t, id, "oncall", "reminded oncall")
	assert.Equal(t, clk.Now(), reminded.Steps[0].At)
	assert.Contains(t, oncall.next(t), "Reminder for oncall: unanswered for 2 min")
	leads.none(t, "leads are not told before escalate")

	clk.Add(2 * time.Minute)
	a.router.Sweep(context.Background(), a.in)
	b.router.Sweep(context.Background(), b.in)
	a.waitSteps(t, id, "oncall", "reminded oncall", "escalated leads")
	b.waitSteps(t, id, "oncall", "reminded oncall", "escalated leads")
	assert.Contains(t, leads.next(t), "Escalated to leads: oncall has not answered for 4 min")

	a.hooks.Wait()
	b.hooks.Wait()
	oncall.none(t, "one new-question message and one reminder, of both replicas")
	leads.none(t, "one escalation, of both replicas")
	c, _ := a.in.Card(id)
	vd := c.Verdict(clk.Now(), inbox.Viewer{})
	assert.True(t, vd.Open, "silence answers nothing: the question is still open")
	assert.Nil(t, vd.Answered)

	var m bytes.Buffer
	a.router.Metrics().Write(&m)
	b.router.Metrics().Write(&m)
	assert.Equal(t, 1, strings.Count(m.String(), `aepforms_reminders_total{team="oncall"} 1`), "%s", m.String())
	assert.Equal(t, 1, strings.Count(m.String(), `aepforms_escalations_total{team="leads"} 1`), "%s", m.String())

	logMu.Lock()
	assert.NotContains(t, logs.String(), "s3cr3t", "a webhook is logged by its origin only")
	assert.Contains(t, logs.String(), "webhook="+oncall.srv.URL, "the failed tries are logged by origin")
	logMu.Unlock()

	// A restart: the steps are read back from the journal, with their times.
	restarted := newRig(t, clk, f, j, log)
	ask(t, restarted.in, "deploy-1", "r1", "form", 1)
	rt := restarted.waitSteps(t, id, "oncall", "reminded oncall", "escalated leads")
	assert.True(t, rt.Steps[0].At.Equal(reminded.Steps[0].At), "the reminder's time survives the restart")
	restarted.router.Sweep(context.Background(), restarted.in)
	restarted.hooks.Wait()
	oncall.none(t, "nothing is sent again after a restart")
	leads.none(t, "nothing is sent again after a restart")
}

// A claim ("I’m on it") stops the reminders and the escalation; a
// question near its deadline escalates before its team's escalate.
func TestClaimStopsRemindersAndADeadlineEscalatesEarly(t *testing.T) {
	t.Parallel()
	leads := newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"remind": "2m", "escalate": "1h", "escalate_to": "leads"},
		"leads": {"webhook": "`+leads.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	rg := newRig(t, clk, f, openJournal(t, filepath.Join(t.TempDir(), "j.db")), quietLog())

	claimed := ask(t, rg.in, "s1", "r1", "form", 1)
	rg.waitSteps(t, claimed, "oncall")
	_, err := rg.in.Claim(claimed, "ann")
	require.NoError(t, err)

	// Asked at 09:10 with a deadline at 09:30: under a quarter (5 min)
	// left from 09:25 on.
	e := requestWithDeadline(t, "s1", "r2", 2, clk.Now().Add(20*time.Minute))
	rg.in.Apply(e)
	near := inbox.RequestKey{Source: testSource, Session: "s1", RequestID: "r2"}.CardID()
	rg.waitSteps(t, near, "oncall")

	clk.Add(3 * time.Minute)
	rg.router.Sweep(context.Background(), rg.in)
	rg.waitSteps(t, near, "oncall", "reminded oncall")
	c, _ := rg.in.Card(claimed)
	assert.Empty(t, c.Verdict(clk.Now(), inbox.Viewer{}).Routing.Steps, "a claimed question is not reminded")
	clk.Add(13 * time.Minute) // 09:26: 4 min of 20 left
	rg.router.Sweep(context.Background(), rg.in)
	rg.waitSteps(t, near, "oncall", "reminded oncall", "escalated leads")
	assert.Contains(t, leads.next(t), "Escalated to leads")
}

// requestWithDeadline is a form request of session with expires_at.
func requestWithDeadline(t *testing.T, session, id string, seq int64, deadline time.Time) *aep.Event {
	t.Helper()
	e, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Source: testSource, Agent: "claude-code",
		Session: session, Seq: aep.Int64(seq), Capture: "full", Time: "2026-07-03T09:10:00Z",
		Data: map[string]any{"kind": "form", "prompt": "Ship?", "expires_at": deadline.UTC().Format(time.RFC3339)}})
	require.NoError(t, err)
	return e
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A question someone has answered, its answer on its way to the agent
// (held for Undo, or queued while the relay is away), is not unanswered:
// its team is not reminded and escalate_to is not told it waits.
func TestAnAnswerOnItsWayIsNotRemindedOrEscalated(t *testing.T) {
	t.Parallel()
	oncall, leads := newHook(t), newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`", "remind": "2m", "escalate": "4m", "escalate_to": "leads"},
		"leads": {"webhook": "`+leads.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	rg := newRig(t, clk, f, openJournal(t, filepath.Join(t.TempDir(), "j.db")), quietLog())

	id := ask(t, rg.in, "s1", "r1", "form", 1)
	rg.waitSteps(t, id, "oncall")
	assert.Contains(t, oncall.next(t), "New question for oncall")
	_, err := rg.in.BeginSubmission(id, inbox.Submission{Token: "t1", CommandID: "c1", By: "ann",
		Answer: aep.Answer{Values: aep.Values{"name": "x"}}, Form: url.Values{"f0": {"x"}}})
	require.NoError(t, err)
	c, _ := rg.in.Card(id)
	require.True(t, c.Verdict(clk.Now(), inbox.Viewer{}).Open, "the agent has not recorded it yet")

	for range 2 {
		clk.Add(2 * time.Minute)
		rg.router.Sweep(context.Background(), rg.in)
	}
	rg.hooks.Wait()
	c, _ = rg.in.Card(id)
	assert.Empty(t, c.Verdict(clk.Now(), inbox.Viewer{}).Routing.Steps, "an answered question is neither reminded nor escalated")
	oncall.none(t, "no reminder of an answered question")
	leads.none(t, "no escalation of an answered question")
}

// An agent's words reach the chat channel as text: they mention no one
// (Slack's <!channel>, Mattermost's @channel, @all, @here and names) and
// make no link or image of Markdown (Mattermost renders a webhook's text
// as Markdown) that would show other words than the address it opens.
func TestAgentTextInAChatMessageIsText(t *testing.T) {
	t.Parallel()
	oncall := newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	rg := newRig(t, clk, f, openJournal(t, filepath.Join(t.TempDir(), "j.db")), quietLog())

	prompt := "<!channel> @channel @all @here @ann: [Approve here](https://evil.example/a) ![x](https://evil.example/p.png)"
	e, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Source: testSource, Agent: "@here",
		Session: "s1", Seq: aep.Int64(1), Capture: "full", Time: "2026-07-03T09:10:00Z",
		Data: map[string]any{"kind": "form", "prompt": prompt}})
	require.NoError(t, err)
	rg.in.Apply(e)
	msg := oncall.next(t)
	for _, mention := range []string{"<!channel>", "@channel", "@all", "@here", "@ann"} {
		assert.NotContains(t, msg, mention, "no one is mentioned")
	}
	assert.NotContains(t, msg, "](", "no Markdown link or image")
	assert.Contains(t, msg, "Approve here", "the words are kept")
	assert.Contains(t, msg, "https://evil.example/a", "the address is shown as it is")
}

// Nor do an agent's line breaks: a carriage return (a line break to
// Markdown) in the prompt's first line, or any break in the agent's name,
// would start a line of the agent's own in the message, where a
// reference link's definition ([1]: https://…) makes "[Approve][1]" a
// link that shows other words than its address, and a heading or a list
// looks like this UI's words.
func TestAgentLineBreaksInAChatMessageAreSpaces(t *testing.T) {
	t.Parallel()
	oncall := newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	rg := newRig(t, clk, f, openJournal(t, filepath.Join(t.TempDir(), "j.db")), quietLog())

	e, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Source: testSource, Agent: "builder\n# Approved by leads\u2028",
		Session: "s1", Seq: aep.Int64(1), Capture: "full", Time: "2026-07-03T09:10:00Z",
		Data: map[string]any{"kind": "form", "prompt": "Deploy? [Approve][1]\r[1]: https://evil.example/a\rthanks\nmore"}})
	require.NoError(t, err)
	rg.in.Apply(e)
	msg := oncall.next(t)
	assert.NotContains(t, msg, "\r")
	assert.NotContains(t, msg, "\n")
	assert.NotContains(t, msg, "\u2028")
	assert.Contains(t, msg, "[1]: https://evil.example/a", "the words are kept, on the one line")
}

// A question a standing answer (a rule) answers is not posted to its
// team's channel: nobody needs to come.
func TestARuledQuestionIsNotPosted(t *testing.T) {
	t.Parallel()
	oncall := newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	in := inbox.New(inbox.Options{Now: clk.Now})
	hooks := NewWebhooks(ctx, WebhookConfig{Logger: quietLog()})
	r := New(Config{Routes: f, Now: clk.Now, Tick: time.Hour, Logger: quietLog(),
		Ruled: func(_ context.Context, c inbox.Card) bool { return c.Key.RequestID == "ruled" }})
	r.Attach(nil, hooks, nil)
	sub := in.Subscribe(64)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, in, sub) }()
	t.Cleanup(func() { cancel(); <-done })

	ask(t, in, "s1", "ruled", "form", 1)
	ask(t, in, "s1", "asked", "form", 2)
	assert.Contains(t, oncall.next(t), "New question for oncall")
	hooks.Wait()
	oncall.none(t, "the ruled question is not posted")
}

// A question nobody here can answer (answered in the agent's own UI,
// respond_via without control) is labelled with its team but posted to
// no channel, reminded nor escalated: "Answer it here" would send people
// to a card that takes no answer.
func TestAQuestionAnsweredElsewhereIsNotAnnouncedRemindedNorEscalated(t *testing.T) {
	t.Parallel()
	oncall, leads := newHook(t), newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`", "remind": "2m", "escalate": "4m", "escalate_to": "leads"},
		"leads": {"webhook": "`+leads.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	rg := newRig(t, clk, f, openJournal(t, filepath.Join(t.TempDir(), "j.db")), quietLog())

	e, err := aep.Build(aep.Envelope{ID: "elsewhere", Type: "attention.requested", Source: testSource, Agent: "claude-code",
		Session: "s1", Seq: aep.Int64(1), Capture: "full", Time: "2026-07-03T09:10:00Z",
		Data: map[string]any{"kind": "input", "prompt": "Which suites? (answered in the terminal)", "respond_via": []string{"terminal"}}})
	require.NoError(t, err)
	rg.in.Apply(e)
	elsewhere := inbox.RequestKey{Source: testSource, Session: "s1", RequestID: "elsewhere"}.CardID()
	rg.waitSteps(t, elsewhere, "oncall")
	here := ask(t, rg.in, "s1", "r2", "form", 2)
	rg.waitSteps(t, here, "oncall")
	assert.Contains(t, oncall.next(t), "“Deploy?”")

	clk.Add(4 * time.Minute)
	rg.router.Sweep(context.Background(), rg.in)
	rg.router.Sweep(context.Background(), rg.in)
	rg.waitSteps(t, here, "oncall", "reminded oncall", "escalated leads")
	rg.waitSteps(t, elsewhere, "oncall")
	assert.Contains(t, oncall.next(t), "Reminder for oncall")
	assert.Contains(t, leads.next(t), "Escalated to leads")
	rg.hooks.Wait()
	oncall.none(t, "nothing of the question answered elsewhere")
	leads.none(t, "nothing of the question answered elsewhere")
}

// A restart does not put a question's reminder or escalation off: their
// clocks run from when the question was first routed (kept in the
// journal), not from when the restarted process saw it again.
func TestARestartKeepsTheRemindAndEscalateClocks(t *testing.T) {
	t.Parallel()
	oncall, leads := newHook(t), newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`", "remind": "5m", "escalate": "10m", "escalate_to": "leads"},
		"leads": {"webhook": "`+leads.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	before := newRig(t, clk, f, j, quietLog())
	id := ask(t, before.in, "s1", "r1", "form", 1)
	before.waitSteps(t, id, "oncall")
	assert.Contains(t, oncall.next(t), "New question for oncall")

	clk.Add(4 * time.Minute) // restarted 4 min after the question came
	restarted := newRig(t, clk, f, j, quietLog())
	ask(t, restarted.in, "s1", "r1", "form", 1)
	restarted.waitSteps(t, id, "oncall")
	clk.Add(time.Minute)
	restarted.router.Sweep(context.Background(), restarted.in)
	restarted.waitSteps(t, id, "oncall", "reminded oncall")
	assert.Contains(t, oncall.next(t), "Reminder for oncall: unanswered for 5 min")
	clk.Add(5 * time.Minute)
	restarted.router.Sweep(context.Background(), restarted.in)
	restarted.waitSteps(t, id, "oncall", "reminded oncall", "escalated leads")
	assert.Contains(t, leads.next(t), "oncall has not answered for 10 min")
}
