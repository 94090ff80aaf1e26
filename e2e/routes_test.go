package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/aeptest"
	"github.com/aepforms/aepforms/e2e/pushtest"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/app"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/sse"
)

// chatHook is a team's chat channel: a local incoming-webhook receiver
// keeping each message's text.
type chatHook struct {
	srv  *httptest.Server
	msgs chan string
}

func newChatHook(t *testing.T) *chatHook {
	t.Helper()
	h := &chatHook{msgs: make(chan string, 32)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		h.msgs <- m.Text
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// next waits for the channel's next message.
func (h *chatHook) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case m := <-h.msgs:
		return m
	case <-time.After(stackWait):
		t.Fatalf("no %s reached the chat channel within %v", what, stackWait)
		return ""
	}
}

// devices is the push service of the operators' devices: each push's
// device (its path), decryptable by that device's keys.
type devices struct {
	srv *httptest.Server
	got chan string
}

func newDevices(t *testing.T) *devices {
	t.Helper()
	d := &devices{got: make(chan string, 64)}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		d.got <- strings.TrimPrefix(r.URL.Path, "/")
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

// pushed waits for n pushes and returns how many each device got.
func (d *devices) pushed(t *testing.T, n int, what string) map[string]int {
	t.Helper()
	out := map[string]int{}
	deadline := time.After(stackWait)
	for range n {
		select {
		case p := <-d.got:
			out[p]++
		case <-deadline:
			t.Fatalf("%s: %d pushes of %d arrived within %v: %v", what, len(out), n, stackWait, out)
		}
	}
	return out
}

// addOperator runs `aepforms operator add` and returns the secret it prints.
func addOperator(t *testing.T, file, name, role, team string) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, app.Run(context.Background(), []string{"operator", "add", name, "--role", role, "--team", team, "--operators-file", file},
		func(string) string { return "" }, nil, &out, io.Discard))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// as is s signed in as operator name with their own secret.
func (s stack) as(t *testing.T, name, secret string) *stack {
	t.Helper()
	body := url.Values{form.NameOperator: {name}, form.NameSecret: {secret}}.Encode()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.resolve(t, nil, "signin").String(), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	resp, err := uiClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%s signs in", name)
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	s.cookie = strings.Join(cookies, "; ")
	return &s
}

// subscribeDevice subscribes a device of the signed-in operator at
// endpoint for Web Push.
func (s *stack) subscribeDevice(t *testing.T, endpoint string) {
	t.Helper()
	dev, err := pushtest.NewDevice()
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"endpoint": endpoint, "keys": map[string]string{"p256dh": dev.P256dh(), "auth": dev.AuthKey()}})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.uiURL+"subscriptions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Cookie", s.cookie)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

