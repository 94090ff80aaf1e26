package e2e

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/render/form"
)

// recordedSecret is the operator secret of the restart test's UI.
const recordedSecret = "e2e-operator-secret-0123456789"

// signIn signs in to the UI as name with the operator secret, and keeps
// the session cookie for every later request of s.
func (s *stack) signIn(t *testing.T, name string) {
	t.Helper()
	body := url.Values{form.NameOperator: {name}, form.NameSecret: {recordedSecret}}.Encode()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.resolve(t, nil, "signin").String(), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	req.Header.Set("Accept", "text/html")
	resp, err := uiClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "sign-in")
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	require.NotEmpty(t, cookies, "the sign-in sets the session cookie")
	s.cookie = strings.Join(cookies, "; ")
}

// exactTimeRE is the exact time a title gives ("3 Dec 2026 09:01:02 UTC").
var exactTimeRE = regexp.MustCompile(`^\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} UTC$`)

// End to end: an operator answers the demo forms, the UI
// stops hard (its journal kept; nothing is settled on the way out) and the
// relay loses its history (as the embedded relay does across a kill -9);
// started again on the same --db, the UI shows every earlier answer as the
// operator's own, with who, when and the values, and each is in History
// with what the agent recorded. Nothing is sent again.
func TestRestartShowsEveryEarlierAnswerAsTheOperatorsOwn(t *testing.T) {
	t.Parallel()
	r := newResumeStack(t)
	r.extra = []string{"--operator-token", recordedSecret}
	ag := r.base.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission, agent.ScenarioDeploy, agent.ScenarioInput}})
	permSess, _ := askedRequest(t, ag, agent.ScenarioPermission)
	formSess, _ := askedRequest(t, ag, agent.ScenarioDeploy)
	inputSess, _ := askedRequest(t, ag, agent.ScenarioInput)
	before := time.Now()

	first, stopFirst := r.serve(t, "ui (first)")
	first.signIn(t, "alice")
	answers := []struct {
		session string
		fill    func(card *goquery.Selection, f *htmlForm) *formControl
		shown   []string // what the card and History show of the answer
	}{
		{permSess.ID, func(_ *goquery.Selection, f *htmlForm) *formControl { return f.button(t, "Allow once") }, []string{"Allow once"}},
		{formSess.ID, func(card *goquery.Selection, f *htmlForm) *formControl {
			f.fill(t, fieldNamed(t, card, "Service name"), "ledger")
			db := fieldNamed(t, card, "Database")
			f.tick(t, db, choiceValue(t, card, db, "SQLite"), true)
			regions := fieldNamed(t, card, "Regions")
			f.tick(t, regions, choiceValue(t, card, regions, "eu-west"), true)
			return f.button(t, "")
		}, []string{"ledger", "SQLite", "eu-west"}},
		{inputSess.ID, func(_ *goquery.Selection, f *htmlForm) *formControl {
			f.fill(t, "text", "hotfix/2.4.1")
			return f.button(t, "Send answer")
		}, []string{"hotfix/2.4.1"}},
	}
	for _, a := range answers {
		_, card, f := first.openForm(t, a.session)
		first.follow(t, first.submit(t, f, a.fill(card, f), ""))
		first.awaitCard(t, a.session, "the answer recorded", func(c *goquery.Selection) bool {
			return c.AttrOr("data-state", "") == "answered"
		})
	}
	stopFirst()
	r.base.restartRelay(t, nil) // the relay's history is gone

	second, _ := r.serve(t, "ui (restarted)")
	second.signIn(t, "alice")
	page := second.getPage(t, "")
	require.Equal(t, http.StatusOK, page.status)
	for _, a := range answers {
		card := page.cardOf(t, a.session)
		assert.Equal(t, "true", card.AttrOr("data-settled", ""), "%s: settled", a.session)
		assert.Equal(t, "answered", card.AttrOr("data-state", ""), "%s: answered", a.session)
		assert.NotContains(t, card.Find(`[data-testid="state-text"]`).Text(), "elsewhere", "%s: this UI's own answer", a.session)
		assert.Zero(t, card.Find(`form[data-testid="answer-form"]`).Length(), "%s: read-only", a.session)
		by := card.Find(`[data-testid="answered-by"]`)
		require.Equal(t, 1, by.Length(), "%s: who answered, after the restart", a.session)
		assert.Equal(t, "you (alice)", strings.TrimSpace(by.Find(`[data-testid="answered-by-name"]`).Text()), "alice, signed in, is told it was her")
		at := by.Find(`time[data-testid="answered-at"]`)
		assert.Regexp(t, exactTimeRE, at.AttrOr("title", ""), "%s: the exact time in a title", a.session)
		posted, err := time.Parse(time.RFC3339Nano, at.AttrOr("datetime", ""))
		require.NoError(t, err, "%s: datetime", a.session)
		assert.False(t, posted.Before(before.Truncate(time.Millisecond)), "%s: posted during the test, at %v", a.session, posted)
		values := card.Find(`[data-testid="values"]`).Text()
		for _, want := range a.shown {
			assert.Contains(t, values, want, "%s: the values", a.session)
		}

		link := by.Find(`a[data-testid="history-entry"]`)
		href, ok := link.Attr("href")
		require.True(t, ok, "%s: a link to its history entry", a.session)
		u := second.resolve(t, page.url, href)
		anchor := u.Fragment
		u.Fragment = ""
		hist := second.getPage(t, u.String())
		require.Equal(t, http.StatusOK, hist.status, "GET %s", u)
		row := hist.doc.Find(`[data-testid="history-row"]#` + anchor)
		require.Equal(t, 1, row.Length(), "%s: the linked history entry #%s", a.session, anchor)
		assert.Contains(t, row.Find(`[data-testid="history-operator"]`).Text(), "alice")
		for _, want := range a.shown {
			assert.Contains(t, row.Find(`[data-testid="values"]`).Text(), want, "%s: what was sent, in History", a.session)
		}
		// The agent recorded what was sent: History says it was recorded
		// and shows the answer once (recorded values only where they differ).
		assert.Equal(t, 1, row.Find(`[data-testid="history-recorded"]`).Length(), "%s: recorded by the agent, in History", a.session)
		assert.Zero(t, row.Find(`[data-testid="recorded-values"]`).Length(), "%s: the answer once, not twice", a.session)

		got := commandsTo(ag, a.session)
		require.Len(t, got, 1, "%s: one command", a.session)
		assert.Equal(t, 1, got[0].Count, "%s: nothing sent again after the restart", a.session)
	}
	rows := second.getPage(t, "history").doc.Find(`[data-testid="history-row"]`)
	assert.Equal(t, len(answers), rows.Length(), "every answer is in History")
}
