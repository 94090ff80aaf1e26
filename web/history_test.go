package web

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// withHistory gives the server a history to read.
func withHistory(hs History) option { return func(s *setup) { s.deps.History = hs } }

// openJournal opens an answer journal in a temporary directory, closed
// when the test ends.
func openJournal(t *testing.T) *sqlite.Journal {
	t.Helper()
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "aepforms.db"), sqlite.Options{Host: "testhost"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// sent is an answer sent: command cmd, posted at, in session, by operator.
type sent struct {
	cmd, agent, session, by, question string
	answer                            aep.Answer
	at                                time.Time
	state                             inbox.SubmissionState
	reason, detail                    string
}

// record keeps s in j as the inbox would: recorded, then settled.
func record(t *testing.T, j *sqlite.Journal, s sent) {
	t.Helper()
	if s.agent == "" {
		s.agent = testAgent
	}
	if s.session == "" {
		s.session = "s1"
	}
	if s.question == "" {
		s.question = "Which release should ship?"
	}
	sub := inbox.Submission{
		Card:      inbox.CardID("c-" + s.cmd),
		Key:       inbox.RequestKey{Source: testSource, Session: s.session, RequestID: "r-" + s.cmd},
		Fields:    []aep.FieldSpec{{ID: "release", Type: aep.FieldString, Label: "Release"}},
		Token:     "tok-" + s.cmd,
		CommandID: s.cmd,
		Answer:    s.answer,
		By:        s.by,
		State:     inbox.SubmissionSending,
		At:        s.at,
		Agent:     s.agent,
		Question:  s.question,
	}
	require.NoError(t, j.Record(sub))
	if s.state != "" && s.state != inbox.SubmissionSending {
		require.NoError(t, j.Settle(s.cmd, s.state, s.reason, s.detail, s.at.Add(time.Second)))
	}
}

// values is a form answer with one value.
func values(release string) aep.Answer { return aep.Answer{Values: aep.Values{"release": release}} }

// seedHistory is a journal with answers of every outcome, named and not.
func seedHistory(t *testing.T) *sqlite.Journal {
	t.Helper()
	j := openJournal(t)
	reply := "Ship it after the freeze"
	record(t, j, sent{cmd: "h1", by: "alice", answer: values("v1.2"), at: testNow, state: inbox.SubmissionAccepted})
	record(t, j, sent{cmd: "h2", by: "bob", answer: aep.Answer{Option: "deny"}, at: testNow.Add(time.Minute),
		state: inbox.SubmissionRejected, reason: "invalid", detail: "not now"})
	record(t, j, sent{cmd: "h3", answer: aep.Answer{Text: &reply}, at: testNow.Add(2 * time.Minute), state: inbox.SubmissionFailed, reason: inbox.ReasonTimeout})
	record(t, j, sent{cmd: "h4", agent: "reviewer", answer: values("v2"), at: testNow.Add(3 * time.Minute)})
	return j
}

// historyRows are the command ids of a history page's rows, in order.
func historyRows(t *testing.T, r response) []string {
	t.Helper()
	var ids []string
	r.doc(t).Find(`[data-testid="history-row"]`).Each(func(_ int, s *goquery.Selection) {
		ids = append(ids, s.AttrOr("data-command", ""))
	})
	return ids
}

// cmds are the command ids "cmd-{from}" down to "cmd-{to}", newest first.
func cmds(from, to int) []string {
	var out []string
	for i := from; i >= to; i-- {
		out = append(out, fmt.Sprintf("cmd-%03d", i))
	}
	return out
}

func TestHistoryPagesAreStableUnderInserts(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	for i := range 120 {
		record(t, j, sent{cmd: fmt.Sprintf("cmd-%03d", i), answer: values("v1"), at: testNow.Add(time.Duration(i) * time.Minute), state: inbox.SubmissionAccepted})
	}
	h := newHarness(t, withHistory(j))

	first := h.getPage(nil, "history")
	require.Equal(t, http.StatusOK, first.StatusCode)
	assert.Equal(t, "no-store", first.Header.Get("Cache-Control"))
	assert.Equal(t, cmds(119, 70), historyRows(t, first), "the first page: the newest 50")
	next, ok := first.doc(t).Find(`[data-testid="next"]`).Attr("href")
	require.True(t, ok, "the first page links to older answers")
	assert.Zero(t, first.doc(t).Find(`[data-testid="newest"]`).Length(), "the first page does not link to itself")

	// Answers sent after the first page was read shift nothing.
	for i := 120; i < 125; i++ {
		record(t, j, sent{cmd: fmt.Sprintf("cmd-%03d", i), answer: values("v2"), at: testNow.Add(time.Duration(i) * time.Minute)})
	}
	second := h.getPage(nil, strings.TrimPrefix(next, "/"))
	require.Equal(t, http.StatusOK, second.StatusCode)
	assert.Equal(t, cmds(69, 20), historyRows(t, second), "the second page starts where the first ended")
	assert.Equal(t, 1, second.doc(t).Find(`[data-testid="newest"]`).Length())
	next, ok = second.doc(t).Find(`[data-testid="next"]`).Attr("href")
	require.True(t, ok)
	third := h.getPage(nil, strings.TrimPrefix(next, "/"))
	assert.Equal(t, cmds(19, 0), historyRows(t, third))
	assert.Zero(t, third.doc(t).Find(`[data-testid="next"]`).Length(), "the last page links no further")

	again := h.getPage(nil, "history")
	assert.Equal(t, cmds(124, 75), historyRows(t, again), "a new first page shows the new answers")
}

func TestHistoryRow(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	record(t, j, sent{cmd: "cmd-1", by: "alice", session: "s_payments", question: "Ship v1.2 now?", answer: values("v1.2"),
		at: testNow, state: inbox.SubmissionRejected, reason: "invalid", detail: "v1.2 is not tagged"})
	h := newHarness(t, withHistory(j))
	doc := h.getPage(nil, "history").doc(t)
	row := doc.Find(`[data-testid="history-row"]`)
	require.Equal(t, 1, row.Length())
	assert.Equal(t, "Ship v1.2 now?", strings.TrimSpace(row.Find(`[data-testid="history-question"]`).Text()))
	assert.Contains(t, row.Find(`[data-testid="history-asker"]`).Text(), testAgent)
	assert.Contains(t, row.Find(`[data-testid="history-asker"]`).Text(), "s_payments")
	assert.Contains(t, row.Find(`[data-testid="history-operator"]`).Text(), "alice")
	at := row.Find(`[data-testid="history-at"]`)
	assert.Equal(t, "1 Mar 2026 12:00:00 UTC", at.AttrOr("title", ""), "the exact time in a title")
	assert.Equal(t, "2026-03-01T12:00:00Z", at.AttrOr("datetime", ""))
	assert.Equal(t, "Release", strings.TrimSpace(row.Find(`[data-testid="values"] dt`).Text()), "values labelled through the field specs")
	assert.Equal(t, "v1.2", strings.TrimSpace(row.Find(`[data-testid="values"] dd`).Text()))
	outcome := row.Find(`[data-testid="history-outcome"]`).Text()
	assert.Contains(t, outcome, "Rejected by the agent: invalid")
	assert.Contains(t, outcome, "v1.2 is not tagged")
	assert.Equal(t, "rejected", row.AttrOr("data-state", ""))
}

func TestHistoryFilters(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	at := func(m int) time.Time { return testNow.Add(time.Duration(m) * time.Minute) }
	record(t, j, sent{cmd: "a", agent: "deployer", session: "s1", by: "alice", answer: values("Blue-Green"), at: at(0), state: inbox.SubmissionAccepted})
	record(t, j, sent{cmd: "b", agent: "deployer", session: "s2", by: "bob", answer: values("canary"), at: at(10), state: inbox.SubmissionRejected, reason: "invalid"})
	record(t, j, sent{cmd: "c", agent: "reviewer", session: "s3", by: "alice", question: "Merge the PAYMENTS fix?", answer: aep.Answer{Option: "yes"}, at: at(20), state: inbox.SubmissionFailed, reason: inbox.ReasonTimeout})
	record(t, j, sent{cmd: "d", agent: "reviewer", session: "s3", answer: values("later"), at: at(30)})
	h := newHarness(t, withHistory(j))

	for _, tc := range []struct {
		name  string
		query url.Values
		want  []string
	}{
		{"everything, newest first", nil, []string{"d", "c", "b", "a"}},
		{"agent", url.Values{"agent": {"deployer"}}, []string{"b", "a"}},
		{"session", url.Values{"session": {"s3"}}, []string{"d", "c"}},
		{"operator", url.Values{"operator": {"alice"}}, []string{"c", "a"}},
		{"outcome", url.Values{"outcome": {"rejected"}}, []string{"b"}},
		{"outcome sending", url.Values{"outcome": {"sending"}}, []string{"d"}},
		{"since", url.Values{"since": {"2026-03-01T12:10"}}, []string{"d", "c", "b"}},
		{"until", url.Values{"until": {"2026-03-01T12:10"}}, []string{"a"}},
		{"time range", url.Values{"since": {"2026-03-01T12:05:00Z"}, "until": {"2026-03-01T12:25"}}, []string{"c", "b"}},
		{"search in values, any case", url.Values{"q": {"blue-GREEN"}}, []string{"a"}},
		{"search in the question, any case", url.Values{"q": {"payments"}}, []string{"c"}},
		{"search and agent", url.Values{"q": {"a"}, "agent": {"deployer"}}, []string{"b", "a"}},
		{"nothing matches", url.Values{"agent": {"nobody"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := "history"
			if tc.query != nil {
				path += "?" + tc.query.Encode()
			}
			r := h.getPage(nil, path)
			require.Equal(t, http.StatusOK, r.StatusCode)
			assert.Equal(t, tc.want, historyRows(t, r))
			doc := r.doc(t)
			if tc.want == nil {
				assert.Equal(t, 1, doc.Find(`[data-testid="history-empty"]`).Length())
			}
			// The filter is shown back, and the exports carry it.
			for name := range tc.query {
				sel := fmt.Sprintf(`[data-testid="history-filter"] [name=%q]`, name)
				assert.Equal(t, 1, doc.Find(sel).Length(), "a control for %s", name)
			}
			csvURL, _ := doc.Find(`[data-testid="export-csv"]`).Attr("href")
			u, err := url.Parse(csvURL)
			require.NoError(t, err)
			for name, v := range tc.query {
				if name != "since" && name != "until" {
					assert.Equal(t, v[0], u.Query().Get(name), "the CSV link keeps %s", name)
				}
			}
			// The export holds what the page shows.
			exp := h.do(nil, h.request(http.MethodGet, h.url("history.jsonl")+"?"+tc.query.Encode(), nil))
			require.Equal(t, http.StatusOK, exp.StatusCode)
			var got []string
			for _, e := range jsonLines(t, exp.body) {
				got = append(got, e.CommandID)
			}
			assert.Equal(t, tc.want, got, "the JSON lines export")
		})
	}
}

func TestHistoryFilterProblems(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	record(t, j, sent{cmd: "a", answer: values("x"), at: testNow})
	h := newHarness(t, withHistory(j))
	for _, tc := range []struct{ name, query, field string }{
		{"since not a time", "since=yesterday", "h-since"},
		{"until not a time", "until=2026-13-45", "h-until"},
		{"empty range", "since=2026-03-01T13:00&until=2026-03-01T12:00", "h-since"},
		{"unknown outcome", "outcome=maybe", "h-outcome"},
		{"not a cursor", "after=not-a-cursor", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := h.getPage(nil, "history?"+tc.query)
			assert.Equal(t, http.StatusBadRequest, r.StatusCode)
			doc := r.doc(t)
			assert.Equal(t, 1, doc.Find(`[data-testid="error-summary"]`).Length(), "the problem is named")
			assert.Zero(t, doc.Find(`[data-testid="history-row"]`).Length())
			assert.Equal(t, 1, doc.Find(`[data-testid="history-filter"]`).Length(), "the filter is shown to fix")
			assert.Equal(t, "history-errors", doc.Find("body").AttrOr("data-focus", ""), "the summary takes focus")
			assert.Zero(t, doc.Find(`[data-testid="export-csv"]`).Length(), "no export of a filter that cannot be read")
			if tc.field != "" {
				assert.Equal(t, "#"+tc.field, doc.Find(`[data-testid="error-link"]`).AttrOr("href", ""), "the summary links to the control")
				assert.Equal(t, "true", doc.Find("#"+tc.field).AttrOr("aria-invalid", ""), "the control is marked")
			}
			exp := h.do(nil, h.request(http.MethodGet, h.url("history.csv")+"?"+tc.query, nil))
			assert.Equal(t, http.StatusBadRequest, exp.StatusCode, "the export refuses it too")
		})
	}
	t.Run("the rest of the filter is kept", func(t *testing.T) {
		t.Parallel()
		doc := h.getPage(nil, "history?since=yesterday&agent=deployer&until=2026-03-01T12:00:00Z").doc(t)
		assert.Equal(t, "deployer", doc.Find(`#h-agent`).AttrOr("value", ""))
		assert.Equal(t, "2026-03-01T12:00", doc.Find(`#h-until`).AttrOr("value", ""), "a time read is shown as its control holds it")
		assert.Empty(t, doc.Find(`#h-since`).AttrOr("value", ""), "a datetime-local control cannot hold what was not a time")
	})
}

func TestHistoryOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.getPage(nil, "history")
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, 1, r.doc(t).Find(`[data-testid="history-off"]`).Length())
	assert.Equal(t, http.StatusNotFound, h.do(nil, h.request(http.MethodGet, h.url("history.csv"), nil)).StatusCode)
}

