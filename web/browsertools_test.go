package web

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// The markup checks (TestAccessibilityAudit, TestKeyboardReachesEveryControlWithVisibleFocus,
// TestMarkupIsValidHTML) run Chromium, axe-core and the Nu Html Checker
// through e2e/browsertest, which finds them (or skips, or under CI=true
// fails). What is here is which pages they look at.

// markupPage is one page the markup checks look at: a GET, or the page a
// refused form post answers with.
type markupPage struct {
	name string
	path string     // relative to the base
	post url.Values // non-nil: POST this form to path (the refused post's page)
	h    *harness
	c    *http.Client
}

// markupPages are the pages and panels with a card of every kind and
// state, light and dark, a refused post with its error summary, and the
// sign-in page plain and refused.
func markupPages(t *testing.T) []markupPage {
	t.Helper()
	h := newHarness(t, withConfig(func(c *Config) { c.EmbedOrigins = []string{"https://mc.example"} }))
	f := seedEveryKind(h)
	signin := newHarness(t, withToken(secret))
	refusedForm := url.Values{"token": {"fresh"}, "f0": {""}, "f2": {"5000"}, "f5": {"other"}, "f5-other": {""}, "f7": {"other"}}
	require.NotEmpty(t, f.Form)
	hist := newHarness(t, withHistory(seedHistory(t)))
	batch := newHarness(t)
	askPermissions(batch, 3)
	otherShape := batch.ask("s2", "form-a", nameForm())
	batch.ask("s2", "form-b", nameForm())
	shape := inbox.ShapeOf(deployPermission("")).ID()
	return append(ruleMarkupPages(t), []markupPage{
		{name: "page", path: "", h: h},
		{name: "page dark", path: "?theme=dark", h: h},
		{name: "panel", path: "panel", h: h},
		{name: "panel dark", path: "panel?theme=dark&agent=deployer", h: h},
		{name: "refused post", path: "cards/" + string(f.Form) + "/answer", post: refusedForm, h: h},
		{name: "refused post on a settled card", path: "cards/" + string(f.Answered) + "/answer", post: url.Values{"token": {"x"}}, h: h},
		{name: "page with batches", path: "", h: batch},
		{name: "batches", path: "batches", h: batch},
		{name: "batches dark", path: "batches?theme=dark", h: batch},
		{name: "batches filtered", path: "batches?session=s2", h: batch},
		{name: "page with batches, filtered", path: "?session=s1", h: batch},
		{name: "batch none sent", path: "batch/answer", post: url.Values{"shape": {shape}, "token": {"t"}, "option": {"0"},
			"card": {string(otherShape), "gone-card"}}, h: batch},
		{name: "batch refused", path: "batch/answer", post: url.Values{"shape": {shape}, "token": {"t"}, "option": {"0"}}, h: batch},
		{name: "history", path: "history", h: hist},
		{name: "history dark, filtered", path: "history?theme=dark&agent=deployer&since=2026-03-01T11:00", h: hist},
		{name: "sign-in", path: "signin", h: signin},
		{name: "sign-in refused", path: "signin", post: url.Values{"token": {"wrong"}, "name": {"mallory"}}, h: signin},
	}...)
}
