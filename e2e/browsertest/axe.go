package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// MinAxePasses is how many axe-core rules a page must pass more than for
// Axe to believe it audited a page at all; even a bare valid document
// with a heading and a form passes more.
const MinAxePasses = 10

// Violation is one failed axe-core rule with the elements it failed on.
type Violation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// String is the rule, its impact and help, and each element it failed on
// (its selector, up to 200 bytes of its HTML, and why).
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n", v.ID, v.Impact, v.Help)
	for _, n := range v.Nodes {
		fmt.Fprintf(&b, "    at %v: %.200s\n      %s\n", n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", "\n      "))
	}
	return b.String()
}

// Violations are an audit's failed rules.
type Violations []Violation

// String is each violation's String, one after another.
func (vs Violations) String() string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.String())
	}
	return b.String()
}

// Axe injects axe-core (found by AxeJS) into the tab's current page, runs
// it on the whole document and returns the violations (none: nil). It
// fails tb when axe cannot run or passes no more than MinAxePasses rules.
func Axe(tb testing.TB, ctx context.Context) Violations {
	tb.Helper()
	js, err := os.ReadFile(AxeJS(tb))
	require.NoError(tb, err)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](string(js)))
	require.NoError(tb, err, "injecting axe-core")
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](
		`axe.run(document).then(r => ({violations: r.violations, passes: r.passes.length}))`, chromedp.EvalAwaitPromise))
	require.NoError(tb, err, "axe.run")
	var res struct {
		Violations Violations `json:"violations"`
		Passes     int        `json:"passes"`
	}
	require.NoError(tb, json.Unmarshal(raw, &res))
	require.Greater(tb, res.Passes, MinAxePasses, "axe-core checked next to nothing: is the page there?")
	if len(res.Violations) == 0 {
		return nil
	}
	return res.Violations
}
