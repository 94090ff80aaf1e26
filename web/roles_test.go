package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/render/form"
)

// Three operators sign in through the provider's code flow, their role
// from their groups (admin=aepforms-admins, answerer=oncall; vera, in
// auditors only, is a viewer). The viewer's page offers no form and says
// why, and a hand-made answer (one card, a batch) gets 403 and sends
// nothing; the answerer's answer is sent once, under their provider name;
// only the admin makes a rule, the answerer may pause it but not resume
// or delete it; the header shows each one's name and role.
func TestRolesFromTheProvidersGroups(t *testing.T) {
	t.Parallel()
	opt, _ := withOP(t, func(c *OIDC) {
		c.Roles = map[Role][]string{RoleAdmin: {"aepforms-admins"}, RoleAnswerer: {"oncall"}}
	})
	rh := newRulesHarness(t, opt)
	rh.clk.Add(time.Since(rh.clk.Now()))
	vera, ann, ada := rh.browser(), rh.browser(), rh.browser()
	rh.signInAtOP(vera, "vera")
	rh.signInAtOP(ann, "ann")
	rh.signInAtOP(ada, "ada")
	for c, want := range map[*http.Client]string{vera: "(viewer)", ann: "(answerer)", ada: "(admin)"} {
		assert.Equal(t, want, rh.getPage(c, "").doc(t).Find(`[data-testid="role"]`).Text())
	}

	id := rh.ask("s1", "r1", permissionReq())
	card := rh.getPage(vera, "").doc(t).Find("#" + domID(id))
	require.Equal(t, 1, card.Length())
	assert.Zero(t, card.Find(`form[data-testid="answer-form"] button[type="submit"], [data-testid="option"]`).Length(), "the viewer is offered no answer")
	assert.Contains(t, card.Text(), "Your role here is viewer")
	assert.Zero(t, rh.getPage(vera, "").doc(t).Find(`[data-testid="watch-only"]`).Length(), "the UI is not watch-only: the viewer's role is said on each card, not as the UI's")

	action, token := answerForm(t, rh.getPage(ann, "").doc(t), id)
	post := url.Values{"token": {token}, form.NameOption: {"0"}}
	r := rh.postForm(vera, rh.relative(action), post)
	assert.Equal(t, http.StatusForbidden, r.StatusCode, "a viewer's hand-made post: %s", r.body)
	assert.Equal(t, http.StatusForbidden, rh.postForm(vera, "batch/answer", url.Values{"card": {string(id)}}).StatusCode)
	assert.Empty(t, rh.sub.all(), "nothing was sent for the viewer")

	annCard := rh.getPage(ann, "").doc(t).Find("#" + domID(id))
	assert.Zero(t, annCard.Find(`[data-testid="rule-maker"]`).Length(), "an answerer is offered no rule")
	withRule := url.Values{"token": {token}, form.NameOption: {"0"}, form.NameRule: {"on"}}
	assert.Equal(t, http.StatusForbidden, rh.postForm(ann, rh.relative(action), withRule).StatusCode, "an answerer's rule")
	assert.Empty(t, rh.sub.all(), "the refused rule's answer was not sent either")

	r = rh.postForm(ann, rh.relative(action), post)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	sent := rh.sub.all()
	require.Len(t, sent, 1, "the answerer's answer is sent once")
	assert.Equal(t, "ann", sent[0].By, "under the name the provider gave")
	who := rh.getPage(ada, "history").doc(t).Find(`[data-testid="history-operator"]`).Text()
	assert.Contains(t, who, "ann", "History records who answered by the provider's name")

	second := rh.ask("s1", "r2", permissionReq())
	r = rh.ruleFromCard(ada, second, url.Values{form.NameRuleScope: {form.ScopeContains}, form.NameRuleContains: {"make release"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "the admin makes a rule: %s", r.body)
	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "ada", list[0].Maker)

	rule := "rules/" + list[0].ID
	assert.Equal(t, http.StatusForbidden, rh.postForm(vera, rule+"/pause", nil).StatusCode, "a viewer pauses nothing")
	assert.Equal(t, http.StatusSeeOther, rh.postForm(ann, rule+"/pause", nil).StatusCode, "any answerer may pause a rule")
	row := rh.getPage(ann, "rules").doc(t).Find(`[data-testid="rule"]`)
	assert.Zero(t, row.Find(`[data-testid="rule-resume"], [data-testid="rule-delete"]`).Length(), "the answerer is offered no resume or delete")
	assert.Equal(t, http.StatusForbidden, rh.postForm(ann, rule+"/resume", nil).StatusCode)
	assert.Equal(t, http.StatusForbidden, rh.postForm(ann, rule+"/delete", nil).StatusCode)
	assert.Equal(t, http.StatusSeeOther, rh.postForm(ada, rule+"/resume", nil).StatusCode, "the admin resumes it")
}

// An operators file's line carries the role (answerer when it names
// none): a viewer line's operator is refused an answer, signed in as with
// a Bearer script, and changing an operator's role ends the sessions they
// opened in the old one.
func TestOperatorsFileRoles(t *testing.T) {
	t.Parallel()
	annHash := bcryptHash(t, annSecret)
	shared := newMemorySessions()
	withRoleOf := func(role Role) option {
		return func(s *setup) {
			s.cfg.Operators = []Operator{{Name: "Ann", Hash: annHash, Role: role}}
		}
	}
	h := newHarness(t, withRoleOf(RoleViewer), withSessions(shared))
	id := h.ask("s1", "r1", nameForm())
	c := h.client()
	r := h.postForm(c, "signin", url.Values{"token": {annSecret}, "name": {"Ann"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	ck := sessionCookie(r.Response).Value
	page := h.getPage(c, "").doc(t)
	assert.Equal(t, "(viewer)", page.Find(`[data-testid="role"]`).Text())
	assert.Contains(t, page.Find("#"+domID(id)).Text(), "Your role here is viewer")
	bearer := h.postForm(nil, "cards/"+string(id)+"/answer", url.Values{"f0": {"svc"}},
		"Authorization", "Bearer "+annSecret, "X-Operator-Name", "Ann")
	assert.Equal(t, http.StatusForbidden, bearer.StatusCode, "a viewer's script answers nothing either")
	assert.Empty(t, h.sub.all())

	// The same journal, Ann's line now says admin (a restart, or another
	// replica): the session she opened as a viewer no longer counts, nor
	// opens a stream.
	promoted := newHarness(t, withRoleOf(RoleAdmin), withSessions(shared))
	assert.Equal(t, http.StatusUnauthorized, promoted.statusWith(ck), "a session of the old role no longer counts")
	assert.Equal(t, http.StatusUnauthorized, promoted.do(nil, promoted.request(http.MethodGet, promoted.url("push"), nil, "Cookie", cookieName+"="+ck)).StatusCode)
	again := promoted.postForm(promoted.client(), "signin", url.Values{"token": {annSecret}, "name": {"Ann"}})
	require.Equal(t, http.StatusSeeOther, again.StatusCode)
	assert.Equal(t, http.StatusOK, promoted.statusWith(sessionCookie(again.Response).Value), "signed in again, as an admin")
}

// A viewer is offered no batch: the batch page lists no batch form, the
// inbox no batch region, and its push stream carries no batch summaries,
// as for a watch-only UI; the server would refuse each post (403), so
// offering them is offering what cannot be done.
func TestViewerIsOfferedNoBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) {
		c.Operators = []Operator{{Name: "Vera", Hash: bcryptHash(t, annSecret), Role: RoleViewer}}
	}))
	askPermissions(h, 3)
	c := h.client()
	r := h.postForm(c, "signin", url.Values{"token": {annSecret}, "name": {"Vera"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)

	batches := h.getPage(c, "batches")
	require.Equal(t, http.StatusOK, batches.StatusCode)
	d := batches.doc(t)
	assert.Zero(t, d.Find(`form[data-testid="batch-form"]`).Length(), "no batch form")
	assert.Zero(t, d.Find(`[data-testid="batch"]`).Length(), "no batch")
	page := h.getPage(c, "").doc(t)
	assert.Zero(t, page.Find(`[data-testid="batch"]`).Length(), "the inbox offers no batch")
}
