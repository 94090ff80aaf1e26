package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/agent"
)

// TestPermissionNoteReachesTheAgent answers the demo agent's permission
// requests in Chromium, as an operator would: "Add a note", type it,
// press Deny; and, on a second card, a note sent alone. The demo agent's
// record holds what arrived: option = the option pressed and text = the
// note beside it; the note alone as text only (AEP-0008: the agent, not
// the UI, decides what unmatched text means, and never grants on it).
func TestPermissionNoteReachesTheAgent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	s := startStack(t, stackOptions{})
	denyAgent := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	noteAgent := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	denySess, _ := askedRequest(t, denyAgent, agent.ScenarioPermission)
	noteSess, _ := askedRequest(t, noteAgent, agent.ScenarioPermission)
	s.openForm(t, denySess.ID)
	s.openForm(t, noteSess.ID)

	tab, cancel := chromedp.NewContext(browsertest.New(t))
	defer cancel()
	ctx, stop := context.WithTimeout(tab, stackWait)
	defer stop()
	console := browsertest.WatchConsole(tab)
	card := func(session string) string {
		return `article[data-testid="card"]:has([data-testid="prov-session"][title="` + session + `"])`
	}
	deny, alone := card(denySess.ID), card(noteSess.ID)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.uiURL),
		chromedp.WaitVisible(deny+` [data-testid="note-summary"]`),
		chromedp.Click(deny+` [data-testid="note-summary"]`),
		chromedp.WaitVisible(deny+` textarea[name="text"]`),
		chromedp.SendKeys(deny+` textarea[name="text"]`, "Use the staging registry instead\n"),
		chromedp.Click(deny+` button[data-testid="option"][data-refusing="true"]`),
	))
	got := awaitCommands(t, denyAgent, denySess.ID, 1, nil)
	require.Len(t, got, 1)
	assert.JSONEq(t, `{"option":"deny","text":"Use the staging registry instead\n"}`, answerOf(t, got[0].Raw),
		"the option pressed, with the note beside it (Enter in the note pressed nothing)")
	assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(alone+` [data-testid="note-summary"]`),
		chromedp.WaitVisible(alone+` textarea[name="text"]`),
		chromedp.SendKeys(alone+` textarea[name="text"]`, "Not now: ask me after the release"),
		chromedp.Click(alone+` button[data-testid="note-only"]`),
	))
	got = awaitCommands(t, noteAgent, noteSess.ID, 1, nil)
	require.Len(t, got, 1)
	assert.JSONEq(t, `{"text":"Not now: ask me after the release"}`, answerOf(t, got[0].Raw), "the note alone: text only")
	cancel()
	console.Wait()
	assert.Empty(t, console.Problems(), "console errors (CSP violations, script errors)")
}
