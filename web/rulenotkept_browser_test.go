package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// With the script on, an answer sent whose rule lost the race for the
// last place under --rule-max takes the operator to the Rules page, which
// says their answer was sent and why its rule was not kept (the script
// follows HeaderGo after putting the card in place).
func TestRuleNotKeptTakesTheScriptToTheRulesPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	t.Parallel()
	st := &racedStore{}
	rh := newRulesHarnessWrapped(t, rules.Config{MaxRules: 2}, func(r Rules) Rules {
		st.Store = r.Store()
		return racedRules{Rules: r, st: st}
	})
	require.NoError(t, rh.j.CreateRule(context.Background(), store.Rule{ID: "R1", Name: "Allow once", Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
		Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", "other-agent"), Answer: aep.Answer{Option: "allow"}}, 0))
	id := rh.ask("s1", "r1", permissionReq())
	ctx := browse(t, rh.harness, "")
	card := `document.getElementById('` + domID(id) + `')`
	eval[bool](t, ctx, `(function () {
		var c = `+card+`;
		c.querySelector('[data-testid="rule-maker"]').open = true;
		c.querySelector('[data-testid="rule-make"]').checked = true;
		c.querySelector('[data-testid="option"]').click();
		return true;
	})()`)
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(wctx, chromedp.WaitVisible(`[data-testid="rules"] [data-testid="error-summary"]`)), "taken to the Rules page")
	assert.Equal(t, rh.url("rules?refused=max"), eval[string](t, ctx, `location.href`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('[data-testid="error-summary"]').textContent`),
		"Your answer was sent, but its rule was not kept", "the Rules page says the answer was sent and the rule not kept")
	require.Len(t, rh.sub.all(), 1, "the answer is sent")
}
