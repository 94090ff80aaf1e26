package web

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// askMany asks n forms, the i-th due in i+1 minutes (so the i-th is the
// i-th most urgent), from agents a0..a(agents-1), each agent in its own
// session; it returns the card ids, most urgent first.
func askMany(h *harness, n, agents int) []inbox.CardID {
	h.t.Helper()
	ids := make([]inbox.CardID, n)
	for i := range n {
		agent := fmt.Sprintf("a%d", i%agents)
		session := "s-" + agent
		req := nameForm()
		req.Prompt = fmt.Sprintf("Question %03d: what should the service be called?\nA second line that a row does not show.", i)
		req.ExpiresAt = h.clk.Now().Add(time.Duration(i+1) * time.Minute).UTC().Format(time.RFC3339)
		id := fmt.Sprintf("r%03d", i)
		h.emit(aep.Envelope{ID: id, Type: "attention.requested", Session: session, Agent: agent, Run: "run_1", Data: req})
		ids[i] = cardID(session, id)
	}
	return ids
}

// cardsAndRows are the ids of the full cards and of the rows on a page,
// in page order.
func cardsAndRows(d *goquery.Document) (cards, rows []string) {
	d.Find(`#open article[data-testid="card"]`).Each(func(_ int, s *goquery.Selection) { cards = append(cards, attr(s, "data-card")) })
	d.Find(`#open [data-testid="row"]`).Each(func(_ int, s *goquery.Selection) { rows = append(rows, attr(s, "data-card")) })
	return cards, rows
}

// With 200 waiting requests the page renders the 50 most urgent in full
// and the other 150 as one-line rows (first line of the question, kind,
// age, deadline), grouped by agent and session; every row links to its
// card's own page and names its fragment; the count is of every request.
func TestPageOfManyShowsTheMostUrgentInFullAndTheRestAsRows(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askMany(h, 200, 4)

	d := h.getPage(nil, "").doc(t)
	cards, rows := cardsAndRows(d)
	require.Len(t, cards, 50, "cards in full")
	require.Len(t, rows, 150, "rows")
	urgent := map[string]bool{}
	for _, id := range ids[:50] {
		urgent[string(id)] = true
	}
	for _, c := range cards {
		assert.True(t, urgent[c], "card %s in full is not one of the 50 most urgent", c)
	}
	for _, r := range rows {
		assert.False(t, urgent[r], "row %s is one of the 50 most urgent", r)
	}
	assert.Equal(t, "200", attr(d.Find("#pending-count"), "data-pending"), "the count is of every waiting request")
	assert.Equal(t, "50", attr(d.Find("#inbox"), "data-page-cards"))
	assert.Equal(t, "0", attr(d.Find("#inbox"), "data-off-page"), "every request is on this page")
	assert.Equal(t, 4, d.Find(`#open [data-testid="group"]`).Length(), "one group per agent and session")

	// In each group, its cards come before its rows, each in urgency order.
	d.Find(`#open [data-testid="group"]`).Each(func(_ int, g *goquery.Selection) {
		var keys []string
		seenRow := false
		g.Find(`.group__cards > *`).Each(func(_ int, s *goquery.Selection) {
			isRow := attr(s, "data-row") == "true"
			assert.False(t, seenRow && !isRow, "a card after a row in %s", attr(g, "id"))
			seenRow = seenRow || isRow
			keys = append(keys, attr(s, "data-sort"))
		})
		assert.IsNonDecreasing(t, keys, "urgency order in %s", attr(g, "id"))
	})

	row := d.Find("#" + domID(ids[199]))
	require.Equal(t, 1, row.Length())
	assert.Equal(t, "row", attr(row, "data-testid"))
	link := row.Find(`[data-testid="row-link"]`)
	assert.Equal(t, "Question 199: what should the service be called?", strings.TrimSpace(link.Text()), "the question's first line")
	assert.Equal(t, "/cards/"+string(ids[199])+"/page", attr(link, "href"), "without the script: the card's own page")
	assert.Equal(t, "/cards/"+string(ids[199]), attr(link, "data-fragment"), "with it: the card's fragment")
	assert.Equal(t, 1, row.Find(`[data-testid="row-deadline"] time[data-deadline]`).Length(), "the row shows its deadline")
	assert.Contains(t, row.Find(".row__meta").Text(), "Form")

	// The row's page is the card, answerable without the script.
	cardPage := h.getPage(nil, h.relative(attr(link, "href")))
	require.Equal(t, http.StatusOK, cardPage.StatusCode)
	action, token := answerForm(t, cardPage.doc(t), ids[199])
	assert.Equal(t, "/cards/"+string(ids[199])+"/answer", action)
	assert.NotEmpty(t, token)
	// Its fragment is the card alone, as the push stream sends it.
	frag := h.getPage(nil, h.relative(attr(link, "data-fragment")))
	require.Equal(t, http.StatusOK, frag.StatusCode)
	assert.True(t, strings.HasPrefix(frag.body, `<article id="`+domID(ids[199])+`"`), "the fragment is one card")
	// And its row, which the script fetches to turn a card into a row.
	rowFrag := h.getPage(nil, "cards/"+string(ids[0])+"/row")
	require.Equal(t, http.StatusOK, rowFrag.StatusCode)
	assert.True(t, strings.HasPrefix(rowFrag.body, `<div id="`+domID(ids[0])+`" class="row"`), "the row fragment: %.80s", rowFrag.body)
}