// routedEvents reads the relay's attention.routed events of session,
// history then live, until n have arrived.
func (s *stack) routedEvents(t *testing.T, session string, n int) []*aep.Event {
	t.Helper()
	filter, err := json.Marshal(map[string]string{"session": session, "type": "attention.routed"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	resp := s.relayStream(t, ctx, url.Values{"from": {"all"}, "filter": {string(filter)}})
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body, 0)
	var out []*aep.Event
	for len(out) < n {
		it, err := rd.Next()
		require.NoError(t, err, "waiting %v for %d attention.routed in session %s, %d so far", stackWait, n, session, len(out))
		if it.IsComment {
			continue
		}
		ev, err := aep.Decode([]byte(it.Data))
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

// The team inbox, end to end (issue 36's Done-when, the routing part):
// three operators in two teams (answerers ann and bo in oncall, the admin
// lee in leads), a routes file sending the demo agent's deploy questions
// to oncall with remind 2s and escalate 4s, a chat webhook receiver per
// team and a push service for the devices. A new question notifies only
// oncall's devices and webhook; with nobody answering, oncall is reminded
// and then leads notified, each step on the card; the relay carries an
// attention.routed per delivery, valid against the schema; nothing is
// answered by the passing time; lee's answer reaches the agent once.
func TestTeamInboxRoutesRemindsAndEscalates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opsFile := filepath.Join(dir, "operators")
	secrets := map[string]string{
		"ann": addOperator(t, opsFile, "ann", "answerer", "oncall"),
		"bo":  addOperator(t, opsFile, "bo", "answerer", "oncall"),
		"lee": addOperator(t, opsFile, "lee", "admin", "leads"),
	}
	oncall, leads := newChatHook(t), newChatHook(t)
	routesFile := filepath.Join(dir, "routes.json")
	require.NoError(t, os.WriteFile(routesFile, []byte(`{"teams": {
		"oncall": {"webhook": "`+oncall.srv.URL+`/hooks/oncall-secret", "remind": "2s", "escalate": "4s", "escalate_to": "leads"},
		"leads": {"webhook": "`+leads.srv.URL+`/hooks/leads-secret"}},
		"routes": [{"session_label": "deploy-*", "team": "oncall"}, {"team": "leads"}]}`), 0o600))
	devs := newDevices(t)
	s := startStack(t, stackOptions{uiEnv: map[string]string{
		"AEPFORMS_OPERATORS_FILE": opsFile, "AEPFORMS_ROUTES": routesFile, "AEPFORMS_ROUTES_TICK": "50ms",
		"AEPFORMS_VAPID_SUBJECT": "mailto:ops@example.com", "AEPFORMS_PUSH_ALLOW_LOOPBACK": "1", "AEPFORMS_PUSH_EVERY": "50ms"}})
	ops := map[string]*stack{}
	for name, secret := range secrets {
		ops[name] = s.as(t, name, secret)
		ops[name].subscribeDevice(t, devs.srv.URL+"/"+name)
	}

	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	sess, req := askedRequest(t, ag, agent.ScenarioDeploy)

	// New: oncall's devices and channel only.
	assert.Equal(t, map[string]int{"ann": 1, "bo": 1}, devs.pushed(t, 2, "the new question"), "only oncall's devices")
	msg := oncall.next(t, "new question")
	assert.Contains(t, msg, "New question for oncall from aepforms-demo: “Configure the new service deployment” (form)")
	assert.Contains(t, msg, s.uiURL+"cards/", "with the link to its own page")

	// Reminded, then escalated: each step notifies, none answers.
	assert.Contains(t, oncall.next(t, "reminder"), "Reminder for oncall: unanswered for 2 s")
	assert.Equal(t, map[string]int{"ann": 1, "bo": 1}, devs.pushed(t, 2, "the reminder"))
	assert.Contains(t, leads.next(t, "escalation"), "Escalated to leads: oncall has not answered for 4 s")
	assert.Equal(t, map[string]int{"lee": 1}, devs.pushed(t, 1, "the escalation"))
	card := ops["lee"].awaitCard(t, sess.ID, "the card saying its steps", func(c *goquery.Selection) bool {
		return strings.Contains(c.Find(`[data-testid="routing-steps"]`).Text(), "escalated to leads")
	})
	assert.Equal(t, "for oncall", card.Find(`[data-testid="team"]`).Text())
	assert.Regexp(t, `^Reminded oncall \d\d:\d\d UTC, escalated to leads \d\d:\d\d UTC$`, card.Find(`[data-testid="routing-steps"]`).Text())
	assert.Equal(t, "true", card.AttrOr("data-open", ""), "silence answers nothing")
	assert.Empty(t, commandsTo(ag, sess.ID), "nothing was sent to the agent by the passing time")

	// On the wire: one attention.routed per delivery (three to devices,
	// three to channels), a foreign emitter's, valid against the schema.
	routed := s.routedEvents(t, sess.ID, 6)
	to := map[string]int{}
	for _, e := range routed {
		require.NoError(t, aeptest.ValidateEvent(e))
		assert.Equal(t, req.ID, e.Subject())
		_, hasSeq := e.Seq()
		assert.False(t, hasSeq)
		var d aep.Routed
		require.NoError(t, e.DecodeData(&d))
		assert.Equal(t, "aepforms", d.Via)
		to[d.To]++
	}
	assert.Equal(t, map[string]int{"webpush": 3, "webhook": 3}, to)

	// lee answers: the agent gets it exactly once.
	_, c, f := ops["lee"].openForm(t, sess.ID)
	f.fill(t, fieldNamed(t, c, "Service name"), "checkout")
	got := ops["lee"].sendAndAccept(t, ag, sess.ID, f, f.button(t, ""))
	assert.Contains(t, string(got.Raw), `"agent":"aepforms/lee"`, "sent as lee")
	awaitAnswered := ops["lee"].awaitCard(t, sess.ID, "the card answered", func(c *goquery.Selection) bool { return c.AttrOr("data-settled", "") == "true" })
	assert.NotNil(t, awaitAnswered)
	assert.Len(t, commandsTo(ag, sess.ID), 1, "one command")

	// History keeps where it went and each step, and filters by team and
	// by escalated.
	history := func(q string) *goquery.Selection {
		p := ops["lee"].getPage(t, "history"+q)
		require.Equal(t, http.StatusOK, p.status)
		return p.doc.Find(`[data-testid="history-row"]`)
	}
	rows := history("")
	require.Equal(t, 1, rows.Length())
	assert.Regexp(t, `^Routed to oncall; reminded oncall .+ UTC, escalated to leads .+ UTC$`, rows.Find(`[data-testid="history-routing"]`).Text())
	assert.Equal(t, 1, history("?team=oncall").Length())
	assert.Equal(t, 0, history("?team=leads").Length(), "routed to oncall, escalated to leads")
	assert.Equal(t, 1, history("?escalated=1").Length())

	select {
	case m := <-oncall.msgs:
		t.Fatalf("oncall's channel got more: %q", m)
	case m := <-leads.msgs:
		t.Fatalf("leads' channel got more: %q", m)
	default:
	}
}
