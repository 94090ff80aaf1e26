package rules

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var permOptions = []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}

func permCard(prompt string) inbox.Card {
	return inbox.Card{
		ID: "c1", Key: inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r1"},
		Agent: "builder", Capture: aep.CaptureFull,
		Request: aep.Request{Kind: aep.KindPermission, Prompt: prompt, Options: permOptions},
	}
}

func permRule() store.Rule {
	return store.Rule{ID: "r", State: store.RuleActive, Expires: t0.Add(time.Hour), Maker: "alice",
		Match:  store.RuleMatch{Kind: aep.KindPermission, Options: permOptions},
		Answer: aep.Answer{Option: "allow"}}
}

func TestMatch(t *testing.T) {
	fields := []aep.FieldSpec{{ID: "env", Type: aep.FieldString, Label: "Environment"}, {ID: "n", Type: aep.FieldNumber, Label: "Count"}}
	formCard := func() inbox.Card {
		c := permCard("Deploy?")
		c.Request = aep.Request{Kind: aep.KindForm, Prompt: "Deploy?", Fields: fields}
		return c
	}
	formRule := func(values aep.Values) store.Rule {
		r := permRule()
		r.Match = store.RuleMatch{Kind: aep.KindForm, Fields: fields}
		r.Answer = aep.Answer{Values: values}
		return r
	}
	for _, tc := range []struct {
		name string
		rule func(r *store.Rule)
		card func(c *inbox.Card)
		form bool
		want bool
		why  string
	}{
		{name: "same kind and options", want: true},
		{name: "paused", rule: func(r *store.Rule) { r.State = store.RulePaused }, why: whyState},
		{name: "deleted", rule: func(r *store.Rule) { r.State = store.RuleDeleted }, why: whyState},
		{name: "expired at its instant", rule: func(r *store.Rule) { r.Expires = t0 }, why: whyExpired},
		{name: "another kind", card: func(c *inbox.Card) { c.Request.Kind = aep.KindReview }, why: whyKind},
		{name: "same ids, another label", card: func(c *inbox.Card) {
			c.Request.Options = []aep.Option{{ID: "allow", Label: "Allow always"}, {ID: "deny", Label: "Deny"}}
		}, why: whyOptions},
		{name: "same labels, another id", card: func(c *inbox.Card) {
			c.Request.Options = []aep.Option{{ID: "yes", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}
		}, why: whyOptions},
		{name: "one option more", card: func(c *inbox.Card) {
			c.Request.Options = append(append([]aep.Option{}, permOptions...), aep.Option{ID: "always", Label: "Always"})
		}, why: whyOptions},
		{name: "labels are capture placeholders", card: func(c *inbox.Card) {
			c.Capture = aep.CaptureMetadata
			c.Request.Options = []aep.Option{{ID: "allow", Label: "allow"}, {ID: "deny", Label: "deny"}}
		}, rule: func(r *store.Rule) {
			r.Match.Options = []aep.Option{{ID: "allow", Label: "allow"}, {ID: "deny", Label: "deny"}}
		}, why: whyLabels},
		{name: "agent scoped, same agent", rule: func(r *store.Rule) { r.Match.Agent = "builder" }, want: true},
		{name: "agent scoped, another agent", rule: func(r *store.Rule) { r.Match.Agent = "deployer" }, why: whyAgent},
		{name: "session scoped, another session", rule: func(r *store.Rule) { r.Match.Session = "s2" }, why: whySession},
		{name: "session scoped, same session", rule: func(r *store.Rule) { r.Match.Session = "s1" }, want: true},
		{name: "prompt contains, any case", rule: func(r *store.Rule) { r.Match.PromptContains = "RUN LS" }, want: true},
		{name: "prompt lacks the text", rule: func(r *store.Rule) { r.Match.PromptContains = "rm -rf" }, why: whyPrompt},
		{name: "rule with fields, request without", rule: func(r *store.Rule) { r.Match.Fields = fields }, why: whyFields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := permRule(), permCard("May I run ls -la in /tmp?")
			if tc.rule != nil {
				tc.rule(&r)
			}
			if tc.card != nil {
				tc.card(&c)
			}
			ok, why := Match(r, c, seeNow(c), t0)
			assert.Equal(t, tc.want, ok)
			assert.Equal(t, tc.why, why)
		})
	}

	t.Run("form pinning every field", func(t *testing.T) {
		ok, why := Match(formRule(aep.Values{"env": "staging", "n": 2}), formCard(), seeNow(formCard()), t0)
		assert.True(t, ok, why)
	})
	t.Run("form leaving a field open", func(t *testing.T) {
		ok, why := Match(formRule(aep.Values{"env": "staging"}), formCard(), seeNow(formCard()), t0)
		assert.False(t, ok)
		assert.Equal(t, whyUnpinned, why)
		ok, _ = Match(formRule(aep.Values{"env": "", "n": 2}), formCard(), seeNow(formCard()), t0)
		assert.False(t, ok, "an empty value pins nothing")
	})
	t.Run("form with a relabelled field", func(t *testing.T) {
		c := formCard()
		c.Request.Fields = []aep.FieldSpec{{ID: "env", Type: aep.FieldString, Label: "Target"}, fields[1]}
		ok, why := Match(formRule(aep.Values{"env": "staging", "n": 2}), c, seeNow(c), t0)
		assert.False(t, ok)
		assert.Equal(t, whyFields, why)
	})
}

// seeNow reads c as a card with the default budget shows it.
func seeNow(c inbox.Card) Seen { return Seen{Question: QuestionOf(c.Request.Prompt, 0)} }

func TestName(t *testing.T) {
	m := store.RuleMatch{Kind: aep.KindPermission, Options: permOptions, PromptContains: "ls"}
	assert.Equal(t, "Allow once to permission requests containing “ls”", Name(m, aep.Answer{Option: "allow"}))
	f := store.RuleMatch{Kind: aep.KindForm, Fields: []aep.FieldSpec{{ID: "env", Type: aep.FieldString, Label: "Environment"}}}
	assert.Equal(t, "Environment: staging to form requests", Name(f, aep.Answer{Values: aep.Values{"env": "staging"}}))
}

func TestRuleOf(t *testing.T) {
	id, ok := RuleOf(By("01ABC"))
	assert.True(t, ok)
	assert.Equal(t, "01ABC", id)
	_, ok = RuleOf("alice")
	assert.False(t, ok)
	_, ok = RuleOf("rule:")
	assert.False(t, ok)
}
