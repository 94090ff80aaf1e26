package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// hostileSelects is a form of n multi-selects with k choices each (450 ×
// 999 passes every per-field cap and needs 449 550 controls).
func hostileSelects(n, k int) aep.Request {
	req := aep.Request{Kind: aep.KindForm, Prompt: "Tick what applies"}
	for i := range n {
		f := aep.FieldSpec{ID: "f" + strconv.Itoa(i), Type: aep.FieldSelect, Label: "Field " + strconv.Itoa(i), Multi: true}
		for j := range k {
			f.Choices = append(f.Choices, aep.Choice{ID: "c" + strconv.Itoa(j), Label: "Choice " + strconv.Itoa(j)})
		}
		req.Fields = append(req.Fields, f)
	}
	return req
}

// An 8 MB prompt renders within its budget: the page stays small, the card
// stays answerable, and "Show all" fetches the whole text, escaped.
func TestHostileBudgetLargePrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	prompt := "<script>alert(1)</script>\n" + strings.Repeat("- old line\n+ new line\n", 8<<20/22)
	id := h.ask("s1", "big", aep.Request{Kind: aep.KindInput, Prompt: prompt})

	page := h.getPage(nil, "")
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Less(t, len(page.body), 64<<10, "the page stays small: got %d bytes", len(page.body))
	d := page.doc(t)
	card := d.Find("#card-" + string(id))
	require.Equal(t, 1, card.Length())
	assert.Equal(t, 1, card.Find("form").Length(), "a large prompt never makes a request unanswerable")
	assert.Contains(t, card.Find("[data-testid=prompt-cut]").Text(), "16 KiB")
	assert.Contains(t, card.Find("[data-testid=prompt-cut]").Text(), "8.0 MiB")
	shown := card.Find("[data-testid=prompt]").Text()
	assert.True(t, strings.HasPrefix(prompt, strings.TrimSpace(shown)[:20]))
	href, ok := card.Find("[data-testid=prompt-all]").Attr("href")
	require.True(t, ok)
	assert.Equal(t, "/cards/"+string(id)+"/prompt", href)

	full := h.do(nil, h.request(http.MethodGet, h.srv.URL+href, nil))
	require.Equal(t, http.StatusOK, full.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", full.Header.Get("Content-Type"))
	assert.NotContains(t, full.body, "<script>", "the prompt is escaped")
	assert.Equal(t, prompt, full.doc(t).Find("[data-testid=prompt-full]").Text())

	missing := h.do(nil, h.request(http.MethodGet, h.url("cards/cnope/prompt"), nil))
	assert.Equal(t, http.StatusNotFound, missing.StatusCode)
}

// A 450 × 999 request renders within its budget: read-only, with the
// reason and what to do, never as a form of 449 550 checkboxes; an answer
// posted to it anyway is refused.
func TestHostileBudgetTooManyControls(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "huge", hostileSelects(450, 999))

	page := h.getPage(nil, "")
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Less(t, len(page.body), 64<<10, "the page stays small: got %d bytes", len(page.body))
	card := page.doc(t).Find("#card-" + string(id))
	require.Equal(t, 1, card.Length())
	assert.Equal(t, 0, card.Find("form, input, select").Length(), "read-only: no control")
	assert.Equal(t, "over-budget", card.AttrOr("data-state", ""))
	assert.Equal(t, "Too many options to show safely: 449\u00a0550; answer it in the agent's own interface.",
		strings.TrimSpace(card.Find("[data-testid=state-text]").Text()))

	r := h.postForm(nil, "cards/"+string(id)+"/answer", url.Values{"token": {"t"}, "f0": {"0"}})
	assert.Equal(t, http.StatusConflict, r.StatusCode)
	assert.Contains(t, r.doc(t).Find("#card-"+string(id)+" [data-testid=error-summary]").Text(), "too many options")
	assert.Empty(t, h.sub.all(), "nothing was sent")
}

// Dropped requests are one status line on the page and a counter by agent
// in /metrics, naming at most 20 agents.
func TestBudgetDroppedCounts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withInbox(func(o *inbox.Options) { o.MaxPending = 1 }))
	ask := func(agent, id string) {
		h.emit(aep.Envelope{ID: id, Type: "attention.requested", Session: "s-" + agent, Agent: agent,
			Source: "aep://test.example/" + agent, Data: nameForm()})
	}
	for i := range 30 {
		ask("flood", "f"+strconv.Itoa(i))
	}
	for i := range 25 {
		ask(`agent "`+strconv.Itoa(i)+`"`, "r")
	}
	// Each newcomer finds the one slot held by an agent holding no more
	// than its own: the fair share refuses it (the flood's last stays).
	ask("quiet", "q")

	notices := h.getPage(nil, "").doc(t).Find("[data-testid=notice]")
	require.Equal(t, 1, notices.Length(), "one status line")
	assert.Contains(t, notices.Text(), "The inbox was full. flood: 29 questions dropped")

	m := h.scrape()
	assert.Equal(t, 29.0, m[`aepforms_dropped_requests_total{agent="flood"}`])
	named, total := 0, 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "aepforms_dropped_requests_total{") {
			named++
			total += v
		}
	}
	assert.Equal(t, 21, named, "20 agents by name and other")
	assert.Equal(t, 55.0, total, "every drop is counted once")
	assert.Equal(t, 7.0, m[`aepforms_dropped_requests_total{agent="other"}`], "six agents and quiet")
	assert.Equal(t, 1.0, m[`aepforms_dropped_requests_total{agent="agent \"0\""}`], "label values are escaped")
}
