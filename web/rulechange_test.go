package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// A card names the rule made from its answer and the rule that answered
// it; once the rule is deleted, the next render of those cards says so,
// on the page and on the push stream, though the cards did not change
// and the minute is the same (the fragment caches hold them).
func TestCardsShowARuleDeletedSinceTheyWereDrawn(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	made := rh.ask("s1", "r1", permissionReq())
	require.Equal(t, http.StatusSeeOther, rh.ruleFromCard(c, made, url.Values{form.NameRuleScope: {form.ScopeContains}, form.NameRuleContains: {"make release"}}).StatusCode)
	m, _ := rh.in.Card(made)
	require.NotNil(t, m.Submission)
	rh.settle(*m.Submission)
	answered := rh.ask("s1", "r2", permissionReq())
	rh.observe(answered)
	card, _ := rh.in.Card(answered)
	require.NotNil(t, card.Submission, "the rule answered")
	rh.settle(*card.Submission)
	answeredAt := rh.in.Seq() // the change that says so

	// A browser on the push stream since before the rule answered: the
	// answer's change is framed (and its fragment rendered) for it.
	before := rh.getPage(c, "").doc(t)
	madeLine := before.Find("#" + domID(made) + ` [data-testid="rule-made"]`)
	require.Equal(t, 1, madeLine.Length(), "the card the rule was made from names it")
	require.NotContains(t, madeLine.Text(), "deleted since")
	by := before.Find("#" + domID(answered) + ` [data-testid="answered-by-rule"]`)
	require.Equal(t, 1, by.Length(), "the card the rule answered names it")
	require.NotContains(t, by.Text(), "deleted since")
	cookie := cookieHeader(c, rh.base())
	first := rh.openPush("?since="+pushID(answeredAt-1), "Cookie", cookie)
	require.NotContains(t, pushedCard(t, first, answered).Text(), "deleted since")

	rules, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, rules, 1)
	require.Equal(t, http.StatusSeeOther, rh.postForm(c, "rules/"+rules[0].ID+"/delete", url.Values{}).StatusCode)

	after := rh.getPage(c, "").doc(t)
	assert.Contains(t, after.Find("#"+domID(made)+` [data-testid="rule-made"]`).Text(), "deleted since", "the card the rule was made from")
	assert.Contains(t, after.Find("#"+domID(answered)+` [data-testid="answered-by-rule"]`).Text(), "deleted since", "the card the rule answered")
	// A browser catching up on the same change draws it anew.
	later := rh.openPush("?since="+pushID(answeredAt-1), "Cookie", cookie)
	assert.Contains(t, pushedCard(t, later, answered).Find(`[data-testid="answered-by-rule"]`).Text(), "deleted since")
}

// pushedCard reads ps until card id's fragment and returns it.
func pushedCard(t *testing.T, ps *pushStream, id inbox.CardID) *goquery.Selection {
	t.Helper()
	for {
		m := ps.next()
		if m.Event == "card" {
			if c := cardMsg(t, m); attr(c, "id") == domID(id) {
				return c
			}
		}
	}
}

// Who changed a rule is kept and said: bob pauses alice's rule and
// resumes it. The Rules page lists both changes, newest first, with who
// and when; an answer the rule sent after bob resumed it says so on its
// card and in History ("set by alice, resumed by bob"), and one it sent
// before the pause does not.
func TestWhoChangedARuleIsShown(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	alice, bob := rh.client(), rh.client()
	rh.signIn(alice, "alice")
	rh.signIn(bob, "bob")
	made := rh.ask("s1", "r1", permissionReq())
	require.Equal(t, http.StatusSeeOther, rh.ruleFromCard(alice, made, url.Values{form.NameRuleScope: {form.ScopeContains}, form.NameRuleContains: {"make release"}}).StatusCode)
	m, _ := rh.in.Card(made)
	require.NotNil(t, m.Submission)
	rh.settle(*m.Submission)
	before := rh.answeredByTheRule("s1", "r2")

	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	rule := "rules/" + list[0].ID
	rh.clk.Add(time.Minute)
	require.Equal(t, http.StatusSeeOther, rh.postForm(bob, rule+"/pause", nil).StatusCode)
	row := rh.getPage(alice, "rules").doc(t).Find(`[data-testid="rule"]`)
	assert.Contains(t, row.Find(`[data-testid="rule-reason"]`).Text(), "Paused by bob")
	rh.clk.Add(time.Minute)
	require.Equal(t, http.StatusSeeOther, rh.postForm(bob, rule+"/resume", nil).StatusCode)
	rh.clk.Add(time.Minute)
	after := rh.answeredByTheRule("s1", "r3")

	row = rh.getPage(alice, "rules").doc(t).Find(`[data-testid="rule"]`)
	changes := row.Find(`[data-testid="rule-change"]`)
	require.Equal(t, 2, changes.Length(), "the pause and the resume")
	assert.Regexp(t, `^Resumed by bob, \S`, strings.TrimSpace(changes.Eq(0).Text()), "newest first, who, then when")
	assert.Regexp(t, `^Paused by bob, \S`, strings.TrimSpace(changes.Eq(1).Text()))
	assert.NotEmpty(t, changes.Eq(0).Find("time").AttrOr("datetime", ""), "the exact time")
	assert.Contains(t, row.Find(`[data-testid="rule-maker"]`).Text(), "alice", "still set by alice")

	page := rh.getPage(alice, "").doc(t)
	by := page.Find("#" + domID(after) + ` [data-testid="answered-by-rule"]`)
	assert.Regexp(t, `set by alice, resumed by bob`, collapse(by.Text()), "the card of an answer sent after bob resumed the rule")
	assert.NotContains(t, page.Find("#"+domID(before)+` [data-testid="answered-by-rule"]`).Text(), "resumed", "an answer sent before the pause")

	hist := rh.getPage(alice, "history").doc(t).Find(`[data-testid="history-operator"] [data-testid="answered-by-rule"]`)
	require.Equal(t, 2, hist.Length(), "History names the rule for its two answers")
	assert.Regexp(t, `set by alice, resumed by bob`, collapse(hist.Eq(0).Text()), "the newest answer, after the resume")
	assert.NotContains(t, hist.Eq(1).Text(), "resumed", "the answer before the pause")
}

// answeredByTheRule asks a permission the harness's one rule answers,
// settles its answer, and returns its card.
func (rh *rulesHarness) answeredByTheRule(session, req string) inbox.CardID {
	rh.t.Helper()
	id := rh.ask(session, req, permissionReq())
	rh.observe(id)
	c, _ := rh.in.Card(id)
	require.NotNil(rh.t, c.Submission, "the rule answered %s", req)
	rh.settle(*c.Submission)
	return id
}

// collapse is s with its runs of white space made one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
