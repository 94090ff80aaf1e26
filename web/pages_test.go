package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestThemeReachesThePage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.ask("s1", "r1", nameForm())
	cases := []struct{ query, theme, scheme string }{
		{"?theme=dark", "dark", "dark"},
		{"?theme=light", "light", "light"},
		{"", "", "light dark"},
		{"?theme=%22%3E%3Cscript%3E", "", "light dark"},
	}
	for _, path := range []string{"", "panel"} {
		for _, tc := range cases {
			d := h.getPage(nil, path+tc.query).doc(t)
			got, has := d.Find("html").Attr("data-theme")
			if tc.theme == "" {
				assert.False(t, has, "/%s%s: data-theme %q, want none (follow the system)", path, tc.query, got)
			} else {
				assert.Equal(t, tc.theme, got, "/%s%s: data-theme", path, tc.query)
			}
			assert.Equal(t, tc.scheme, attr(d.Find(`meta[name="color-scheme"]`), "content"), "/%s%s: color-scheme", path, tc.query)
		}
	}
}

func TestPanelIsTheInboxWithoutChrome(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.EmbedOrigins = []string{"https://mc.example", "https://console.example"} }))
	f := seedEveryKind(h)

	page := h.getPage(nil, "").doc(t)
	assert.Equal(t, 1, page.Find("header.top").Length(), "the page has its header")
	assert.Equal(t, 1, page.Find("a.skip").Length(), "the page has its skip link")

	r := h.getPage(nil, "panel")
	require.Equal(t, http.StatusOK, r.StatusCode)
	d := r.doc(t)
	body := d.Find("body")
	assert.Equal(t, "true", attr(body, "data-panel"))
	assert.Equal(t, "https://mc.example https://console.example", attr(body, "data-embed-origins"), "the origins the panel posts its count to")
	assert.Zero(t, d.Find("header.top, a.skip, .brand").Length(), "the panel has no page chrome")
	assert.Equal(t, 1, d.Find("#pending-count").Length(), "the panel shows the pending count")
	assert.Equal(t, 1, d.Find("#banners").Length(), "the panel shows the banners")
	assert.Equal(t, 1, d.Find("#"+domID(f.Form)+` form[data-testid="answer-form"]`).Length(), "the panel's cards can be answered")
	assert.Equal(t, page.Find(`article[data-testid="card"]`).Length(), d.Find(`article[data-testid="card"]`).Length(), "the same cards as the page")
}

func TestPageAndPanelAreScopedByQuery(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.ask("s1", "r1", nameForm())
	b := h.ask("s2", "r2", nameForm())
	h.emit(aep.Envelope{ID: "r3", Type: "attention.requested", Session: "s3", Agent: "reviewer", Source: "aep://test.example/agents/reviewer",
		Data: aep.Request{Kind: aep.KindPermission, Prompt: "Merge?", Options: []aep.Option{{ID: "y", Label: "Yes"}}}})
	cases := []struct {
		query string
		cards int
	}{
		{"", 3},
		{"?session=s1", 1},
		{"?agent=deployer", 2},
		{"?agent=reviewer", 1},
		{"?kind=permission", 1},
		{"?agent=deployer&session=s2", 1},
		{"?session=nobody", 0},
	}
	for _, path := range []string{"", "panel"} {
		for _, tc := range cases {
			d := h.getPage(nil, path+tc.query).doc(t)
			assert.Equal(t, tc.cards, d.Find(`article[data-testid="card"]`).Length(), "/%s%s: cards", path, tc.query)
			if tc.query != "" {
				assert.Equal(t, 1, d.Find(`[data-testid="filter"]`).Length(), "/%s%s names its filter", path, tc.query)
				push := attr(d.Find("body"), "data-push")
				assert.Contains(t, push, strings.TrimPrefix(strings.Split(tc.query, "&")[0], "?"), "/%s%s: the push stream is scoped the same way (%q)", path, tc.query, push)
			}
		}
	}
	d := h.getPage(nil, "?session=s1").doc(t)
	assert.Equal(t, 1, d.Find("#"+domID(a)).Length())
	assert.Zero(t, d.Find("#"+domID(b)).Length())
}

func TestPageTitleCarriesThePendingCount(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	assert.Equal(t, "aepforms", h.getPage(nil, "").doc(t).Find("title").Text())
	h.ask("s1", "r1", nameForm())
	h.ask("s1", "r2", nameForm())
	d := h.getPage(nil, "").doc(t)
	assert.Equal(t, "(2) aepforms", d.Find("title").Text())
	assert.Equal(t, "2", attr(d.Find("#pending-count"), "data-pending"))
	h.lifecycle("s1", "r1", "attention.timeout", nil)
	assert.Equal(t, "(1) aepforms", h.getPage(nil, "").doc(t).Find("title").Text())
}

func TestPageShowsTheRelayState(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	assert.Zero(t, h.getPage(nil, "").doc(t).Find(`[data-testid="relay-lost"]`).Length())
	h.in.FeedState(false, nil)
	d := h.getPage(nil, "").doc(t)
	assert.Equal(t, 1, d.Find(`[data-testid="relay-lost"]`).Length(), "the banner when the UI lost the relay")
	assert.Equal(t, "relay-lost", attr(d.Find("#connection"), "data-state"))
}

func TestCardRoute(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", nameForm())
	r := h.getPage(nil, "cards/"+string(id))
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
	d := r.doc(t)
	assert.Equal(t, domID(id), attr(d.Find("body > article"), "id"), "the fragment is the card alone")
	assert.Zero(t, d.Find("header.top, #inbox").Length(), "no page around it")

	r = h.getPage(nil, "cards/cnope")
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
}

func TestAgentTextNeverBecomesMarkup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	f := seedEveryKind(h)
	for _, path := range []string{"", "panel", "cards/" + string(f.Hostile)} {
		d := h.getPage(nil, path).doc(t)
		d.Find("script").Each(func(_ int, s *goquery.Selection) {
			assert.Regexp(t, `/static/(app|push)\.js\?`, attr(s, "src"), "/%s: a script that is not the UI's own", path)
		})
		assert.Zero(t, d.Find("i").Length(), "/%s: an agent's <i> became markup", path)
		assert.Contains(t, d.Find("#"+domID(f.Hostile)).Text(), "<script>alert('label')</script>", "/%s: the label is shown as text", path)
	}
}
