//go:build unix

package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/crashpoint"
)

// post sends the form as submit does, but a connection that ends without
// a response (the process died first) is an outcome, not a test failure:
// it returns the status, or 0 with the error.
func (s *stack) post(t *testing.T, f *htmlForm, submitter *formControl) (int, error) {
	t.Helper()
	u := s.resolve(t, f.page.url, f.action)
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(encodePairs(f.entries(submitter))))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Referer", f.page.url.String())
	req.Header.Set("Accept", "text/html")
	resp, err := uiClient().Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close() // the 303 may be cut short by the kill right after it
	return resp.StatusCode, nil
}

// Killed at each window of an answer's way (after the journal write and
// before the 303 and the send; the command let go and not yet written,
// the 303 beside it; the 303 out and the command held for Undo
// (--undo-window); between the send and the ack; the command written
// and the 303 held back; after the ack, before its outcome is
// journaled), then started again on the same journal: the agent executes
// the answer once, under one command id, and the restarted UI shows it
// as its own. A post that got no response is posted again to the
// restarted UI, as an operator resubmits it: the same 303, nothing sent
// twice. Run
// against a relay that keeps the commands in its history and one that
// keeps none (the restarted UI then sees its command only in its
// journal). While the restarted UI runs, a second serve on the same
// journal is refused and names --db.
//
// Also, as a process: a damaged journal stops serve (exit status 1)
// with a message naming the file and the way out, and the file is left
// as it was.
func TestServeProcessCrashesAndJournal(t *testing.T) {
	t.Parallel()
	bin := buildCrashBinary(t, t.TempDir())
	t.Run("damaged journal", func(t *testing.T) {
		t.Parallel()
		r := newCrashRig(t, bin)
		require.NoError(t, os.MkdirAll(filepath.Dir(r.db), 0o700))
		garbage := append([]byte("this is not a database, but it is someone's file\n"), make([]byte, 4096)...)
		require.NoError(t, os.WriteFile(r.db, garbage, 0o600))
		p := r.exec(t, "ui (damaged journal)", "")
		p.awaitExit(t, 1)
		logs := p.logs.String()
		assert.Contains(t, logs, r.db, "names the journal")
		assert.Contains(t, logs, "move it aside", "names the way out")
		assert.NotContains(t, logs, "listening", "nothing started")
		b, err := os.ReadFile(r.db)
		require.NoError(t, err)
		assert.Equal(t, garbage, b, "never replaced")
	})
	windows := []struct {
		point string
		// before checks, after the kill and before the restart, that the
		// process died in the window it names.
		before func(t *testing.T, ag *agent.Agent, session string, status int, postErr error)
	}{
		{crashpoint.Recorded, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			assert.Error(t, postErr, "killed before the 303: the post gets no response (got %d)", status)
			assert.Empty(t, commandsTo(ag, session), "nothing was sent before the kill")
		}},
		{crashpoint.Unsent, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			// The 303 is written beside the command's release: it may
			// or may not have left before the kill.
			if postErr == nil {
				assert.Equal(t, http.StatusSeeOther, status)
			}
			assert.Empty(t, commandsTo(ag, session), "nothing was sent before the kill")
		}},
		{crashpoint.Held, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			// Held for Undo: the 303 is out before the kill (it may
			// still be cut short), the command never left.
			if postErr == nil {
				assert.Equal(t, http.StatusSeeOther, status)
			}
			assert.Empty(t, commandsTo(ag, session), "nothing was sent before the kill")
		}},
		{crashpoint.Sent, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			if postErr == nil {
				assert.Equal(t, http.StatusSeeOther, status)
			}
			got := awaitCommands(t, ag, session, 1, nil)
			assert.Len(t, got, 1, "the command written before the kill reached the agent")
		}},
		{crashpoint.SentNo303, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			assert.Error(t, postErr, "the 303 was held until the kill: the post gets no response (got %d)", status)
			got := awaitCommands(t, ag, session, 1, nil)
			assert.Len(t, got, 1, "the command went out before the 303: it reached the agent")
		}},
		{crashpoint.Acked, func(t *testing.T, ag *agent.Agent, session string, status int, postErr error) {
			// The 303 is written beside the command's release, not
			// after the ack: a quick agent's ack can beat its last
			// byte out, and the kill then leaves the post unanswered.
			if postErr == nil {
				assert.Equal(t, http.StatusSeeOther, status)
			}
			got := commandsTo(ag, session)
			require.Len(t, got, 1, "the agent acked the command before the kill")
			assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome)
		}},
	}
	// armed are the flags, beyond the rig's, of the armed serve at a
	// point: an undo window for Held (the restart has none).
	armed := map[string][]string{crashpoint.Held: {"--undo-window", "1h"}}
	relays := []struct {
		name string
		args []string
	}{
		{"relay keeps commands", nil},
		{"relay keeps no commands", []string{"--keep-no-commands"}},
	}
	for _, rl := range relays {
		for _, w := range windows {
			t.Run("crash/"+rl.name+"/"+w.point, func(t *testing.T) {
				t.Parallel()
				r := newCrashRig(t, bin, rl.args...)
				ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
				sess, req := askedRequest(t, ag, agent.ScenarioPermission)

				first, proc := r.serve(t, "ui (armed: "+w.point+")", w.point, armed[w.point]...)
				_, _, f := first.openForm(t, sess.ID)
				status, postErr := first.post(t, f, f.button(t, "Deny"))
				proc.awaitKilled(t, w.point)
				w.before(t, ag, sess.ID, status, postErr)

				second, _ := r.serve(t, "ui (restarted)", "")
				if postErr != nil {
					// No response: the browser posts the same form again
					// (the operator resubmits), now to the restarted UI,
					// once it shows the card. Its form token finds the
					// kept answer: the same 303, nothing sent again.
					second.awaitCard(t, sess.ID, "the card back after the restart", func(*goquery.Selection) bool { return true })
					status, err := second.postAs(t, f, f.button(t, "Deny"))
					require.NoError(t, err)
					assert.Equal(t, http.StatusSeeOther, status, "the retried post finds its kept answer")
				}
				card := second.awaitCard(t, sess.ID, "the answer recorded by the agent", func(c *goquery.Selection) bool {
					return c.AttrOr("data-state", "") == "answered"
				})
				assert.NotContains(t, card.Find(`[data-testid="state-text"]`).Text(), "elsewhere", "the answer is this UI's own")

				got := commandsTo(ag, sess.ID)
				require.Len(t, got, 1, "one command id for the request, never a second: %+v", got)
				assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "executed: %+v", got[0].Decision)
				assert.Equal(t, req.ID, got[0].Subject)
				assert.Equal(t, 0, got[0].Differing, "every transmission is the journaled bytes")
				assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw), "the answer posted before the kill")
				// History is honest after the restart: the command the
				// agent ran is accepted and recorded, never "not sent".
				awaitHistory(t, second, func(rows []historyRow) bool {
					return len(rows) == 1 && rows[0].Recorded
				})
				rows := historyRows(t, second)
				require.Len(t, rows, 1, "one History entry: %+v", rows)
				assert.Equal(t, got[0].ID, rows[0].CommandID)
				assert.Equal(t, "accepted", rows[0].State, "%+v", rows[0])

				// The restarted UI holds the journal: another serve on it is refused.
				other := r.exec(t, "ui (second on the same journal)", "")
				other.awaitExit(t, 1)
				logs := other.logs.String()
				assert.Contains(t, logs, "--db", "names the way to another journal")
				assert.Contains(t, logs, r.db, "names the journal")
				assert.NotContains(t, logs, "listening", "nothing started")
			})
		}
	}
}