func TestHistoryNeedsTheOperator(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	record(t, j, sent{cmd: "a", answer: values("x"), at: testNow})
	h := newHarness(t, withHistory(j), withToken("s3cret-token"))
	for _, path := range []string{"history", "history.csv", "history.jsonl"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			page := h.getPage(nil, path)
			assert.Equal(t, http.StatusSeeOther, page.StatusCode, "a browser is sent to sign in")
			assert.Contains(t, page.Header.Get("Location"), "/signin")
			api := h.do(nil, h.request(http.MethodGet, h.url(path), nil))
			assert.Equal(t, http.StatusUnauthorized, api.StatusCode)
			assert.NotContains(t, api.body, "Which release")
			ok := h.do(nil, h.request(http.MethodGet, h.url(path), nil, "Authorization", "Bearer s3cret-token"))
			assert.Equal(t, http.StatusOK, ok.StatusCode, "with the secret")
		})
	}
}

func TestHistoryCSVEscapesFormulas(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	text := "+1 ship it"
	record(t, j, sent{cmd: "a", by: "@bob", question: "=HYPERLINK(\"http://x\",\"y\")", agent: "-agent",
		answer: aep.Answer{Text: &text, Option: "=1+1"}, at: testNow, state: inbox.SubmissionRejected, reason: "refused", detail: "@mention"})
	h := newHarness(t, withHistory(j))
	r := h.do(nil, h.request(http.MethodGet, h.url("history.csv"), nil))
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
	assert.Contains(t, r.Header.Get("Content-Disposition"), "attachment")
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 2)
	row := map[string]string{}
	for i, name := range recs[0] {
		row[name] = recs[1][i]
	}
	assert.Equal(t, `'=HYPERLINK("http://x","y")`, row["question"])
	assert.Equal(t, "'@bob", row["operator"])
	assert.Equal(t, "'-agent", row["agent"])
	assert.Equal(t, "'+1 ship it", row["text"])
	assert.Equal(t, "'=1+1", row["option"])
	assert.Equal(t, "'@mention", row["detail"])
	assert.Equal(t, "2026-03-01T12:00:00Z", row["posted_at"], "cells that are no formula are kept")

	for in, want := range map[string]string{"=A1": "'=A1", "+A1": "'+A1", "-2": "'-2", "@x": "'@x", "\tx": "'\tx", "a=b": "a=b", "": ""} {
		assert.Equal(t, want, csvCell(in), "csvCell(%q)", in)
	}
}