// A page of rows is bounded: past Config.PageRows the next page continues
// after the last request shown (a keyset cursor), so requests arriving
// meanwhile never shift what the next page holds; a later page is rows
// only, with a way back to the most urgent.
func TestPagesOfRowsAreStableWhileRequestsArrive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 10; c.PageRows = 40 }))
	ids := askMany(h, 120, 3)

	first := h.getPage(nil, "").doc(t)
	cards, rows := cardsAndRows(first)
	require.Len(t, cards, 10)
	require.Len(t, rows, 40)
	next := first.Find(`[data-testid="pager"] [data-testid="next-page"]`)
	require.Equal(t, 1, next.Length(), "a link to the next page")
	assert.Equal(t, "Showing 50 of 120 pending: the 10 most urgent in full, the rest as rows.", first.Find(`[data-testid="pager-text"]`).Text())
	assert.Equal(t, attr(first.Find(`#`+domID(ids[49])), "data-sort"), attr(first.Find("#inbox"), "data-page-until"), "the page ends at its last request")
	assert.Equal(t, "70", attr(first.Find("#inbox"), "data-off-page"), "open requests on other pages")

	// A request more urgent than all, and one due last, arrive.
	req := nameForm()
	req.ExpiresAt = h.clk.Now().Add(30 * time.Second).UTC().Format(time.RFC3339)
	h.ask("s-new", "urgent", req)
	req.ExpiresAt = h.clk.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	h.ask("s-new", "late", req)

	second := h.getPage(nil, h.relative(attr(next, "href"))).doc(t)
	cards, rows = cardsAndRows(second)
	assert.Empty(t, cards, "a later page is rows only")
	want := make([]string, 0, 40)
	for _, id := range ids[50:90] {
		want = append(want, string(id))
	}
	assert.ElementsMatch(t, want, rows, "the second page continues after the first, whatever arrived")
	assert.Equal(t, 1, second.Find(`[data-testid="pager"] [data-testid="first-page"]`).Length(), "a way back to the most urgent")
	assert.Equal(t, "0", attr(second.Find("#inbox"), "data-page-cards"), "a later page keeps rows as rows")

	third := h.getPage(nil, h.relative(attr(second.Find(`[data-testid="pager"] [data-testid="next-page"]`), "href"))).doc(t)
	_, rows = cardsAndRows(third)
	require.Len(t, rows, 31, "the last 30 and the late one")
	assert.Equal(t, string(cardID("s-new", "late")), rows[len(rows)-1])
	assert.Zero(t, third.Find(`[data-testid="next-page"]`).Length(), "the last page has no next")
}

// The counts by agent and kind, and each group's, link to the filtered
// views, which show only those requests.
func TestPageOfManyCountsLinkToFilters(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	askMany(h, 90, 3) // a0, a1, a2: 30 each
	h.ask("s-x", "perm", aep.Request{Kind: aep.KindPermission, Prompt: "May I?", Options: []aep.Option{{ID: "y", Label: "Yes"}}})

	d := h.getPage(nil, "").doc(t)
	agents := d.Find(`[data-testid="facet-agent"] [data-testid="facet-term"]`)
	require.Equal(t, 4, agents.Length(), "a0, a1, a2 and deployer")
	a1 := d.Find(`[data-testid="facet-agent"] [data-testid="facet-term"][data-value="a1"]`)
	assert.Equal(t, "30", a1.Find(".facet__count").Text())
	assert.Equal(t, "/?agent=a1", attr(a1, "href"))
	kind := d.Find(`[data-testid="facet-kind"] [data-testid="facet-term"][data-value="permission"]`)
	assert.Equal(t, "1", kind.Find(".facet__count").Text())

	filtered := h.getPage(nil, h.relative(attr(a1, "href"))).doc(t)
	cards, rows := cardsAndRows(filtered)
	assert.Len(t, cards, 30, "30 requests fit in full")
	assert.Empty(t, rows)
	filtered.Find(`#open article[data-testid="card"]`).Each(func(_ int, s *goquery.Selection) {
		assert.Equal(t, "a1", s.Find(`[data-testid="prov-agent"] [data-testid="agent-name"]`).Text())
	})

	group := d.Find(`#open [data-testid="group"] [data-testid="group-count"]`).First()
	assert.Equal(t, "30 waiting", group.Text())
	u, err := url.Parse(attr(group, "href"))
	require.NoError(t, err)
	assert.NotEmpty(t, u.Query().Get("session"), "a group's count filters by its session")
}

