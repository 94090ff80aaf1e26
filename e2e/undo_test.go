package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// Undo with a real agent. Within the window: the page after the send
// shows what was sent and Undo; Undo sends nothing, and the card opens
// again with the answer in its form. The operator answers differently,
// and that answer is held too when the UI stops: the next serve on the
// same journal sends it (a held answer is journaled, never lost) and not
// the one taken back, which the agent never sees. After the window: the
// command leaves by itself, exactly once.
func TestUndoWithARealAgent(t *testing.T) {
	t.Parallel()
	t.Run("undo within the window sends nothing", func(t *testing.T) {
		t.Parallel()
		r := newResumeStack(t)
		r.extra = []string{"--undo-window", "1h"}
		ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
		sess, req := askedRequest(t, ag, agent.ScenarioPermission)

		first, stopFirst := r.serve(t, "ui (undo)")
		_, _, f := first.openForm(t, sess.ID)
		after := first.follow(t, first.submit(t, f, f.button(t, "Deny"), ""))
		bar := after.doc.Find(`[data-testid="undo-bar"] form[data-testid="bar-undo"]`)
		require.Equal(t, 1, bar.Length(), "the page after the send offers Undo; body: %s", after.body)
		assert.Contains(t, bar.Text(), "Deny", "what was sent")
		undo := bar.Find(`input[name="undo"]`).AttrOr("value", "")
		_, denied, ok := strings.Cut(undo, " ")
		require.True(t, ok, "the Undo names the card and the command: %q", undo)

		undone := first.follow(t, first.postUndo(t, after, bar))
		card := undone.cardOf(t, sess.ID)
		assert.Equal(t, "undone", card.AttrOr("data-state", ""), "the card says it was undone")
		assert.Zero(t, undone.doc.Find(`[data-testid="undo-bar"]`).Length(), "nothing left to undo")

		_, _, f = first.openForm(t, sess.ID)
		again := first.submit(t, f, f.button(t, "Allow once"), "")
		require.Equal(t, http.StatusSeeOther, again.status, "answered differently; body: %s", again.body)
		assert.Empty(t, commandsTo(ag, sess.ID), "both answers held: nothing sent yet")
		stopFirst()

		r.extra = nil
		second, _ := r.serve(t, "ui (restarted)")
		got := awaitCommands(t, ag, sess.ID, 1, nil)
		second.awaitCard(t, sess.ID, "the answer recorded by the agent", func(c *goquery.Selection) bool {
			return c.AttrOr("data-state", "") == "answered"
		})
		got = commandsTo(ag, sess.ID)
		require.Len(t, got, 1, "one command, the second answer's: %+v", got)
		assert.NotEqual(t, denied, got[0].ID, "the answer taken back never reached the agent")
		assert.Equal(t, req.ID, got[0].Subject)
		assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome)
		assert.Contains(t, answerOf(t, got[0].Raw), "allow")
	})
	t.Run("after the window the command is sent once", func(t *testing.T) {
		t.Parallel()
		s := startStack(t, stackOptions{uiEnv: map[string]string{undoWindowEnv: "200ms"}})
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
		sess, _ := askedRequest(t, ag, agent.ScenarioPermission)
		_, _, f := s.openForm(t, sess.ID)
		posted := s.submit(t, f, f.button(t, "Deny"), "")
		require.Equal(t, http.StatusSeeOther, posted.status, "body: %s", posted.body)
		awaitCommands(t, ag, sess.ID, 1, nil)
		s.awaitCard(t, sess.ID, "the answer recorded by the agent", func(c *goquery.Selection) bool {
			return c.AttrOr("data-state", "") == "answered"
		})
		got := commandsTo(ag, sess.ID)
		require.Len(t, got, 1, "exactly one command: %+v", got)
		assert.Equal(t, 1, got[0].Count, "sent once, never again")
		assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw))
	})
}

// postUndo posts an Undo form of page p as the browser does.
func (s *stack) postUndo(t *testing.T, p *uiPage, f *goquery.Selection) *uiPage {
	t.Helper()
	vals := url.Values{}
	f.Find(`input[type="hidden"]`).Each(func(_ int, in *goquery.Selection) {
		vals.Add(in.AttrOr("name", ""), in.AttrOr("value", ""))
	})
	u := s.resolve(t, p.url, f.AttrOr("action", ""))
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, u.String(), strings.NewReader(vals.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Referer", p.url.String())
	req.Header.Set("Accept", "text/html")
	return s.do(t, req)
}
