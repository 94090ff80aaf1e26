package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// resumeStack is a relay, a journal file and the UI serving it: started,
// stopped and started again on the same journal, as a restart does.
type resumeStack struct {
	base  *stack // the relay, for the agents: lives as long as the test
	db    string
	home  string
	extra []string // more serve flags for the next serve
}

func newResumeStack(t *testing.T) *resumeStack {
	t.Helper()
	token := "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	env := map[string]string{"AEP_TOKEN": token}
	relayURL, _, stopRelay := runApp(t, "relay", []string{"relay", "--port", "0"}, env, relayReady)
	home := t.TempDir()
	return &resumeStack{
		base: &stack{ctx: context.WithoutCancel(t.Context()), token: token, relayURL: relayURL, relayEnv: env, stopRelay: stopRelay},
		db:   filepath.Join(home, "journal", "aepforms.db"),
		home: home,
	}
}

// serve starts a UI on the journal (an ack window longer than any test,
// so only the restart ends a command's wait) and returns it with its stop.
func (r *resumeStack) serve(t *testing.T, name string) (*stack, func()) {
	t.Helper()
	return r.serveVia(t, name, r.base.relayURL)
}

// serveVia is serve with the UI pointed at relayURL (a proxy).
func (r *resumeStack) serveVia(t *testing.T, name, relayURL string) (*stack, func()) {
	t.Helper()
	args := append([]string{"serve", "--relay", relayURL, "--addr", "127.0.0.1:0", "--ack-window", "5m", "--db", r.db}, r.extra...)
	uiURL, ctx, stop := runApp(t, name, args,
		map[string]string{"AEP_TOKEN": r.base.token, "HOME": r.home}, `aepforms UI listening on (http://[^\s"]+)`)
	s := *r.base
	s.uiURL, s.ctx = uiURL, ctx
	u, err := url.Parse(uiURL)
	require.NoError(t, err)
	s.origin = u.Scheme + "://" + u.Host
	return &s, stop
}

// An answer journaled and sent, whose ack never came before the UI
// stopped, is sent again by the next serve on the same journal once its
// feed has caught up: the same command id, byte for byte (the agent
// counts a redelivery, never a second command), and its card comes back
// locked, saying it was sent before the restart.
func TestResumeAfterRestartSendsTheSameCommand(t *testing.T) {
	t.Parallel()
	r := newResumeStack(t)
	ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, neverAck: true})
	sess, req := askedRequest(t, ag, agent.ScenarioPermission)

	first, stopFirst := r.serve(t, "ui (first)")
	_, _, f := first.openForm(t, sess.ID)
	posted := first.submit(t, f, f.button(t, "Deny"), "")
	require.Equal(t, http.StatusSeeOther, posted.status, "the answer post; body: %s", posted.body)
	sent := awaitCommands(t, ag, sess.ID, 1, nil)
	require.Len(t, sent, 1)
	cmd := sent[0]
	require.Equal(t, agent.OutcomeIgnored, cmd.Decision.Outcome, "the agent never acks: the command waits")
	stopFirst() // the UI stops with the command unacknowledged

	second, _ := r.serve(t, "ui (restarted)")
	got := awaitCommands(t, ag, sess.ID, 1, func(rc agent.Received) bool { return rc.Count >= 2 })
	require.Len(t, got, 1, "one command for the request, never a second id: %+v", got)
	assert.Equal(t, cmd.ID, got[0].ID, "the command id sent again")
	assert.Equal(t, cmd.Source, got[0].Source, "the journal's source, kept across the restart")
	assert.Equal(t, 0, got[0].Differing, "the resend is byte for byte the first transmission")
	assert.Equal(t, req.ID, got[0].Subject)

	card := second.awaitCard(t, sess.ID, "the restored answer", func(c *goquery.Selection) bool {
		return strings.Contains(c.Find(`[data-testid="state-text"]`).Text(), "before aepforms restarted")
	})
	assert.Equal(t, "sending", card.Find(`[data-testid="state"]`).AttrOr("data-state", ""), "the answer is on its way again")
	assert.Zero(t, card.Find(`form[data-testid="answer-form"] button[name="option"]:not([disabled])`).Length(),
		"no option can be pressed while the restored answer waits for the agent")
	assert.Contains(t, card.Find(`[data-testid="state"]`).Text(), "Deny", "what was sent is shown")
}