// Pages, fragments and assets are gzip-compressed for a browser that
// accepts it; the push stream is not (each event must arrive when sent).
func TestResponsesAreCompressed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := askMany(h, 60, 2)
	for _, path := range []string{"", "panel", "cards/" + string(ids[0]), "cards/" + string(ids[0]) + "/page", "cards/" + string(ids[59]) + "/row", "static/app.js", "static/app.css"} {
		r := h.getPage(nil, path, "Accept-Encoding", "gzip")
		require.Equal(t, http.StatusOK, r.StatusCode, path)
		require.Equal(t, "gzip", r.Header.Get("Content-Encoding"), "/%s", path)
		zr, err := gzip.NewReader(strings.NewReader(r.body))
		require.NoError(t, err, path)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err, path)
		assert.Greater(t, len(plain), len(r.body), "/%s: compressed", path)
		assert.Contains(t, r.Header.Values("Vary"), "Accept-Encoding", path)
	}
	plain := h.getPage(nil, "")
	assert.Empty(t, plain.Header.Get("Content-Encoding"), "not compressed when not asked")

	req := h.request(http.MethodGet, h.url("push?since=0"), nil, "Accept", "text/event-stream", "Accept-Encoding", "gzip")
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Content-Encoding"), "the push stream is never compressed")
}

// The inbox shows the latest 20 settled questions, newest first, and
// says the older ones are in History.
func TestInboxShowsTheLatestSettledAndPointsToHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var settled []inbox.CardID
	for i := range 25 {
		id := fmt.Sprintf("done%02d", i)
		settled = append(settled, h.ask("s1", id, nameForm()))
		h.lifecycle("s1", id, "attention.timeout", aep.Timeout{AfterMS: aep.Int64(1000)})
	}
	d := h.getPage(nil, "").doc(t)
	shown := d.Find(`#settled-list article[data-testid="card"]`)
	require.Equal(t, 20, shown.Length())
	assert.Equal(t, string(settled[24]), attr(shown.First(), "data-card"), "newest first")
	more := d.Find(`[data-testid="settled-more"] a`)
	require.Equal(t, 1, more.Length())
	assert.Equal(t, "/history", attr(more, "href"))

	few := newHarness(t)
	few.ask("s1", "one", nameForm())
	few.lifecycle("s1", "one", "attention.timeout", aep.Timeout{AfterMS: aep.Int64(1000)})
	assert.Zero(t, few.getPage(nil, "").doc(t).Find(`[data-testid="settled-more"]`).Length(), "nothing more to point to")
}

// A page with pages after it takes from the push stream only what it can
// show or count: a new request of a later page (counted), and updates of
// the requests on it, not updates of waiting requests on other pages (a
// roster change republishing thousands of cards reaches it as its own).
func TestPushLeavesOutUpdatesOfOtherPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 5; c.PageRows = 10 }))
	ids := askMany(h, 40, 2)
	d := h.getPage(nil, "").doc(t)
	push, err := url.Parse(attr(d.Find("body"), "data-push"))
	require.NoError(t, err)
	assert.Equal(t, attr(d.Find("#inbox"), "data-page-until"), push.Query().Get("until"), "the push stream knows where the page ends")

	ps := h.openPush("?" + push.RawQuery)
	require.Equal(t, "status", ps.next().Event)
	h.lifecycle("s-a1", "r039", "attention.routed", aep.Routed{To: "someone"}) // another page's: left out
	req := nameForm()
	req.ExpiresAt = h.clk.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	late := h.ask("s-a0", "late", req)                                         // new on another page: sent, to be counted
	h.lifecycle("s-a0", "r000", "attention.routed", aep.Routed{To: "someone"}) // on the page: sent
	assert.Equal(t, domID(late), attr(cardMsg(t, ps.nextBut("batches")), "id"))
	assert.Equal(t, domID(ids[0]), attr(cardMsg(t, ps.nextBut("batches")), "id"))
	h.lifecycle("s-a1", "r039", "attention.timeout", aep.Timeout{AfterMS: aep.Int64(1000)}) // settles there: sent
	assert.Equal(t, domID(ids[39]), attr(cardMsg(t, ps.nextBut("batches")), "id"))
}
