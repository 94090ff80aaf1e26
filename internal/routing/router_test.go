package routing

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routes"
)

const testSource = "aep://test/agent/claude-code/session/s"

// ask puts a request of kind in session into in and returns its card.
func ask(t *testing.T, in *inbox.Inbox, session, id, kind string, seq int64) inbox.CardID {
	t.Helper()
	data := map[string]any{"kind": kind, "prompt": "Deploy?"}
	if kind == "permission" {
		data["options"] = []map[string]any{{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}}
	}
	e, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Source: testSource, Agent: "claude-code",
		Session: session, Seq: aep.Int64(seq), Capture: "full", Time: "2026-07-03T10:00:00Z", Data: data})
	require.NoError(t, err)
	in.Apply(e)
	return inbox.RequestKey{Source: testSource, Session: session, RequestID: id}.CardID()
}

func loadRoutes(t *testing.T, body string) *routes.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "routes.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	f, err := routes.Load(p, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return f
}

// waitTeam waits, on the inbox's changes, until card id is routed to team.
func waitTeam(t *testing.T, in *inbox.Inbox, sub *inbox.Subscription, id inbox.CardID, team string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if c, ok := in.Card(id); ok && c.Verdict(time.Now(), inbox.Viewer{}).Routing.Team == team {
			return
		}
		select {
		case <-sub.C():
		case <-deadline:
			c, _ := in.Card(id)
			t.Fatalf("card %s: routed to %q, want %q", id, c.Verdict(time.Now(), inbox.Viewer{}).Routing.Team, team)
		}
	}
}

// Each new question is routed to the team of the first route it
// matches, and its card says so.
func TestEachQuestionGetsItsFirstMatchingTeam(t *testing.T) {
	t.Parallel()
	f := loadRoutes(t, `{"teams": {"oncall": {}, "leads": {}},
		"routes": [{"agent": "claude-*", "kind": "permission", "team": "oncall"}, {"session_label": "release-*", "team": "leads"}]}`)
	in := inbox.New(inbox.Options{})
	r := New(Config{Routes: f})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.Run(ctx, in, in.Subscribe(64))
	watch := in.Subscribe(64)
	t.Cleanup(watch.Close)

	perm := ask(t, in, "release-1", "r1", "permission", 1)
	form := ask(t, in, "release-1", "r2", "form", 2)
	other := ask(t, in, "deploy-1", "r3", "form", 1)
	after := ask(t, in, "release-2", "r4", "form", 1)
	waitTeam(t, in, watch, perm, "oncall")
	waitTeam(t, in, watch, form, "leads")
	waitTeam(t, in, watch, after, "leads") // the router has looked at r3 before it
	c, _ := in.Card(other)
	require.Empty(t, c.Verdict(time.Now(), inbox.Viewer{}).Routing.Team, "no route matches: no team")
}

// The questions that arrive while the inbox drops the router's
// subscription (a burst overflowed its queue) are routed all the same:
// the router looks at every card when it subscribes again.
func TestQuestionsOfADroppedSubscriptionAreRouted(t *testing.T) {
	t.Parallel()
	f := loadRoutes(t, `{"teams": {"oncall": {}}, "routes": [{"team": "oncall"}]}`)
	in := inbox.New(inbox.Options{})
	r := New(Config{Routes: f})
	watch := in.Subscribe(64)
	t.Cleanup(watch.Close)
	sub := in.Subscribe(1)
	ids := []inbox.CardID{
		ask(t, in, "s1", "r1", "form", 1),
		ask(t, in, "s2", "r2", "form", 1),
		ask(t, in, "s3", "r3", "form", 1),
	}
	require.True(t, sub.Dropped(), "three changes overflow a queue of one")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.Run(ctx, in, sub)
	for _, id := range ids {
		waitTeam(t, in, watch, id, "oncall")
	}
}

// A long-running process keeps what it sent only of the questions still
// open: an answered question's claims (its chat message, its count) are
// let go, or its memory would grow with every question ever asked.
func TestAnAnsweredQuestionsClaimsAreLetGo(t *testing.T) {
	t.Parallel()
	oncall := newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hooks := NewWebhooks(ctx, WebhookConfig{Logger: quietLog()})
	t.Cleanup(hooks.Wait)
	in := inbox.New(inbox.Options{})
	r := New(Config{Routes: f, Hooks: hooks, Logger: quietLog()})
	id := ask(t, in, "s1", "r1", "form", 1)
	c, _ := in.Card(id)
	r.Observe(ctx, in, c)
	assert.Contains(t, oncall.next(t), "New question for oncall")
	r.mu.Lock()
	require.NotEmpty(t, r.sent, "the chat message is claimed")
	r.mu.Unlock()

	e, err := aep.Build(aep.Envelope{ID: "ans-1", Type: "attention.answered", Source: testSource, Agent: "claude-code",
		Session: "s1", Seq: aep.Int64(2), Capture: "full", Time: "2026-07-03T10:05:00Z", Subject: "r1", Cause: "r1",
		Data: aep.Answered{Answer: aep.Answer{Option: "allow"}, By: "lee"}})
	require.NoError(t, err)
	in.Apply(e)
	c, _ = in.Card(id)
	require.True(t, c.Verdict(time.Now(), inbox.Viewer{}).Settled)
	r.Observe(ctx, in, c)
	r.mu.Lock()
	assert.Empty(t, r.sent, "nothing kept of an answered question")
	r.mu.Unlock()
}
