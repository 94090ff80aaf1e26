package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// A rule made for its agent's connection "host/1" matches a request
// from "host/2" in all else: the card says so (which rule, both
// connections), reaching an open page by push, and nothing is sent. A
// viewer sees the notice without the carry-over, and a viewer's
// hand-made post of it is refused (403) and changes nothing. An
// answerer's carry-over lets the rule answer "host/2": this card at once
// (one answer, by the rule), the next request from "host/2" too, and the
// Rules page names who carried it, and no longer flags the rule.
func TestCarryingARuleOverToItsAgentsNewConnection(t *testing.T) {
	t.Parallel()
	var instance atomic.Value
	instance.Store("host/2")
	cfg := rules.Config{Claimant: func(context.Context, string) string { return instance.Load().(string) }}
	ops := func(s *setup) {
		s.cfg.Operators = []Operator{{Name: "Vera", Hash: bcryptHash(t, annSecret), Role: RoleViewer}, {Name: "Bo", Hash: bcryptHash(t, boSecret), Role: RoleAnswerer}}
	}
	rh := newRulesHarnessWith(t, cfg, ops)
	ctx := context.Background()
	req := permissionReq()
	seen := rules.Seen{Question: rules.QuestionOf(req.Prompt, 0), Instance: "host/1"}
	m := rules.MatchOf(inbox.Card{Agent: testAgent, Request: req}, seen, store.ScopeExact, "", "")
	require.NoError(t, rh.j.CreateRule(ctx, store.Rule{ID: "R1", Name: "Allow once to permission requests", Maker: "alice", Created: testNow.Add(-time.Hour),
		Expires: testNow.Add(time.Hour), Match: m, Answer: aep.Answer{Option: "allow"}, State: store.RuleActive}, 0))

	signIn := func(name, secret string) (*http.Client, string) {
		c := rh.client()
		r := rh.postForm(c, "signin", url.Values{"token": {secret}, "name": {name}})
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
		return c, cookieName + "=" + sessionCookie(r.Response).Value
	}
	vera, veraCookie := signIn("Vera", annSecret)
	bo, _ := signIn("Bo", boSecret)

	id := rh.ask("s1", "r1", req)
	ps := rh.openPush("", "Cookie", veraCookie)
	rh.observe(id)
	other := rh.ask("s0", "r0", req) // from host/2 too, waiting
	rh.observe(other)
	assert.Empty(t, rh.sub.all(), "another connection: nothing sent")
	var pushed bool
	for !pushed {
		msg := ps.next()
		if msg.Event != "card" {
			continue
		}
		c := cardMsg(t, msg)
		if c.Find(`[data-testid="rule-miss"]`).Length() == 1 {
			pushed = true
			assert.Contains(t, c.Find(`[data-testid="rule-miss-rule-connection"]`).Text(), "host/1")
			assert.Contains(t, c.Find(`[data-testid="rule-miss-connection"]`).Text(), "host/2")
			assert.Zero(t, c.Find(`[data-testid="rule-carry"]`).Length(), "a viewer is not offered the carry-over")
		}
	}

	page := rh.getPage(bo, "").doc(t)
	card := page.Find("#" + domID(id))
	miss := card.Find(`[data-testid="rule-miss"]`)
	require.Equal(t, 1, miss.Length(), "the card says why the rule did not answer")
	assert.Contains(t, miss.Find(`[data-testid="rule-miss-rule"]`).Text(), "Allow once to permission requests")
	assert.Zero(t, miss.Find(`[data-testid="rule-miss-live"]`).Length(), "its own connection is not known to be live")
	action, ok := miss.Find(`[data-testid="rule-carry-form"]`).Attr("action")
	require.True(t, ok, "an answerer is offered the carry-over")
	carryPath := strings.TrimPrefix(action, "/")
	assert.Equal(t, 1, card.Find(`[data-testid="answer-form"], form[data-card]`).Length(), "and may still answer it by hand")

	rulesPage := rh.getPage(bo, "rules").doc(t)
	flag := rulesPage.Find(`[data-testid="rule-not-answering"]`)
	require.Equal(t, 1, flag.Length(), "the Rules page flags the rule")
	assert.Contains(t, flag.Find(`[data-testid="rule-not-answering-connection"]`).Text(), "host/2")
	assert.Equal(t, "/?agent="+testAgent, flag.Find(`[data-testid="rule-not-answering-questions"]`).AttrOr("href", ""), "it links to where those questions wait")

	refused := rh.postForm(vera, carryPath, url.Values{"rule": {"R1"}})
	assert.Equal(t, http.StatusForbidden, refused.StatusCode, "%s", refused.body)
	r, _, err := rh.j.Rule(ctx, "R1")
	require.NoError(t, err)
	assert.Empty(t, r.Match.Carried, "a viewer's post changes nothing")
	assert.Empty(t, rh.sub.all())

	stale := rh.postForm(bo, carryPath, url.Values{"rule": {"R2"}})
	assert.Equal(t, http.StatusConflict, stale.StatusCode, "another rule than the card shows: %s", stale.body)

	done := rh.postForm(bo, carryPath, url.Values{"rule": {"R1"}})
	require.Equal(t, http.StatusSeeOther, done.StatusCode, "%s", done.body)
	subs := rh.sub.all()
	require.Len(t, subs, 1, "the card is answered by the rule")
	assert.Equal(t, rules.By("R1"), subs[0].By)
	assert.Equal(t, "allow", subs[0].Answer.Option)
	r, _, err = rh.j.Rule(ctx, "R1")
	require.NoError(t, err)
	assert.Equal(t, []string{"host/2"}, r.Match.Carried)

	otherCard := rh.getPage(bo, "").doc(t).Find("#" + domID(other))
	assert.Equal(t, 1, otherCard.Find(`[data-testid="rule-miss-carried"]`).Length(), "the other question waiting says the rule answers its connection now")
	assert.Len(t, rh.sub.all(), 1, "and is not answered unseen")
	again := rh.postForm(bo, "cards/"+string(other)+"/carry", url.Values{"rule": {"R1"}})
	require.Equal(t, http.StatusSeeOther, again.StatusCode, "%s", again.body)
	require.Len(t, rh.sub.all(), 2, "its operator let the rule answer it")

	next := rh.ask("s2", "r2", req)
	rh.observe(next)
	require.Len(t, rh.sub.all(), 3, "the next request from the new connection is the rule's")
	instance.Store("evil/3")
	third := rh.ask("s3", "r3", req)
	rh.observe(third)
	assert.Len(t, rh.sub.all(), 3, "a third connection is not carried")
	require.Equal(t, 1, rh.getPage(bo, "").doc(t).Find("#"+domID(third)).Find(`[data-testid="rule-miss"]`).Length())
	paused := rh.postForm(bo, "rules/R1/pause", nil)
	require.Equal(t, http.StatusSeeOther, paused.StatusCode, "%s", paused.body)
	assert.Zero(t, rh.getPage(bo, "").doc(t).Find("#"+domID(third)).Find(`[data-testid="rule-miss"]`).Length(), "a paused rule is no longer named as missing it")

	rulesPage = rh.getPage(bo, "rules").doc(t)
	changes := rulesPage.Find(`[data-testid="rule-change"]`)
	require.Equal(t, 2, changes.Length(), "newest first: the pause, the carry-over")
	assert.Contains(t, changes.Eq(1).Text(), "Set to answer connection “host/2” too by Bo")
	assert.Contains(t, rulesPage.Find(`[data-testid="rule-match"]`).Text(), "Connections: “host/1”, “host/2”")
}
