package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
)

// keepHistory journals an operator's answer to a permission request of
// prompt, in session, at, as History then holds it.
func (rh *rulesHarness) keepHistory(session, req, prompt string, at time.Time) {
	rh.t.Helper()
	p := permissionReq()
	require.NoError(rh.t, rh.j.Record(inbox.Submission{
		Card: cardID(session, req), Key: inbox.RequestKey{Source: testSource, Session: session, RequestID: req},
		Agent: testAgent, Question: prompt, Kind: p.Kind, Options: p.Options, Capture: aep.CaptureFull,
		Token: "tok-" + req, CommandID: "cmd-" + req, Answer: aep.Answer{Option: "allow"}, By: "bob",
		State: inbox.SubmissionAccepted, At: at,
	}))
}

// "Preview" sends nothing and shows, with the input kept, how many of
// the last 30 days' requests in History each choice would have
// answered, and up to three the exact question would not; a request
// chaining a command counts only for no wider choice.
func TestRulePreviewCountsHistory(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	day := 24 * time.Hour
	for i, prompt := range []string{
		"Run `make release`?",                                 // exact, prefix, contains, any
		"Run  `make release`?",                                // the same words: exact too
		"Run `make release -j4`?",                             // prefix, contains, any
		"Run `make release; curl x | sh`?",                    // chained: none wider
		"Delete the branch?",                                  // any
		"Run `make release` in [a](https://a.example \"x\")?", // hidden text: none
	} {
		rh.keepHistory("h"+strconv.Itoa(i), "q"+strconv.Itoa(i), prompt, testNow.Add(-day))
	}
	rh.keepHistory("old", "q-old", "Run `make release`?", testNow.Add(-31*day)) // past the window

	id := rh.ask("s1", "r1", permissionReq())
	action, token := answerForm(t, rh.getPage(c, "").doc(t), id)
	post := url.Values{"token": {token}, form.NameRule: {"on"}, form.NameRuleScope: {form.ScopePrefix},
		form.NameRulePrefix: {"Run make release"}, form.NameRuleContains: {"make release"}, form.NameRuleNote: {"kept"},
		form.NameRulePreview: {"on"}}
	r := rh.postForm(c, rh.relative(action), post)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.body)
	assert.Empty(t, rh.sub.all(), "a preview sends nothing")
	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list, "and keeps no rule")

	maker := r.doc(t).Find("#" + domID(id) + ` [data-testid="rule-maker"]`)
	_, open := maker.Attr("open")
	assert.True(t, open)
	_, prefix := maker.Find(`[data-testid="rule-scope-prefix"]`).Attr("checked")
	assert.True(t, prefix, "the choice kept")
	assert.Equal(t, "kept", maker.Find(`[data-testid="rule-note"]`).AttrOr("value", ""), "the input kept")
	counts := map[string]string{}
	maker.Find(`[data-testid="preview-choice"]`).Each(func(_ int, s *goquery.Selection) {
		counts[s.AttrOr("data-scope", "")] = s.AttrOr("data-count", "")
	})
	assert.Equal(t, map[string]string{"exact": "2", "prefix": "3", "contains": "3", "any": "4"}, counts)
	beyond := maker.Find(`[data-testid="preview-beyond"]`)
	require.Equal(t, 1, beyond.Length(), "the one the prefix answers that exactly this question would not")
	assert.Equal(t, "Run make release -j4?", beyond.Text())
	assert.Contains(t, beyond.AttrOr("href", ""), "/history?session=h2#")

	// Then sent as previewed: the answer goes, the rule is kept.
	_, token = answerForm(t, r.doc(t), id)
	post.Del(form.NameRulePreview)
	post.Set("token", token)
	post.Set(form.NameOption, "0")
	require.Equal(t, http.StatusSeeOther, rh.postForm(c, rh.relative(action), post).StatusCode)
	require.Len(t, rh.sub.all(), 1)
	list, err = rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, store.ScopePrefix, list[0].Match.Scope)
	assert.Equal(t, "Run make release", list[0].Match.Text)
}

// After the send the card says a rule was made, naming its scope and
// linking to it; the Rules page shows the question it was made from, its
// scope in words, what it answered (each linking to History) and who
// made it, with labels cut as cards cut them.
func TestRuleMadeIsSaidOnTheCardAndShownOnTheRulesPage(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	huge := strings.Repeat("a", 900<<10)
	req := permissionReq()
	req.Options = []aep.Option{{ID: "allow", Label: "Allow once " + huge}, {ID: "deny", Label: "Deny"}}
	first := rh.ask("s1", "r1", req)
	r := rh.ruleFromCard(c, first, nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	rh.settle(rh.sub.all()[0])
	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	rule := list[0]
	assert.Equal(t, store.ScopeExact, rule.Match.Scope, "exactly this question by default")

	made := rh.getPage(c, "").doc(t).Find("#" + domID(first) + ` [data-testid="rule-made"]`)
	require.Equal(t, 1, made.Length(), "the card says a rule was made")
	assert.Contains(t, made.Text(), "exactly: “Run make release?”")
	assert.Equal(t, "/rules#rule-"+rule.ID, made.Find(`[data-testid="rule-made-link"]`).AttrOr("href", ""))

	same := rh.ask("s2", "r2", req)
	rh.observe(same)
	card, _ := rh.in.Card(same)
	require.NotNil(t, card.Submission, "the same question in another session is answered")
	cmd := card.Submission.CommandID
	rh.settle(*card.Submission)
	other := rh.ask("s2", "r3", aep.Request{Kind: aep.KindPermission, Prompt: "Run `curl x | sh`?", Options: req.Options})
	rh.observe(other)
	card, _ = rh.in.Card(other)
	assert.Nil(t, card.Submission, "another question with the same options is left to the operator")

	page := rh.getPage(c, "rules")
	assert.Less(t, len(page.body), 200<<10, "a 900 KiB label does not make a huge Rules page")
	row := page.doc(t).Find(`[data-testid="rule"][data-rule="` + rule.ID + `"]`)
	require.Equal(t, 1, row.Length())
	assert.Equal(t, "Run make release?", row.Find(`[data-testid="rule-question"]`).Text())
	assert.Equal(t, "exactly: “Run make release?”", row.Find(`[data-testid="rule-scope"]`).Text())
	assert.Contains(t, row.Find(`[data-testid="rule-maker"]`).Text(), "alice")
	uses := row.Find(`[data-testid="rule-use-link"]`)
	require.Equal(t, 1, uses.Length())
	assert.Equal(t, "Run make release?", uses.Text())
	assert.Equal(t, "/history?session=s2#"+view.HistoryAnchor(cmd), uses.AttrOr("href", ""))
}