func TestHistoryExportsEveryPage(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	for i := range 2*store.PageSize + 7 {
		record(t, j, sent{cmd: fmt.Sprintf("cmd-%03d", i), answer: values("v"), at: testNow.Add(time.Duration(i) * time.Second)})
	}
	h := newHarness(t, withHistory(j))
	r := h.do(nil, h.request(http.MethodGet, h.url("history.jsonl"), nil))
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	lines := jsonLines(t, r.body)
	require.Len(t, lines, 2*store.PageSize+7)
	assert.Equal(t, "cmd-106", lines[0].CommandID)
	assert.Equal(t, "cmd-000", lines[len(lines)-1].CommandID)
	assert.Equal(t, "v", lines[0].Answer.Values["release"])
	assert.Equal(t, testAgent, lines[0].Agent)

	c := h.do(nil, h.request(http.MethodGet, h.url("history.csv"), nil))
	recs, err := csv.NewReader(strings.NewReader(c.body)).ReadAll()
	require.NoError(t, err)
	assert.Len(t, recs, 2*store.PageSize+7+1, "a header and every answer")
}

func TestPageLinksToHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.BasePath = "/forms/" }))
	doc := h.getPage(nil, "").doc(t)
	assert.Equal(t, "/forms/history", doc.Find(`[data-testid="header"] [data-testid="history-link"]`).AttrOr("href", ""))
}

