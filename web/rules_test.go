package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// harnessInbox is the harness's inbox for a part made before it is.
type harnessInbox struct{ h **harness }

func (x harnessInbox) Subscribe(buf int) *inbox.Subscription { return (*x.h).in.Subscribe(buf) }
func (x harnessInbox) Card(id inbox.CardID) (inbox.Card, bool) {
	return (*x.h).in.Card(id)
}
func (x harnessInbox) Cards(q inbox.Query) []inbox.Card { return (*x.h).in.Cards(q) }
func (x harnessInbox) SetRuleMiss(id inbox.CardID, m *inbox.RuleMiss) bool {
	return (*x.h).in.SetRuleMiss(id, m)
}
func (x harnessInbox) BeginSubmissionWhile(id inbox.CardID, s inbox.Submission, while func(inbox.Submission)) (inbox.Submission, error) {
	return (*x.h).in.BeginSubmissionWhile(id, s, while)
}
func (x harnessInbox) Posted(id inbox.CardID, token string) bool { return (*x.h).in.Posted(id, token) }
func (x harnessInbox) SettleSubmission(id inbox.CardID, cmd string, st inbox.SubmissionState, reason, detail string) {
	(*x.h).in.SettleSubmission(id, cmd, st, reason, detail)
}

// rulesHarness is a harness whose inbox keeps its answers in a SQLite
// journal that also keeps the rules, with a rules.Runner on them.
type rulesHarness struct {
	*harness
	j      *sqlite.Journal
	runner *rules.Runner
}

func newRulesHarness(t *testing.T, opts ...option) *rulesHarness {
	t.Helper()
	return newRulesHarnessWith(t, rules.Config{}, opts...)
}

// newRulesHarnessWith is newRulesHarness with the Runner's cfg (its Now
// is the harness's clock).
func newRulesHarnessWith(t *testing.T, cfg rules.Config, opts ...option) *rulesHarness {
	t.Helper()
	return newRulesHarnessWrapped(t, cfg, nil, opts...)
}

// newRulesHarnessWrapped is newRulesHarnessWith whose server sees the
// Runner through wrap (nil: as it is).
func newRulesHarnessWrapped(t *testing.T, cfg rules.Config, wrap func(Rules) Rules, opts ...option) *rulesHarness {
	t.Helper()
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "state", "j.db"), sqlite.Options{Host: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	rh := &rulesHarness{j: j}
	var h *harness
	opts = append(opts, withInbox(func(o *inbox.Options) { o.Journal = j }), func(s *setup) {
		sub := rules.Submitter(s.deps.Submitter)
		if !s.cfg.Viewer.Answers() || s.deps.Submitter == nil {
			sub = nil
		}
		cfg.Now = s.cfg.Now
		rh.runner = rules.New(cfg, j, harnessInbox{&h}, sub)
		s.deps.Rules = rh.runner
		if wrap != nil {
			s.deps.Rules = wrap(rh.runner)
		}
		s.deps.History, s.deps.Sessions, s.deps.RuleLooks = j, j, j
	})
	h = newHarness(t, opts...)
	rh.harness = h
	return rh
}

// observe lets the runner see card id as the inbox now holds it.
func (rh *rulesHarness) observe(id inbox.CardID) {
	rh.t.Helper()
	c, ok := rh.in.Card(id)
	require.True(rh.t, ok)
	rh.runner.Observe(context.Background(), c)
}

