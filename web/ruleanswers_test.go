package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/storetest"
)

// ruleAnswered journals answer cmd as sent by rule id (by "" an
// operator's, by name), posted at, the agent having recorded it as
// sent by this UI's rule ("aepforms/rule:{id}").
func (rh *rulesHarness) ruleAnswered(cmd, by string, at time.Time) {
	rh.t.Helper()
	s := storetest.Submission(cmd, at)
	s.By, s.Key.RequestID, s.State = by, "req-"+cmd, inbox.SubmissionAccepted
	s.Kind, s.Options, s.Fields = aep.KindPermission, permissionReq().Options, nil
	s.Answer = aep.Answer{Option: "allow"}
	require.NoError(rh.t, rh.j.Record(s))
	require.NoError(rh.t, rh.j.KeepRecorded(cmd, inbox.Recorded{Answer: s.Answer, By: "aepforms/" + by, Via: aep.ViaControl, Capture: aep.CaptureFull}, at))
}

// keepRule keeps rule id, named name, made by maker.
func (rh *rulesHarness) keepRule(id, name, maker string) {
	rh.t.Helper()
	require.NoError(rh.t, rh.j.CreateRule(context.Background(), store.Rule{ID: id, Name: name, Maker: maker, Created: testNow, Expires: testNow.Add(time.Hour),
		Match: store.RuleMatch{Kind: aep.KindPermission, Options: permissionReq().Options}, Answer: aep.Answer{Option: "allow"}, State: store.RuleActive}, 0))
}

// The header counts the requests rules answered since the operator last
// looked, linking to them in History; opening that list is looking (the
// count goes), a rule's next answer counts again, and each operator
// counts their own (a narrower list resets nothing). The panel counts
// them too, and reaches the Rules page.
func TestHeaderCountsWhatRulesAnsweredSinceYouLooked(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	rh.keepRule("R1", "Allow once to permission requests", "alice")
	rh.keepRule("R2", "Deny to permission requests", "bob")
	alice, bob := rh.client(), rh.client()
	rh.signIn(alice, "alice")
	rh.signIn(bob, "bob")
	rh.ruleAnswered("c1", rules.By("R1"), testNow.Add(-3*time.Minute))
	rh.ruleAnswered("c2", "alice", testNow.Add(-2*time.Minute))
	rh.ruleAnswered("c3", rules.By("R2"), testNow.Add(-time.Minute))
	rh.ruleAnswered("c4", rules.By("R1"), testNow)

	count := func(c *http.Client, path string) *goquery.Selection {
		t.Helper()
		return rh.getPage(c, path).doc(t).Find(`[data-testid="header"] [data-testid="rule-answers"]`)
	}
	a := count(alice, "")
	require.Equal(t, 1, a.Length(), "the header counts them")
	assert.Equal(t, "3 answered by rules", strings.TrimSpace(a.Text()))
	assert.Equal(t, "/history?rule=any", a.AttrOr("href", ""))
	p := count(alice, "panel")
	require.Equal(t, 1, p.Length(), "the panel counts them too")
	assert.Equal(t, "_blank", p.AttrOr("target", ""), "from the panel, beside the console")

	d := rh.getPage(bob, "history?rule=R1").doc(t)
	assert.Len(t, d.Find(`[data-testid="history-rows"] > li`).Nodes, 2, "rule R1's answers")
	assert.Equal(t, "3 answered by rules", strings.TrimSpace(count(bob, "").Text()), "a narrower list is not every answer: bob has not looked")

	d = rh.getPage(alice, "history?rule=any").doc(t)
	assert.Len(t, d.Find(`[data-testid="history-rows"] > li`).Nodes, 3, "every answer a rule sent, the operator's left out")
	assert.Zero(t, count(alice, "").Length(), "alice looked: nothing new")
	assert.Equal(t, "3 answered by rules", strings.TrimSpace(count(bob, "").Text()), "bob counts his own")

	rh.ruleAnswered("c5", rules.By("R2"), testNow.Add(time.Second))
	assert.Equal(t, "1 answered by a rule", strings.TrimSpace(count(alice, "").Text()), "the next one counts again")
}

