package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
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

// routedOnWire reads the relay's attention.routed events of session,
// history then live, until n have arrived, and returns each event's data
// line exactly as the relay sent it.
func (s *stack) routedOnWire(t *testing.T, session string, n int) []string {
	t.Helper()
	filter, err := json.Marshal(map[string]string{"session": session, "type": "attention.routed"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	resp := s.relayStream(t, ctx, url.Values{"from": {"all"}, "filter": {string(filter)}})
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body, 0)
	var out []string
	for len(out) < n {
		it, err := rd.Next()
		require.NoError(t, err, "waiting %v for %d attention.routed in session %s, %d so far", stackWait, n, session, len(out))
		if !it.IsComment {
			out = append(out, it.Data)
		}
	}
	return out
}

// pageStream loads the inbox page as the operator's browser does and
// opens its live updates where the page's script does (the page's
// data-push, which resumes from the position the page was drawn at), so
// nothing that changed after the page was drawn is missed.
func (s *stack) pageStream(t *testing.T) *pushStream {
	t.Helper()
	p := s.getPage(t, "")
	require.Equal(t, http.StatusOK, p.status)
	push, ok := p.doc.Find("body").Attr("data-push")
	require.True(t, ok, "the page names its live updates (data-push)")
	u := s.resolve(t, p.url, push)
	require.True(t, strings.HasSuffix(u.Path, "/push"), "data-push %q", push)
	return s.openPush(t, "?"+u.RawQuery, "", true)
}

// nextCardPush returns the card of session in the next card push of p
// that is about it (pushes about other cards are passed over).
func nextCardPush(t *testing.T, p *pushStream, session string) *goquery.Selection {
	t.Helper()
	deadline := time.After(stackWait)
	for {
		it := p.next(t, deadline)
		if it.Event != "card" {
			continue
		}
		if c := cardsIn(fragment(t, it.Data), session); c.Length() == 1 {
			return c
		}
	}
}

// routingSteps is the card's routing steps as the operator reads them.
func routingSteps(c *goquery.Selection) string {
	return collapse(c.Find(`[data-testid="routing-steps"]`).Text())
}

// claimOf is the card's claim line ("ann is on it · now"), "" when nobody
// is on it.
func claimOf(c *goquery.Selection) string {
	return collapse(c.Find(`[data-testid="claim"]`).Text())
}

// teamRemind and teamEscalate are oncall's remind and escalate in the
// team inbox test: short, so the test takes seconds; every wait of the
// test is on an event, so a slow machine only makes the steps later.
const (
	teamRemind   = 2 * time.Second
	teamEscalate = 4 * time.Second
)

// The team inbox, end to end, each thing it promises checked as a user would.
// Three operators in two teams (answerers ann and bo in oncall, the admin
// lee in leads), a routes file sending the demo agent's deploy questions
// to oncall with remind 2s and escalate 4s, a chat webhook receiver per
// team, and a push service for each operator's device. The UI reaches the
// relay through a proxy that keeps what it posts, so the relay's feed is
// held against it.
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
		"oncall": {"webhook": "`+oncall.srv.URL+`/hooks/oncall-secret", "remind": "`+teamRemind.String()+`", "escalate": "`+teamEscalate.String()+`", "escalate_to": "leads"},
		"leads": {"webhook": "`+leads.srv.URL+`/hooks/leads-secret"}},
		"routes": [{"session_label": "deploy-*", "team": "oncall"}, {"team": "leads"}]}`), 0o600))
	devs := newDevices(t)
	var emits *emitRecorder
	s := startStack(t, stackOptions{
		uiRelay: func(t *testing.T, relayURL string) string {
			var u string
			emits, u = recordEmits(t, relayURL)
			return u
		},
		uiEnv: map[string]string{
			"AEPFORMS_OPERATORS_FILE": opsFile, "AEPFORMS_ROUTES": routesFile, "AEPFORMS_ROUTES_TICK": "50ms",
			"AEPFORMS_VAPID_SUBJECT": "mailto:ops@example.com", "AEPFORMS_PUSH_ALLOW_LOOPBACK": "1", "AEPFORMS_PUSH_EVERY": "50ms"}})
	ops := map[string]*stack{}
	for name, secret := range secrets {
		ops[name] = s.as(t, name, secret)
		ops[name].subscribeDevice(t, devs.srv.URL+"/"+name)
	}

	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	sess, req := askedRequest(t, ag, agent.ScenarioDeploy)

	// 1. A new question notifies only oncall: ann's and bo's devices and
	// oncall's channel, with the question in the operator's words and a
	// link to its own page; lee's device and leads' channel get nothing
	// (leads' first message, below, is the escalation).
	assert.Equal(t, map[string]int{"ann": 1, "bo": 1}, devs.pushed(t, 2, "the new question"), "only oncall's devices")
	msg := oncall.next(t, "new question")
	assert.Contains(t, msg, "New question for oncall from aepforms-demo: “Configure the new service deployment” (form)")
	assert.Contains(t, msg, s.uiURL+"cards/", "with the link to its own page")
	// The link, opened where nobody is signed in (bo's phone), asks him
	// to sign in and then shows him the card.
	opened := s.openChatLink(t, chatLink(t, msg, s.uiURL), "bo", secrets["bo"])
	assert.Equal(t, 1, cardsIn(opened.doc.Selection, sess.ID).Length(), "the chat link opens the card after sign-in: %s", opened.url)

	// 2. A claim in the open: ann presses "I’m on it" on her page and bo's
	// open page (its live updates, read as its script reads them) is sent
	// the card saying "ann is on it" in the next push. A claim stops the
	// reminders, so ann then ends her claim ("Not on it any more") and the
	// question goes on unanswered and unclaimed: this test releases the
	// claim rather than asking a second question.
	ops["bo"].awaitCard(t, sess.ID, "the card routed to oncall on bo's page", func(c *goquery.Selection) bool {
		return c.Find(`[data-testid="team"]`).Text() == "for oncall"
	})
	boPage := ops["bo"].pageStream(t)
	ops["ann"].postClaimForm(t, sess.ID, "I’m on it")
	card := nextCardPush(t, boPage, sess.ID)
	if claimOf(card) == "" && strings.HasPrefix(routingSteps(card), "Reminded oncall") {
		// On a slow machine the reminder can come before the claim: its
		// own push is the one before the claim's.
		card = nextCardPush(t, boPage, sess.ID)
	}
	assert.Equal(t, "ann", card.Find(`[data-testid="claim"]`).AttrOr("data-claimant", ""), "bo's page shows ann's claim in the next push")
	assert.Regexp(t, `^ann is on it · `, claimOf(card))
	ops["ann"].postClaimForm(t, sess.ID, "Not on it any more")
	card = nextCardPush(t, boPage, sess.ID)
	assert.Empty(t, claimOf(card), "bo's page is told ann is not on it any more, in the next push")
	ops["lee"].awaitMetric(t, "aepforms_time_to_first_claim_seconds_count", 1)
	ops["lee"].awaitMetric(t, `aepforms_team_time_to_first_claim_seconds_count{team="oncall"}`, 1)

	// 3. With nobody answering, oncall is reminded (its channel and
	// devices again), then leads is notified (its channel, lee's device).
	assert.Contains(t, oncall.next(t, "reminder"), "Reminder for oncall: unanswered for 2 s")
	esc := leads.next(t, "escalation")
	assert.Contains(t, esc, "Escalated to leads: oncall has not answered for 4 s", "leads' first message is the escalation")
	assert.Contains(t, esc, s.uiURL+"cards/", "with the link to the card")
	assert.Equal(t, map[string]int{"ann": 1, "bo": 1, "lee": 1}, devs.pushed(t, 3, "the reminder and the escalation"))
	ops["lee"].awaitMetric(t, `aepforms_reminders_total{team="oncall"}`, 1)
	ops["lee"].awaitMetric(t, `aepforms_escalations_total{team="leads"}`, 1)

	// Each step is on the card, on every operator's page: the card says
	// its team and when oncall was reminded and leads notified.
	for _, name := range []string{"lee", "bo"} {
		card = ops[name].awaitCard(t, sess.ID, name+"'s card saying its steps", func(c *goquery.Selection) bool {
			return strings.Contains(routingSteps(c), "escalated to leads")
		})
		assert.Equal(t, "for oncall", card.Find(`[data-testid="team"]`).Text(), "%s's card", name)
		assert.Regexp(t, `^Reminded oncall \d\d:\d\d UTC, escalated to leads \d\d:\d\d UTC$`, routingSteps(card), "%s's card", name)
		assert.Equal(t, "true", card.AttrOr("data-open", ""), "silence answers nothing: %s's card is open", name)
	}

	// 4. Nothing was answered by the passing time: the agent has received
	// nothing, and the relay carries no answer, resolution or timeout.
	assert.Empty(t, commandsTo(ag, sess.ID), "nothing was sent to the agent by the passing time")
	for _, e := range s.relayHistory(t, sess.ID) {
		assert.NotContains(t, []string{"attention.answered", "attention.resolved", "attention.timeout", "control.attention.respond"},
			e.Type(), "the relay carries %s before anyone answered", e.Type())
	}

	// 5. On the wire: one attention.routed per delivery (three rounds of
	// device pushes, three chat messages), a foreign emitter's (no seq),
	// about the request, valid against the schema, and each exactly the
	// bytes the UI posted to the relay.
	to := map[string]int{}
	for _, data := range s.routedOnWire(t, sess.ID, 6) {
		e, err := aep.Decode([]byte(data))
		require.NoError(t, err)
		require.NoError(t, aeptest.ValidateEvent(e))
		assert.Equal(t, req.ID, e.Subject())
		_, hasSeq := e.Seq()
		assert.False(t, hasSeq)
		var d aep.Routed
		require.NoError(t, e.DecodeData(&d))
		assert.Equal(t, "aepforms", d.Via)
		to[d.To]++
		assert.Equal(t, string(emits.body(e.ID())), data, "the relay forwards attention.routed %s byte for byte", e.ID())
	}
	assert.Equal(t, map[string]int{"webpush": 3, "webhook": 3}, to)
	assert.Equal(t, 6, emits.ofType("attention.routed"), "the UI posted one attention.routed per delivery, no more")

	// 6. lee (leads) answers: the agent records it exactly once, sent as
	// lee, accepted.
	_, c, f := ops["lee"].openForm(t, sess.ID)
	f.fill(t, fieldNamed(t, c, "Service name"), "checkout")
	got := ops["lee"].sendAndAccept(t, ag, sess.ID, f, f.button(t, ""))
	assert.Contains(t, string(got.Raw), `"agent":"aepforms/lee"`, "sent as lee")
	assert.Contains(t, answerOf(t, got.Raw), `"checkout"`)
	ops["lee"].awaitCard(t, sess.ID, "the card answered", func(c *goquery.Selection) bool { return c.AttrOr("data-settled", "") == "true" })
	s.awaitRelayEvent(t, sess.ID, "attention.answered", req.ID)
	cmds := commandsTo(ag, sess.ID)
	require.Len(t, cmds, 1, "one command reached the agent")
	assert.Equal(t, 1, cmds[0].Count, "transmitted once")
	assert.Equal(t, got.ID, cmds[0].ID)
	ops["lee"].awaitMetric(t, `aepforms_time_to_answer_seconds_count{team="oncall"}`, 1)

	// 7. History agrees: lee's answer, where it was routed and each step;
	// filtered by team and by escalated.
	history := func(q string) *goquery.Selection {
		p := ops["lee"].getPage(t, "history"+q)
		require.Equal(t, http.StatusOK, p.status)
		return p.doc.Find(`[data-testid="history-row"]`)
	}
	rows := history("")
	require.Equal(t, 1, rows.Length())
	assert.Equal(t, got.ID, rows.AttrOr("data-command", ""), "the command the agent got")
	assert.Equal(t, "Answered by lee", collapse(rows.Find(`[data-testid="history-operator"]`).Text()))
	assert.Contains(t, collapse(rows.Find(`[data-testid="values"]`).Text()), "checkout")
	assert.Regexp(t, `^Routed to oncall; reminded oncall \d\d:\d\d UTC, escalated to leads \d\d:\d\d UTC$`, collapse(rows.Find(`[data-testid="history-routing"]`).Text()),
		"each time as the card says it")
	assert.Equal(t, 1, history("?team=oncall").Length())
	assert.Equal(t, 0, history("?team=leads").Length(), "routed to oncall, escalated to leads")
	assert.Equal(t, 1, history("?escalated=1").Length())

	// The exports keep it too: the JSON lines name the team and each step
	// with its time, the CSV the team and History's words.
	jsonl := ops["lee"].getPage(t, "history.jsonl")
	require.Equal(t, http.StatusOK, jsonl.status)
	var exported struct {
		CommandID string `json:"command_id"`
		Operator  string `json:"operator"`
		Routing   struct {
			Team  string `json:"team"`
			Steps []struct {
				Kind, Team string
				At         time.Time
			} `json:"steps"`
			Escalated bool `json:"escalated"`
		} `json:"routing"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(jsonl.body)), &exported), "one line: %s", jsonl.body)
	assert.Equal(t, got.ID, exported.CommandID)
	assert.Equal(t, "lee", exported.Operator)
	assert.Equal(t, "oncall", exported.Routing.Team)
	assert.True(t, exported.Routing.Escalated)
	require.Len(t, exported.Routing.Steps, 2, "the reminder and the escalation")
	assert.Equal(t, []string{"reminded oncall", "escalated leads"},
		[]string{exported.Routing.Steps[0].Kind + " " + exported.Routing.Steps[0].Team, exported.Routing.Steps[1].Kind + " " + exported.Routing.Steps[1].Team})
	assert.False(t, exported.Routing.Steps[1].At.Before(exported.Routing.Steps[0].At), "oldest first")
	csvPage := ops["lee"].getPage(t, "history.csv")
	require.Equal(t, http.StatusOK, csvPage.status)
	table, err := csv.NewReader(strings.NewReader(csvPage.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, table, 2, "the header and the one answer")
	col := map[string]string{}
	for i, name := range table[0] {
		col[name] = table[1][i]
	}
	assert.Equal(t, "oncall", col["routed_to"])
	assert.Regexp(t, `^Routed to oncall; reminded oncall \d+ \w+ \d{4} \d\d:\d\d:\d\d UTC, escalated to leads \d+ \w+ \d{4} \d\d:\d\d:\d\d UTC$`, col["routing"],
		"the CSV words the steps as History does, each time exact")

	select {
	case m := <-oncall.msgs:
		t.Fatalf("oncall's channel got more: %q", m)
	case m := <-leads.msgs:
		t.Fatalf("leads' channel got more: %q", m)
	default:
	}
}