// jsonLines parses a JSON lines export.
func jsonLines(t *testing.T, body string) []exportEntry {
	t.Helper()
	var out []exportEntry
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e exportEntry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %q", sc.Text())
		out = append(out, e)
	}
	require.NoError(t, sc.Err())
	return out
}

// History says what its "answered by" names are: authenticated with named
// operators, labels under a shared secret.
func TestHistorySaysWhatItsNamesAre(t *testing.T) {
	t.Parallel()
	open := newHarness(t, withHistory(seedHistory(t)))
	doc := open.getPage(nil, "history").doc(t)
	who := doc.Find(`[data-testid="history-who"]`).Text()
	assert.Equal(t, "This UI has no operator secret, so answers carry no name.", who, "no sign-in: no talk of names typed at it")
	require.Positive(t, doc.Find(`[data-testid="history-row"]`).Length())
	assert.Less(t, doc.Find(`[data-testid="history-operator"]`).Length(), doc.Find(`[data-testid="history-row"]`).Length(),
		"rows without a name say nothing of who answered")
	assert.NotContains(t, doc.Find(`[data-testid="history-operator"]`).Text(), "no name", "no 'Answered by no name given'")

	shared := newHarness(t, withHistory(openJournal(t)), withToken(secret))
	c := shared.client()
	shared.signIn(c, "alice")
	who = shared.getPage(c, "history").doc(t).Find(`[data-testid="history-who"]`).Text()
	assert.Contains(t, who, "a label, not a proof of identity")

	named := newHarness(t, withHistory(openJournal(t)), func(s *setup) {
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: bcryptHash(t, annSecret)}}
	})
	c = named.client()
	require.Equal(t, http.StatusSeeOther, named.postForm(c, "signin", url.Values{"token": {annSecret}, "name": {"Ann"}}).StatusCode)
	who = named.getPage(c, "history").doc(t).Find(`[data-testid="history-who"]`).Text()
	assert.Contains(t, who, "signed in with their own name and secret")
}