// History filters to the answers rules sent, any rule's or one rule's,
// its filter naming each rule in words, with the one in force chosen.
func TestHistoryFiltersByRule(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	rh.keepRule("R1", "Allow once to permission requests", "alice")
	rh.keepRule("R2", "Deny to permission requests", "")
	c := rh.client()
	rh.signIn(c, "alice")
	rh.ruleAnswered("c1", rules.By("R1"), testNow.Add(-2*time.Minute))
	rh.ruleAnswered("c2", "alice", testNow.Add(-time.Minute))
	rh.ruleAnswered("c3", rules.By("R2"), testNow)

	d := rh.getPage(c, "history?rule=R2").doc(t)
	rows := d.Find(`[data-testid="history-rows"] > li`)
	require.Equal(t, 1, rows.Length(), "rule R2's answer only")
	assert.Contains(t, rows.Find(`[data-testid="answered-by-rule"]`).Text(), "Deny to permission requests", "named by its words")

	var choices []string
	d.Find(`select[name="rule"] option`).Each(func(_ int, s *goquery.Selection) {
		mark := ""
		if _, ok := s.Attr("selected"); ok {
			mark = "* "
		}
		choices = append(choices, mark+s.AttrOr("value", "")+"="+s.Text())
	})
	assert.Equal(t, []string{"=Anyone", "any=Any rule", "R1=Rule ‘Allow once to permission requests’, set by alice",
		"* R2=Rule ‘Deny to permission requests’, set by an operator who gave no name"}, choices)
	assert.Equal(t, "/history.csv?rule=R2", d.Find(`[data-testid="export-csv"]`).AttrOr("href", ""), "the export keeps the filter")
	assert.Len(t, rh.getPage(c, "history?rule=any").doc(t).Find(`[data-testid="history-rows"] > li`).Nodes, 2)
	assert.Len(t, rh.getPage(c, "history").doc(t).Find(`[data-testid="history-rows"] > li`).Nodes, 3)
}

// What the agent recorded names the rule in words, not the UI's
// "aepforms/rule:{id}" it echoed.
func TestHistoryRecordedLineNamesTheRule(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	rh.keepRule("R1", "Allow once to permission requests", "alice")
	c := rh.client()
	rh.signIn(c, "alice")
	rh.ruleAnswered("c1", rules.By("R1"), testNow)
	rh.ruleAnswered("c2", "alice", testNow.Add(time.Second))

	d := rh.getPage(c, "history").doc(t)
	lines := d.Find(`[data-testid="history-recorded"]`)
	require.Equal(t, 2, lines.Length())
	op, rule := strings.Join(strings.Fields(lines.Eq(0).Text()), " "), strings.Join(strings.Fields(lines.Eq(1).Text()), " ")
	assert.NotContains(t, rule, "rule:R1", "no raw rule id")
	assert.Contains(t, rule, "by rule ‘Allow once to permission requests’ via control")
	assert.Contains(t, op, "by aepforms/alice via control", "an operator's answer as the agent recorded it")
}