// postClaimForm posts the card's claim form (its button reads button) as
// a browser without script does, and follows the answer to the card.
func (s *stack) postClaimForm(t *testing.T, session, button string) {
	t.Helper()
	p := s.getPage(t, "?session="+url.QueryEscape(session))
	require.Equal(t, http.StatusOK, p.status)
	fs := p.cardOf(t, session).Find(`form[data-testid="claim-form"]`)
	require.Equal(t, 1, fs.Length(), "the card's claim form")
	f := readForm(p, fs)
	s.follow(t, s.submit(t, f, f.button(t, button), ""))
}

// chatLink is the link to the UI (under uiURL) in a chat message.
func chatLink(t *testing.T, msg, uiURL string) string {
	t.Helper()
	i := strings.Index(msg, uiURL)
	require.GreaterOrEqual(t, i, 0, "a link to the UI in %q", msg)
	link := msg[i:]
	if j := strings.IndexFunc(link, func(r rune) bool { return r == ' ' || r == '\n' || r == '>' || r == '|' || r == ')' }); j >= 0 {
		link = link[:j]
	}
	return link
}

// openChatLink opens link in a browser nobody is signed in on: the UI
// sends it to sign in, name signs in with secret on the page it is
// sent to, and the page the sign-in leads back to is returned.
func (s *stack) openChatLink(t *testing.T, link, name, secret string) *uiPage {
	t.Helper()
	anon := *s
	anon.cookie = ""
	first := anon.getPage(t, link)
	require.Equal(t, http.StatusSeeOther, first.status, "%s without a sign-in", link)
	signin := anon.getPage(t, anon.resolve(t, first.url, first.header.Get("Location")).String())
	require.Equal(t, http.StatusOK, signin.status)
	fs := signin.doc.Find(`form[data-testid="signin-form"]`)
	require.Equal(t, 1, fs.Length(), "the sign-in form")
	f := readForm(signin, fs)
	f.fill(t, form.NameOperator, name)
	f.fill(t, form.NameSecret, secret)
	in := anon.submit(t, f, f.button(t, ""), "")
	require.Equal(t, http.StatusSeeOther, in.status, "signing in: %s", in.body)
	var cookies []string
	for _, c := range (&http.Response{Header: in.header}).Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	anon.cookie = strings.Join(cookies, "; ")
	return anon.follow(t, in)
}