// /metrics counts the requests each rule answered.
func TestMetricsCountRuleAnswers(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	ctx := context.Background()
	require.NoError(t, rh.j.CreateRule(ctx, store.Rule{ID: "R1", Name: "Allow once", Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
		Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", ""), Answer: aep.Answer{Option: "allow"}}, 0))
	rh.observe(rh.ask("s1", "r1", permissionReq()))
	rh.observe(rh.ask("s1", "r2", permissionReq()))
	m := rh.scrape("Authorization", "Bearer "+secret)
	assert.Equal(t, 2.0, m[`aepforms_rule_answers_total{rule="R1"}`], "%v", m)
	assert.Len(t, rh.sub.all(), 2)
}

// settle has the agent take and record the answer sub sent to request
// id in session s1 (attention.answered caused by its command).
func (rh *rulesHarness) settle(sub inbox.Submission) {
	rh.t.Helper()
	rh.in.SettleSubmission(sub.Card, sub.CommandID, inbox.SubmissionAccepted, "", "")
	rh.emit(aep.Envelope{ID: "ans-" + sub.Key.RequestID, Type: "attention.answered", Session: sub.Key.Session, Subject: sub.Key.RequestID, Cause: sub.CommandID,
		Data: map[string]any{"answer": sub.Answer, "by": "aepforms/" + sub.By, "via": aep.ViaControl}})
}

// ruleFromCard answers card id with its first option, making a rule
// with extra rule controls; it returns the response.
func (rh *rulesHarness) ruleFromCard(c *http.Client, id inbox.CardID, extra url.Values) response {
	rh.t.Helper()
	d := rh.getPage(c, "").doc(rh.t)
	require.Equal(rh.t, 1, d.Find("#"+domID(id)+` [data-testid="rule-maker"]`).Length(), "the card offers a rule")
	action, token := answerForm(rh.t, d, id)
	post := url.Values{"token": {token}, form.NameOption: {"0"}, form.NameRule: {"on"}}
	for k, v := range extra {
		post[k] = v
	}
	return rh.postForm(c, rh.relative(action), post)
}

// "Answer like this from now on…" starts at exactly this question: the
// wider choices are worded, pre-filled from the question's command
// (never empty), the widest behind a warning; the session scope starts
// open; each option button also reads what it does with the box ticked.
func TestRuleMakerStartsAtExactlyThisQuestion(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	id := rh.ask("s1", "r1", permissionReq())
	card := rh.getPage(c, "").doc(t).Find("#" + domID(id))
	maker := card.Find(`[data-testid="rule-maker"]`)
	require.Equal(t, 1, maker.Length(), "the card offers a rule")
	_, exact := maker.Find(`[data-testid="rule-scope-exact"]`).Attr("checked")
	assert.True(t, exact, "'Exactly this question' starts chosen")
	assert.Equal(t, "Run make release?", maker.Find(`[data-testid="rule-question"]`).Text(), "the question as the card shows it")
	for _, scope := range []string{"prefix", "contains", "any"} {
		_, on := maker.Find(`[data-testid="rule-scope-` + scope + `"]`).Attr("checked")
		assert.False(t, on, scope)
	}
	assert.Equal(t, "Run make release", maker.Find(`[data-testid="rule-prefix"]`).AttrOr("value", ""), "pre-filled up to the command's first words")
	assert.Equal(t, "make release", maker.Find(`[data-testid="rule-contains"]`).AttrOr("value", ""), "pre-filled with the command's first words")
	assert.Contains(t, maker.Find(`[data-testid="rule-any-warning"]`).Text(), "whatever this agent asks")
	assert.Equal(t, 1, maker.Find(`[data-testid="rule-compound"]`).Length(), "a permission's wider rule never answers a chained command")
	_, bySession := maker.Find(`[data-testid="rule-session"]`).Attr("checked")
	assert.False(t, bySession, "'Only in this session' starts unticked")
	_, make := maker.Find(`[data-testid="rule-make"]`).Attr("checked")
	assert.False(t, make, "no rule unless asked for")
	labels := card.Find(`[data-testid="option"] .opt-label`)
	require.Equal(t, 2, labels.Length(), "each option reads what it does with the box ticked (CSS)")
	assert.Equal(t, "Allow once", labels.First().Text(), "the button's text stays the label")
	assert.Equal(t, " once", labels.First().Find(".opt-once").Text(), "“once” goes with the box ticked")
	assert.Equal(t, "Deny", labels.Last().Text())
	assert.Zero(t, labels.Last().Find(".opt-once").Length())
}

// A rule made from a card's answer answers the next matching requests
// (each once, under the rule's name on the card and in History), leaves
// a request it does not match, is listed on /rules, and once deleted
// there answers nothing more.
func TestRuleFromACard(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	first := rh.ask("s1", "r1", permissionReq())
	r := rh.ruleFromCard(c, first, url.Values{form.NameRuleScope: {form.ScopeContains}, form.NameRuleContains: {"make release"}, form.NameRuleNote: {"CI does this"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
	require.Len(t, rh.sub.all(), 1, "the answer itself is sent")

	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	rule := list[0]
	assert.Equal(t, "alice", rule.Maker)
	assert.Equal(t, "allow", rule.Answer.Option)
	assert.Equal(t, store.ScopeContains, rule.Match.Scope)
	assert.Equal(t, "make release", rule.Match.Text)
	assert.Equal(t, "Run make release?", rule.Match.Question, "the question it was made from, as the card showed it")
	assert.Equal(t, string(first), rule.Card)
	assert.True(t, rule.Expires.Equal(testNow.Add(8*time.Hour)), "8 hours by default: %v", rule.Expires)

	for _, req := range []string{"r2", "r3", "r4"} {
		id := rh.ask("s1", req, permissionReq())
		rh.observe(id)
		card, _ := rh.in.Card(id)
		require.NotNil(t, card.Submission, req)
		rh.settle(*card.Submission)
	}
	require.Len(t, rh.sub.all(), 4, "one command per matching request")
	other := rh.ask("s1", "r5", aep.Request{Kind: aep.KindPermission, Prompt: "Delete the branch?", Options: permissionReq().Options})
	rh.observe(other)
	left, _ := rh.in.Card(other)
	assert.Nil(t, left.Submission, "not matching: left for the operator")

	d := rh.getPage(c, "").doc(t)
	by := d.Find("#" + domID(cardID("s1", "r2")) + ` [data-testid="answered-by-rule"]`)
	require.Equal(t, 1, by.Length(), "the card names the rule")
	assert.Contains(t, by.Text(), rule.Name)
	assert.Contains(t, by.Text(), "set by alice")
	assert.Contains(t, d.Find("#"+domID(cardID("s1", "r2"))+` [data-testid="state"]`).Text(), "by a rule of this UI", "nobody pressed anything on this page")
	href, _ := by.Find(`[data-testid="rule-link"]`).Attr("href")
	assert.Equal(t, "/rules#rule-"+rule.ID, href)

	hist := rh.getPage(c, "history").doc(t)
	assert.Equal(t, 3, hist.Find(`[data-testid="history-operator"] [data-testid="answered-by-rule"]`).Length(), "History names the rule")

	page := rh.getPage(c, "rules").doc(t)
	row := page.Find(`[data-testid="rule"][data-rule="` + rule.ID + `"]`)
	require.Equal(t, 1, row.Length())
	assert.Equal(t, "active", row.AttrOr("data-state", ""))
	assert.Equal(t, "3 times", row.Find(`[data-testid="rule-uses-count"]`).Text())
	assert.Regexp(t, `^\s*3 times, last \S`, row.Find(`[data-testid="rule-uses"]`).Text(), "the comma follows the count, as in a sentence")
	uses := row.Find(`[data-testid="rule-use"]`)
	require.Equal(t, 3, uses.Length())
	for i := range uses.Length() {
		assert.Regexp(t, `^\s*Run make release\?, \S`, uses.Eq(i).Text(), "each use: its question, a comma, when")
	}
	assert.Contains(t, row.Find(`[data-testid="rule-note"]`).Text(), "CI does this")
	scope := row.Find(`[data-testid="rule-scope"]`)
	assert.Equal(t, "Which questions containing: “make release”", strings.TrimSpace(scope.Prev().Text())+" "+strings.TrimSpace(scope.Text()),
		"the scope's term and its words read as one phrase (it read 'Answers questions any question …', and a second term 'Answers' names the answer)")
	assert.Contains(t, row.Find(`[data-testid="rule-answer"]`).Text(), "Allow once")

	pause, _ := row.Find(`[data-testid="rule-pause"]`).Parent().Attr("action")
	require.Equal(t, http.StatusSeeOther, rh.postForm(c, rh.relative(pause), url.Values{}).StatusCode)
	row = rh.getPage(c, "rules").doc(t).Find(`[data-testid="rule"][data-rule="` + rule.ID + `"]`)
	assert.Equal(t, "paused", row.AttrOr("data-state", ""))
	assert.Contains(t, row.Find(`[data-testid="rule-reason"]`).Text(), "Paused by alice")
	paused := rh.ask("s1", "r6", permissionReq())
	rh.observe(paused)
	left, _ = rh.in.Card(paused)
	assert.Nil(t, left.Submission, "paused: left for the operator")

	del, _ := row.Find(`[data-testid="rule-delete"]`).Parent().Attr("action")
	require.Equal(t, http.StatusSeeOther, rh.postForm(c, rh.relative(del), url.Values{}).StatusCode)
	assert.Zero(t, rh.getPage(c, "rules").doc(t).Find(`[data-testid="rule"]`).Length())
	_, err = rh.j.SetRuleState(context.Background(), rule.ID, store.RuleActive, "", "", testNow)
	require.NoError(t, err)
	after := rh.ask("s1", "r7", permissionReq())
	rh.observe(after)
	left, _ = rh.in.Card(after)
	assert.Nil(t, left.Submission, "deleted: the next match stays pending")
	assert.Len(t, rh.sub.all(), 4)
}

// A problem with the rule part is the rule part's: shown at its control
// with the operator's input kept, and nothing is sent; a form rule must
// fill every field.
func TestRulePartProblems(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	id := rh.ask("s1", "r1", permissionReq())
	r := rh.ruleFromCard(c, id, url.Values{form.NameRuleHours: {"1000"}, form.NameRuleScope: {form.ScopeContains}, form.NameRuleContains: {"release"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	d := r.doc(t)
	maker := d.Find("#" + domID(id) + ` [data-testid="rule-maker"]`)
	_, open := maker.Attr("open")
	assert.True(t, open, "shown open")
	assert.Contains(t, maker.Find(`[data-testid="field-error"]`).Text(), "720 hours")
	assert.Equal(t, "1000", maker.Find(`[data-testid="rule-hours"]`).AttrOr("value", ""), "input kept")
	assert.Equal(t, "release", maker.Find(`[data-testid="rule-contains"]`).AttrOr("value", ""))
	_, ticked := maker.Find(`[data-testid="rule-make"]`).Attr("checked")
	assert.True(t, ticked)
	link, _ := d.Find(`[data-testid="error-summary"] a`).Attr("href")
	assert.Equal(t, "#"+string(id)+"-rule-hours", link, "the summary leads to the control")
	assert.Empty(t, rh.sub.all(), "nothing sent")
	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list)

	f := rh.ask("s1", "r2", aep.Request{Kind: aep.KindForm, Prompt: "Where?", Fields: []aep.FieldSpec{
		{ID: "env", Type: aep.FieldString, Label: "Environment"}, {ID: "why", Type: aep.FieldString, Label: "Reason"}}})
	action, token := answerForm(t, rh.getPage(c, "").doc(t), f)
	r = rh.postForm(c, rh.relative(action), url.Values{"token": {token}, "f0": {"staging"}, form.NameRule: {"on"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	assert.Contains(t, r.doc(t).Find("#"+domID(f)+` [data-testid="rule-maker"] [data-testid="field-error"]`).Text(), "fill every field")
	assert.Empty(t, rh.sub.all())
}

// A watch-only UI offers no rule, runs none, and its Rules page changes
// none.
func TestWatchOnlyMakesNoRules(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret), withConfig(func(c *Config) { c.Viewer = inbox.Viewer{WatchOnly: true} }))
	c := rh.client()
	rh.signIn(c, "alice")
	id := rh.ask("s1", "r1", permissionReq())
	d := rh.getPage(c, "").doc(t)
	assert.Zero(t, d.Find(`[data-testid="rule-maker"]`).Length())
	require.NoError(t, rh.j.CreateRule(context.Background(), store.Rule{ID: "R1", Name: "Allow once", Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
		Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", ""), Answer: aep.Answer{Option: "allow"}}, 0))
	rh.observe(id)
	card, _ := rh.in.Card(id)
	assert.Nil(t, card.Submission)
	page := rh.getPage(c, "rules").doc(t)
	assert.Equal(t, 1, page.Find(`[data-testid="rule"]`).Length())
	assert.Zero(t, page.Find(`[data-testid="rule-delete"]`).Length())
	assert.Equal(t, http.StatusConflict, rh.postForm(c, "rules/R1/delete", url.Values{}).StatusCode)
}

// ruleMarkupPages are the markup tests' pages of the rules: the Rules page with
// an active and a paused rule, and a card whose rule part was refused
// (the disclosure open, its problem at its control).
func ruleMarkupPages(t *testing.T) []markupPage {
	t.Helper()
	rh := newRulesHarness(t)
	ctx := context.Background()
	for i, state := range []string{store.RuleActive, store.RulePaused} {
		r := store.Rule{ID: "R" + strconv.Itoa(i), Name: "Allow once to permission requests", Maker: "alice", Note: "CI asks this all day",
			Created: testNow, Expires: testNow.Add(8 * time.Hour), State: state,
			Match:  rules.MatchOf(inbox.Card{Agent: "deployer", Request: permissionReq()}, rules.Seen{Question: rules.QuestionOf(permissionReq().Prompt, 0)}, store.ScopeContains, "make release", ""),
			Answer: aep.Answer{Option: "allow"}}
		if state == store.RulePaused {
			r.Reason = "Paused: it answered 31 requests within 1 minute, more than the 30 allowed (a runaway agent?). Resume it when that is sorted."
		}
		require.NoError(t, rh.j.CreateRule(ctx, r, 0))
	}
	id := rh.ask("s1", "r1", permissionReq())
	d := rh.getPage(nil, "").doc(t)
	_, token := answerForm(t, d, id)
	bad := url.Values{"token": {token}, form.NameOption: {"0"}, form.NameRule: {"on"}, form.NameRuleHours: {"0"}, form.NameRuleContains: {"release"}}
	return []markupPage{
		{name: "rules", path: "rules", h: rh.harness},
		{name: "rules dark", path: "rules?theme=dark", h: rh.harness},
		{name: "refused rule part", path: "cards/" + string(id) + "/answer", post: bad, h: rh.harness},
	}
}

// The rule an operator asked for is kept even when their browser drops
// the request once the answer is journaled (the answer goes on, so must
// the rule): its making does not hang on the request's context.
func TestRuleKeptWhenTheBrowserLeaves(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	id := rh.ask("s1", "r1", permissionReq())
	action, token := answerForm(t, rh.getPage(rh.client(), "", "Authorization", "Bearer "+secret).doc(t), id)
	post := url.Values{"token": {token}, form.NameOption: {"0"}, form.NameRule: {"on"}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the browser is gone by the time the handler runs
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, rh.url(rh.relative(action)), strings.NewReader(post.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", rh.srv.URL)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("X-Operator-Name", "alice")
	rec := httptest.NewRecorder()
	rh.srv.Config.Handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusSeeOther, rec.Code, "%s", rec.Body.String())
	require.Len(t, rh.sub.all(), 1, "the answer is sent")
	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1, "the rule is kept")
	assert.Equal(t, "alice", list[0].Maker)
}

// A card whose labels the emitter withheld (capture metadata) offers no
// rule, and a post asking for one anyway is refused at the rule part with
// nothing sent: such a rule could never answer anything (a rule never
// matches placeholders), so keeping it would only mislead its maker.
func TestNoRuleFromPlaceholderLabels(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	rh.emit(aep.Envelope{ID: "r1", Type: "attention.requested", Session: "s1", Run: "run_1", Capture: "metadata", Data: permissionReq()})
	id := cardID("s1", "r1")
	d := rh.getPage(c, "").doc(t)
	require.Equal(t, 1, d.Find("#"+domID(id)).Length())
	assert.Zero(t, d.Find("#"+domID(id)+` [data-testid="rule-maker"]`).Length(), "no rule offered")
	action, token := answerForm(t, d, id)
	r := rh.postForm(c, rh.relative(action), url.Values{"token": {token}, form.NameOption: {"0"}, form.NameRule: {"on"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.body)
	assert.Contains(t, r.doc(t).Find("#"+domID(id)+` [data-testid="error-summary"]`).Text(), "No rule can be made from this card",
		"the refusal says why")
	assert.Empty(t, rh.sub.all(), "nothing sent")
	list, err := rh.j.Rules(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list, "no rule kept")
}

// countingRules is a Rules whose store counts its Rule reads.
type countingRules struct {
	Rules
	st *countingStore
}

func (c countingRules) Store() rules.Store { return c.st }

type countingStore struct {
	rules.Store
	reads atomic.Int64
}

func (c *countingStore) Rule(ctx context.Context, id string) (store.Rule, bool, error) {
	c.reads.Add(1)
	return c.Store.Rule(ctx, id)
}

// One render (a History page of 50 rows a rule answered) reads each rule
// it names once, not once per row.
func TestRuleLookupReadsEachRuleOncePerRender(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t)
	ctx := context.Background()
	for _, id := range []string{"R1", "R2"} {
		require.NoError(t, rh.j.CreateRule(ctx, store.Rule{ID: id, Name: "Allow once " + id, Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
			Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", ""), Answer: aep.Answer{Option: "allow"}}, 0))
	}
	cs := &countingStore{Store: rh.runner.Store()}
	p := &rulePages{site: &site{base: "/"}, rules: countingRules{Rules: rh.runner, st: cs}}
	lookup := p.ruleLookup(ctx)
	for i := range 50 {
		id := []string{"R1", "R2", "gone"}[i%3]
		ref, ok := lookup(rules.By(id))
		if id == "gone" {
			assert.False(t, ok)
			continue
		}
		require.True(t, ok)
		assert.Equal(t, "Allow once "+id, ref.Name)
	}
	assert.Equal(t, int64(3), cs.reads.Load(), "rule reads for 50 rows naming 3 rules")
	_, ok := lookup("alice")
	assert.False(t, ok, "an operator's answer names no rule")
}

// Past --rule-max rules kept, making one more is refused at the rule
// part, the input kept and nothing sent; after a delete it can be made.
func TestRuleMaxRefusesOneMore(t *testing.T) {
	t.Parallel()
	rh := newRulesHarnessWith(t, rules.Config{MaxRules: 2}, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	ctx := context.Background()
	for _, id := range []string{"R1", "R2"} {
		require.NoError(t, rh.j.CreateRule(ctx, store.Rule{ID: id, Name: "Allow once " + id, Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
			Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", "other-agent"), Answer: aep.Answer{Option: "allow"}}, 0))
	}
	id := rh.ask("s1", "r1", permissionReq())
	action, token := answerForm(t, rh.getPage(c, "").doc(t), id)
	post := url.Values{"token": {token}, form.NameOption: {"0"}, form.NameRule: {"on"}, form.NameRuleNote: {"CI asks this all day"}}
	r := rh.postForm(c, rh.relative(action), post)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.body)
	d := r.doc(t)
	assert.Contains(t, d.Find("#"+domID(id)+` [data-testid="error-summary"]`).Text(), "2 rules", "the refusal says why")
	assert.Equal(t, "CI asks this all day", d.Find("#"+domID(id)+` [name="`+form.NameRuleNote+`"]`).AttrOr("value", d.Find("#"+domID(id)+` [name="`+form.NameRuleNote+`"]`).Text()), "the input is kept")
	assert.Empty(t, rh.sub.all(), "nothing sent")
	list, err := rh.j.Rules(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 2, "no third rule kept")

	ok, err := rh.j.DeleteRule(ctx, "R1", "", testNow)
	require.NoError(t, err)
	require.True(t, ok)
	r = rh.postForm(c, rh.relative(action), post)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "after a delete: %s", r.body)
	list, err = rh.j.Rules(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 2, "the new rule kept")
}