// A row shows an option by its label, as the request offered it ("Allow
// once", not "allow"), and what the agent recorded for the answer, with
// when it was seen; an answer with nothing recorded shows no record.
func TestHistoryRowShowsWhatTheAgentRecorded(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	sub := inbox.Submission{
		Card: "c-perm", Key: inbox.RequestKey{Source: testSource, Session: "s1", RequestID: "r-perm"},
		Kind: aep.KindPermission, Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}},
		Capture: aep.CaptureFull, Token: "tok-perm", CommandID: "cmd-perm", Answer: aep.Answer{Option: "allow"},
		By: "alice", State: inbox.SubmissionSending, At: testNow, Agent: testAgent, Question: "Delete the branch?",
	}
	require.NoError(t, j.Record(sub))
	require.NoError(t, j.Settle("cmd-perm", inbox.SubmissionAccepted, "", "", testNow.Add(time.Second)))
	require.NoError(t, j.KeepRecorded("cmd-perm", inbox.Recorded{Answer: aep.Answer{Option: "allow"}, By: "alice", Via: "control",
		Capture: aep.CaptureFull}, testNow.Add(2*time.Second)))
	record(t, j, sent{cmd: "cmd-form", answer: values("v1.2"), at: testNow.Add(time.Minute), state: inbox.SubmissionAccepted})
	h := newHarness(t, withHistory(j))
	doc := h.getPage(nil, "history").doc(t)

	row := doc.Find(`[data-testid="history-row"][data-command="cmd-perm"]`)
	require.Equal(t, 1, row.Length())
	assert.Equal(t, "Option: Allow once", strings.Join(pairsOf(row.Find(`[data-testid="values"] .values__item`)), "|"),
		"the option sent, by its label")
	rec := row.Find(`[data-testid="history-recorded"]`)
	require.Equal(t, 1, rec.Length(), "what the agent recorded")
	assert.Contains(t, rec.Text(), "The agent recorded this answer as sent (by alice via control) · ")
	assert.Equal(t, "Accepted and recorded by the agent", strings.TrimSpace(row.Find(`[data-testid="history-outcome"]`).Text()))
	assert.Zero(t, rec.Find(`[data-testid="recorded-values"]`).Length(), "the answer once: recorded as sent")
	at := rec.Find(`[data-testid="history-recorded-at"]`)
	assert.Equal(t, "1 Mar 2026 12:00:02 UTC", at.AttrOr("title", ""), "when it was recorded, exactly")
	assert.Equal(t, "2026-03-01T12:00:02Z", at.AttrOr("datetime", ""))

	other := doc.Find(`[data-testid="history-row"][data-command="cmd-form"]`)
	require.Equal(t, 1, other.Length())
	assert.Zero(t, other.Find(`[data-testid="history-recorded"]`).Length(), "nothing recorded: nothing shown as recorded")

	lines := jsonLines(t, h.do(nil, h.request(http.MethodGet, h.url("history.jsonl"), nil)).body)
	require.Len(t, lines, 2)
	assert.Nil(t, lines[0].Recorded, "cmd-form: nothing recorded")
	require.NotNil(t, lines[1].Recorded, "the export holds what the agent recorded")
	assert.Equal(t, "allow", lines[1].Recorded.Answer.Option)
	assert.Equal(t, "control", lines[1].Recorded.Via)
	assert.Equal(t, "full", lines[1].Recorded.Capture)
	assert.True(t, lines[1].Recorded.At.Equal(testNow.Add(2*time.Second)))
	assert.Equal(t, "Option: Allow once", lines[1].AnswerWords, "the export reads without the form at hand")
	assert.Equal(t, "Option: Allow once", lines[1].Recorded.AnswerWords)

	recs, err := csv.NewReader(strings.NewReader(h.do(nil, h.request(http.MethodGet, h.url("history.csv"), nil)).body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	assert.Equal(t, "allow", recs[2][col["recorded_option"]])
	assert.Equal(t, "Option: Allow once", recs[2][col["answer_words"]], "the id and its label")
	assert.Equal(t, "Delete the branch?", recs[2][col["question_text"]])
	assert.Equal(t, "2026-03-01T12:00:02Z", recs[2][col["recorded_at"]])
	assert.Empty(t, recs[1][col["recorded_option"]])
}

// pairsOf are a values list's items as "label: value".
func pairsOf(s *goquery.Selection) []string {
	var out []string
	s.Each(func(_ int, it *goquery.Selection) {
		out = append(out, strings.TrimSpace(it.Find("dt").Text())+": "+strings.TrimSpace(it.Find("dd").Text()))
	})
	return out
}

// History says who assigned an answered question to whom and when, in
// order with its team's reminders and escalations (the routing's claims
// in the journal), and its filters by team and by escalated still hold;
// a question assigned that no route matched says its assignment alone.
func TestHistorySaysWhoAssignedIt(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	ctx := t.Context()
	record(t, j, sent{cmd: "cmd-1", by: "bo", answer: values("v1"), at: testNow.Add(5 * time.Minute), state: inbox.SubmissionAccepted})
	record(t, j, sent{cmd: "cmd-2", by: "bo", answer: values("v2"), at: testNow.Add(6 * time.Minute), state: inbox.SubmissionAccepted})
	steps := []store.RoutingStep{
		{Card: "c-cmd-1", Kind: store.RoutedTo, Team: "oncall", At: testNow},
		{Card: "c-cmd-1", Kind: store.Assigned, Team: store.AssignedTeam(inbox.Assignment{To: "db", Team: true, By: "ann", Rev: 1}), At: testNow.Add(time.Minute)},
		{Card: "c-cmd-1", Kind: store.Assigned, Team: store.AssignedTeam(inbox.Assignment{To: "bo:o", By: "ann", Rev: 2}), At: testNow.Add(2 * time.Minute)},
		{Card: "c-cmd-1", Kind: inbox.StepReminded, Team: "bo:o", At: testNow.Add(4 * time.Minute)},
		{Card: "c-cmd-2", Kind: store.Assigned, Team: store.AssignedTeam(inbox.Assignment{To: "bo", By: "ann", Rev: 3}), At: testNow.Add(-36 * time.Hour)},
	}
	for _, st := range steps {
		kept, err := j.KeepRoutingStep(ctx, st)
		require.NoError(t, err)
		require.True(t, kept)
	}
	h := newHarness(t, withHistory(j))
	routing := func(q string) []string {
		var out []string
		h.getPage(nil, "history"+q).doc(t).Find(`[data-testid="history-row"]`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.Join(strings.Fields(s.Find(`[data-testid="history-routing"]`).Text()), " "))
		})
		return out
	}
	// Each time reads as the card's ("12:01 UTC"), with the date only
	// when it is not the answer's own day; the exact instant is the
	// time's datetime and title.
	assert.Equal(t, []string{
		"Assigned to bo by ann 28 Feb 00:00 UTC",
		"Routed to oncall; assigned to team db by ann 12:01 UTC, assigned to bo:o by ann 12:02 UTC, reminded bo:o 12:04 UTC",
	}, routing(""))
	reminded := h.getPage(nil, "history").doc(t).Find(`[data-command="cmd-1"] [data-testid="history-routing-at"]`).Last()
	assert.Equal(t, "2026-03-01T12:04:00Z", reminded.AttrOr("datetime", ""))
	assert.Equal(t, "1 Mar 2026 12:04:00 UTC", reminded.AttrOr("title", ""))
	assert.Len(t, routing("?team=oncall"), 1)
	assert.Empty(t, routing("?escalated=1"))
}

