package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"

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