// noSocketProxy forwards everything to the relay but its WebSocket: the
// UI's feed works, its respond path never connects (a relay that takes
// events but not commands, for as long as the test wants).
func noSocketProxy(t *testing.T, relayURL string) string {
	t.Helper()
	target, err := url.Parse(relayURL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/socket") {
			http.Error(w, "no commands today", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// An answer journaled (the 303) but never sent, because the UI stopped
// before its respond path reached the relay, is sent by the next serve on
// the same journal: the agent executes it once, and the card settles as
// this UI's answer, not someone else's.
func TestResumeAfterRestartSendsWhatWasNeverSent(t *testing.T) {
	t.Parallel()
	r := newResumeStack(t)
	ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, req := askedRequest(t, ag, agent.ScenarioPermission)

	first, stopFirst := r.serveVia(t, "ui (first, no socket)", noSocketProxy(t, r.base.relayURL))
	_, _, f := first.openForm(t, sess.ID)
	posted := first.submit(t, f, f.button(t, "Deny"), "")
	require.Equal(t, http.StatusSeeOther, posted.status, "the answer post; body: %s", posted.body)
	stopFirst()
	require.Empty(t, commandsTo(ag, sess.ID), "the first UI could not send anything")

	second, _ := r.serve(t, "ui (restarted)")
	got := awaitCommands(t, ag, sess.ID, 1, nil)
	require.Len(t, got, 1, "one command for the request: %+v", got)
	assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "the agent acted on the resumed answer: %+v", got[0].Decision)
	assert.Equal(t, req.ID, got[0].Subject)
	assert.Equal(t, `{"option":"deny"}`, answerOf(t, got[0].Raw), "the answer journaled before the restart")

	card := second.awaitCard(t, sess.ID, "the answer recorded", func(c *goquery.Selection) bool {
		return c.AttrOr("data-state", "") == "answered"
	})
	assert.NotContains(t, card.Find(`[data-testid="state-text"]`).Text(), "elsewhere", "the resumed answer is this UI's own")
	assert.Len(t, commandsTo(ag, sess.ID), 1, "still one command")
}

// A journaled answer older than --resend-max-age is not sent again after
// the restart (the agent may no longer remember its command id): it had
// left, so its outcome is unknown (never "not sent"); its card says so,
// shows what was sent, and takes an answer again.
func TestResumeAfterRestartLeavesAnOverAgeAnswerUnsent(t *testing.T) {
	t.Parallel()
	r := newResumeStack(t)
	ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}, neverAck: true})
	sess, _ := askedRequest(t, ag, agent.ScenarioPermission)

	first, stopFirst := r.serve(t, "ui (first)")
	_, _, f := first.openForm(t, sess.ID)
	posted := first.submit(t, f, f.button(t, "Deny"), "")
	require.Equal(t, http.StatusSeeOther, posted.status, "the answer post; body: %s", posted.body)
	awaitCommands(t, ag, sess.ID, 1, nil)
	stopFirst()

	// Every journaled answer is over an age of zero.
	r.extra = []string{"--resend-max-age", "0"}
	second, _ := r.serve(t, "ui (restarted)")
	card := second.awaitCard(t, sess.ID, "the answer not sent again", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="state"]`).AttrOr("data-state", "") == "unknown"
	})
	text := card.Find(`[data-testid="state-text"]`).Text()
	assert.Contains(t, text, "not sent again", "the card says the answer was not sent again")
	assert.Contains(t, card.Find(`[data-testid="state"]`).Text(), "Deny", "what was sent is shown")
	assert.Equal(t, "true", card.AttrOr("data-open", ""), "the question is still open")
	assert.Equal(t, 1, card.Find(`form[data-testid="answer-form"]`).Length(), "the form takes an answer again")
	got := commandsTo(ag, sess.ID)
	require.Len(t, got, 1)
	assert.Equal(t, 1, got[0].Count, "nothing was sent again")
}