// History's exports carry each answered question's routing as its page
// says it: the JSON lines its team and every step (an assignment with
// who it went to and who made it, a reminder, an escalation) with its
// time, oldest first; the CSV its team and History's words; a question
// no route matched and nobody assigned has none.
func TestHistoryExportSaysWhereItWasRouted(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	ctx := t.Context()
	record(t, j, sent{cmd: "cmd-1", by: "bo", answer: values("v1"), at: testNow.Add(5 * time.Minute), state: inbox.SubmissionAccepted})
	record(t, j, sent{cmd: "cmd-2", by: "bo", answer: values("v2"), at: testNow.Add(6 * time.Minute), state: inbox.SubmissionAccepted})
	for _, st := range []store.RoutingStep{
		{Card: "c-cmd-1", Kind: store.RoutedTo, Team: "oncall", At: testNow},
		{Card: "c-cmd-1", Kind: store.Assigned, Team: store.AssignedTeam(inbox.Assignment{To: "db", Team: true, By: "ann", Rev: 1}), At: testNow.Add(time.Minute)},
		{Card: "c-cmd-1", Kind: store.Assigned, Team: store.AssignedTeam(inbox.Assignment{To: "bo", By: "ann", Rev: 2}), At: testNow.Add(2 * time.Minute)},
		{Card: "c-cmd-1", Kind: inbox.StepReminded, Team: "oncall", At: testNow.Add(3 * time.Minute)},
		{Card: "c-cmd-1", Kind: inbox.StepEscalated, Team: "leads", At: testNow.Add(4 * time.Minute)},
	} {
		kept, err := j.KeepRoutingStep(ctx, st)
		require.NoError(t, err)
		require.True(t, kept)
	}
	h := newHarness(t, withHistory(j))
	words := h.getPage(nil, "history").doc(t).Find(`[data-command="cmd-1"] [data-testid="history-routing"]`).Text()
	require.NotEmpty(t, words, "History's page says where cmd-1 went")

	exp := h.do(nil, h.request(http.MethodGet, h.url("history.jsonl"), nil))
	require.Equal(t, http.StatusOK, exp.StatusCode)
	type step struct {
		Kind, Team, Operator, By string
		At                       time.Time
	}
	type line struct {
		CommandID string `json:"command_id"`
		Routing   *struct {
			Team      string
			Steps     []step
			Escalated bool
		}
	}
	got := map[string]line{}
	for _, l := range strings.Split(strings.TrimSpace(exp.body), "\n") {
		var x line
		require.NoError(t, json.Unmarshal([]byte(l), &x), l)
		got[x.CommandID] = x
	}
	require.NotNil(t, got["cmd-1"].Routing, "cmd-1 was routed")
	assert.Equal(t, "oncall", got["cmd-1"].Routing.Team)
	assert.True(t, got["cmd-1"].Routing.Escalated)
	assert.Equal(t, []step{
		{Kind: "assigned", Team: "db", By: "ann", At: testNow.Add(time.Minute).UTC()},
		{Kind: "assigned", Operator: "bo", By: "ann", At: testNow.Add(2 * time.Minute).UTC()},
		{Kind: "reminded", Team: "oncall", At: testNow.Add(3 * time.Minute).UTC()},
		{Kind: "escalated", Team: "leads", At: testNow.Add(4 * time.Minute).UTC()},
	}, got["cmd-1"].Routing.Steps)
	assert.Nil(t, got["cmd-2"].Routing, "cmd-2 went nowhere in particular")

	c := h.do(nil, h.request(http.MethodGet, h.url("history.csv"), nil))
	require.Equal(t, http.StatusOK, c.StatusCode)
	table, err := csv.NewReader(strings.NewReader(c.body)).ReadAll()
	require.NoError(t, err)
	cells := map[string]map[string]string{}
	for _, row := range table[1:] {
		m := map[string]string{}
		for i, name := range table[0] {
			m[name] = row[i]
		}
		cells[m["command_id"]] = m
	}
	assert.Equal(t, "oncall", cells["cmd-1"]["routed_to"])
	assert.Equal(t, "Routed to oncall; assigned to team db by ann 1 Mar 2026 12:01:00 UTC, assigned to bo by ann 1 Mar 2026 12:02:00 UTC, "+
		"reminded oncall 1 Mar 2026 12:03:00 UTC, escalated to leads 1 Mar 2026 12:04:00 UTC", cells["cmd-1"]["routing"], "the CSV words it as History's page does, each time exact")
	assert.Equal(t, "Routed to oncall; assigned to team db by ann 12:01 UTC, assigned to bo by ann 12:02 UTC, reminded oncall 12:03 UTC, escalated to leads 12:04 UTC",
		strings.Join(strings.Fields(words), " "), "the page says each time as the card does")
	assert.Empty(t, cells["cmd-2"]["routed_to"])
	assert.Empty(t, cells["cmd-2"]["routing"])
}