// The exports name the rule that sent an answer by its words and its
// maker beside its id; an operator's answer names none.
func TestExportsNameTheRule(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	rh.keepRule("R1", "Allow once to permission requests", "alice")
	c := rh.client()
	rh.signIn(c, "alice")
	rh.ruleAnswered("c1", rules.By("R1"), testNow)
	rh.ruleAnswered("c2", "alice", testNow.Add(time.Second))

	r := rh.getPage(c, "history.csv")
	require.Equal(t, http.StatusOK, r.StatusCode)
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	for _, name := range []string{"rule_id", "rule_name", "rule_maker"} {
		require.Contains(t, col, name)
	}
	byOp := map[string][]string{}
	for _, rec := range recs[1:] {
		byOp[rec[col["command_id"]]] = rec
	}
	assert.Equal(t, []string{"R1", "Allow once to permission requests", "alice"},
		[]string{byOp["c1"][col["rule_id"]], byOp["c1"][col["rule_name"]], byOp["c1"][col["rule_maker"]]})
	assert.Equal(t, []string{"", "", ""}, []string{byOp["c2"][col["rule_id"]], byOp["c2"][col["rule_name"]], byOp["c2"][col["rule_maker"]]})

	j := rh.getPage(c, "history.jsonl")
	require.Equal(t, http.StatusOK, j.StatusCode)
	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(j.body), "\n") {
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		got[e["command_id"].(string)] = e
	}
	assert.Equal(t, map[string]any{"id": "R1", "name": "Allow once to permission requests", "maker": "alice"}, got["c1"]["rule"])
	assert.NotContains(t, got["c2"], "rule")
}

// The panel reaches the Rules page (beside the console: it is framed);
// the inbox's header links to it whatever the width (the phone's is
// checked in Chromium).
func TestPanelAndHeaderReachTheRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	l := h.getPage(nil, "panel").doc(t).Find(`[data-testid="header"] [data-testid="rules-link"]`)
	require.Equal(t, 1, l.Length(), "the panel links to Rules")
	assert.Equal(t, "/rules", l.AttrOr("href", ""))
	assert.Equal(t, "_blank", l.AttrOr("target", ""))
	assert.Contains(t, l.AttrOr("rel", ""), "noopener")
	page := h.getPage(nil, "").doc(t).Find(`header nav [data-testid="rules-link"]`)
	require.Equal(t, 1, page.Length())
	assert.False(t, page.HasClass("nav__wide"), "not left off on a phone")
}

// An open page's header count of what rules answered follows by push:
// a rule answering a request while the page is open brings the count
// with the card (the page read it when loaded, and showed none).
func TestHeaderCountOfRuleAnswersIsPushed(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t)
	rh.keepRule("R1", "Allow once to permission requests", "alice")
	page := rh.getPage(nil, "").doc(t)
	slot := page.Find(`[data-testid="header"] #rule-answers`)
	require.Equal(t, 1, slot.Length(), "the header holds the count's place")
	assert.Zero(t, slot.Find(`[data-testid="rule-answers"]`).Length(), "none answered yet")

	ps := rh.openPush("")
	rh.observe(rh.ask("s1", "r1", permissionReq()))
	require.Len(t, rh.sub.all(), 1, "the rule answered")
	for {
		m := ps.next()
		if m.Event != "status" {
			continue
		}
		d, err := goquery.NewDocumentFromReader(strings.NewReader(m.Data))
		require.NoError(t, err)
		if a := d.Find(`#rule-answers [data-testid="rule-answers"]`); a.Length() == 1 {
			assert.Equal(t, "1 answered by a rule", strings.TrimSpace(a.Text()))
			assert.Equal(t, "1", a.AttrOr("data-n", ""))
			return
		}
	}
}

// A page catching up on many questions rules answered reads the
// header's count once, not once per answer: each read is the journal's,
// for every open page at once.
func TestHeaderCountIsReadOncePerPush(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t)
	rh.keepRule("R1", "Allow once to permission requests", "alice")
	push, err := url.Parse(attr(rh.getPage(nil, "").doc(t).Find("body"), "data-push"))
	require.NoError(t, err)
	const n = 6
	for i := range n {
		rh.observe(rh.ask("s1", fmt.Sprintf("r%d", i), permissionReq()))
	}
	require.Len(t, rh.sub.all(), n, "the rule answered each")

	ps := rh.openPush("?" + push.RawQuery)
	last := rh.ask("s2", "after", nameForm())
	statuses := 0
	for {
		m := ps.next()
		if m.Event == "status" {
			statuses++
		}
		if m.Event == "card" && attr(cardMsg(t, m), "id") == domID(last) {
			break
		}
	}
	assert.Equal(t, 1, statuses, "one status for the catch-up of %d rule answers", n)
}
