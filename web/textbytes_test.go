package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// "Show all" (GET /cards/{id}/prompt) returned the prompt's NUL, BEL and
// ESC bytes raw. Like every other response, it shows each as U+FFFD.
func TestShowAllReplacesControlBytes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.PromptBytes = 16 }))
	prompt := "ring\x07 nul\x00 esc\x1b[31m red " + strings.Repeat("long enough to be cut ", 4)
	id := h.ask("s1", "ctl", aep.Request{Kind: aep.KindInput, Prompt: prompt})

	full := h.do(nil, h.request(http.MethodGet, h.url("cards/"+string(id)+"/prompt"), nil))
	require.Equal(t, http.StatusOK, full.StatusCode)
	for _, b := range []string{"\x00", "\x07", "\x1b"} {
		assert.NotContains(t, full.body, b, "no raw control byte %q in Show all", b)
	}
	assert.Contains(t, full.doc(t).Find("[data-testid=prompt-full]").Text(), "ring\uFFFD nul\uFFFD esc\uFFFD[31m red")

	page := h.getPage(nil, "")
	assert.NotContains(t, page.body, "\x07", "nor in the page")
}

// A spreadsheet reads a formula after leading whitespace of any kind, an
// invisible format character, or a full-width sign; such cells are
// escaped as formulas are, and control bytes become U+FFFD.
func TestCSVCellEscapesEveryFormulaStart(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"\n=1+1":       "'\n=1+1",
		" =1+1":        "' =1+1",
		"\u00a0=1+1":   "'\u00a0=1+1",
		"\u200b=1+1":   "'\u200b=1+1",
		"\ufeff=1+1":   "'\ufeff=1+1",
		"\u3000=1+1":   "'\u3000=1+1",
		"＝1+1":         "'＝1+1",
		"＋1":           "'＋1",
		"－1":           "'－1",
		"＠SUM(A1)":     "'＠SUM(A1)",
		"\r=1":         "'\n=1",
		"a\x00b\x1bc":  "a\uFFFDb\uFFFDc",
		"plain answer": "plain answer",
		"":             "",
	} {
		assert.Equal(t, want, csvCell(in), "csvCell(%q)", in)
	}
}
