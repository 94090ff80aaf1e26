package web

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Rules page with no rules tells a newcomer where rules come from; a
// form card offers "Answer like this from now on…" as a permission card
// does, so the empty page must not send them to permission, review and
// choice cards only.
func TestRulesEmptyNamesFormCards(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t, withToken(secret))
	c := rh.client()
	rh.signIn(c, "alice")
	id := rh.ask("s1", "r1", envForm())
	maker := rh.getPage(c, "").doc(t).Find("#" + domID(id) + ` [data-testid="rule-maker"]`)
	require.Equal(t, 1, maker.Length(), "a form card offers a rule")

	empty := rh.getPage(c, "rules").doc(t).Find(`[data-testid="rules-empty"]`)
	require.Equal(t, 1, empty.Length())
	text := empty.Text()
	for _, kind := range []string{"permission", "review", "choice", "form"} {
		assert.True(t, strings.Contains(text, kind), "the empty Rules page names %s cards: %q", kind, text)
	}
}
