package components

import (
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

func pageOpts() view.PageOptions {
	return view.PageOptions{
		BasePath: "/forms/",
		Assets:   sampleAssets(),
		Now:      sampleNow,

		Token:     func(id inbox.CardID) string { return "tok-" + string(id) },
		Reachable: func(string) inbox.Reach { return inbox.ReachConnected },
		Seq:       7,
	}
}

func samplePage(opts view.PageOptions) view.PageView {
	return view.Page(sampleCards(), inbox.Status{FeedConnected: true, Pending: 14}, opts)
}

func TestPageLayout(t *testing.T) {
	t.Parallel()
	doc := parse(t, Page(samplePage(pageOpts())))
	// The informational and the malformed request are shown, never
	// counted: nothing can be answered on them (inbox.Verdict.Pending).
	assert.Equal(t, "(12) aepforms", doc.Find("title").Text(), "the tab title carries the pending count")
	assert.Equal(t, "en", attr(t, doc.Find("html"), "lang"))
	header := doc.Find(`header[data-testid="header"]`)
	require.Equal(t, 1, header.Length())
	assert.Equal(t, "aepforms", header.Find(".brand").Text())
	pc := header.Find(`[data-testid="pending-count"]`)
	assert.Equal(t, "12 pending", pc.Text())
	assert.Equal(t, "12", attr(t, pc, "data-pending"))
	conn := header.Find(`[data-testid="connection"]`)
	assert.Equal(t, "not-live", attr(t, conn, "data-state"), "live only once the script connects")
	assert.Equal(t, 0, doc.Find(`[data-testid="filter"]`).Length(), "no filter in force")
	assert.Equal(t, 0, doc.Find(`[data-testid="relay-lost"]`).Length())
	assert.Equal(t, 0, doc.Find(`[data-testid="watch-only"]`).Length())

	groups := doc.Find(`#open [data-testid="group"]`)
	require.Greater(t, groups.Length(), 1)
	first := groups.First()
	assert.Equal(t, "claude-code · session s_payments", first.Find("h2").Text(), "the most urgent group first")
	assert.Equal(t, []string{"card-cperm", "card-cform"}, vals(first.Find(`[data-testid="card"]`), "id"), "soonest deadline first")
	for _, g := range groups.EachIter() {
		assert.Equal(t, g.AttrOr("id", ""), g.Find(`[data-testid="card"]`).First().AttrOr("data-group", ""), "cards sit in their group")
	}
	settled := doc.Find(`#settled [data-testid="card"]`)
	assert.Equal(t, 6, settled.Length())
	for _, c := range settled.EachIter() {
		assert.Equal(t, "true", c.AttrOr("data-settled", ""))
	}
	assert.Equal(t, 0, doc.Find(`#open [data-settled="true"]`).Length(), "settled cards below, never among the open")
	assert.True(t, has(doc.Find(`[data-testid="empty"]`), "hidden"), "the empty note is hidden while cards wait")
	assert.Equal(t, 1, doc.Find("template#group-template").Length())
}

func TestPageScriptAndData(t *testing.T) {
	t.Parallel()
	opts := pageOpts()
	opts.Filter = inbox.Query{Agent: "claude-code"}
	doc := parse(t, Page(samplePage(opts)))
	scripts := doc.Find("script")
	require.Equal(t, 2, scripts.Length(), "the page's script and Web Push's, no inline code")
	assert.Regexp(t, `^/forms/static/app\.js\?v=[0-9a-f]{12}$`, attr(t, scripts.First(), "src"))
	assert.Regexp(t, `^/forms/static/push\.js\?v=[0-9a-f]{12}$`, attr(t, scripts.Last(), "src"))
	scripts.Each(func(_ int, s *goquery.Selection) { assert.True(t, has(s, "defer")) })
	assert.Empty(t, strings.TrimSpace(scripts.Text()))
	assert.Equal(t, "/forms/manifest.webmanifest", attr(t, doc.Find(`link[rel="manifest"]`), "href"))
	assert.Equal(t, 0, doc.Find("style, [style]").Length(), "no inline style")
	body := doc.Find("body")
	push, err := url.Parse(attr(t, body, "data-push"))
	require.NoError(t, err)
	assert.Equal(t, "/forms/push", push.Path)
	assert.Equal(t, "claude-code", push.Query().Get("agent"), "push narrowed like the page")
	assert.Equal(t, "7", push.Query().Get("since"))
	assert.Equal(t, "2026-03-01T12:00:00Z", attr(t, body, "data-now"))
	assert.False(t, has(body, "data-embed-origins"), "only the panel talks to a parent")

	filter := doc.Find(`[data-testid="filter"]`)
	require.Equal(t, 1, filter.Length(), "the filter in force is named")
	assert.Equal(t, "agent claude-code", squash(filter.Find(`[data-testid="filter-term"]`).Text()))
	assert.Equal(t, "/forms/", attr(t, filter.Find(`[data-testid="clear-filter"]`), "href"))
}

func TestPageBasePathEverywhere(t *testing.T) {
	t.Parallel()
	for _, panel := range []bool{false, true} {
		opts := pageOpts()
		opts.Panel = panel
		opts.Filter = inbox.Query{Session: "s_1"}
		view := samplePage(opts)
		c := Page(view)
		if panel {
			c = Panel(view)
		}
		doc := parse(t, c)
		n := 0
		for _, s := range doc.Find("[href], [src], [action], [data-push]").EachIter() {
			for _, a := range []string{"href", "src", "action", "data-push"} {
				v, ok := s.Attr(a)
				if !ok {
					continue
				}
				n++
				if strings.HasPrefix(v, "#") {
					continue
				}
				assert.True(t, strings.HasPrefix(v, "/forms/"), "panel=%v: %s=%q ignores the base path", panel, a, v)
			}
		}
		assert.Greater(t, n, 10, "URLs were checked")
	}
}

func TestPageStates(t *testing.T) {
	t.Parallel()
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		doc := parse(t, Page(view.Page(nil, inbox.Status{FeedConnected: true}, pageOpts())))
		empty := doc.Find(`[data-testid="empty"]`)
		assert.False(t, has(empty, "hidden"))
		assert.Equal(t, "No questions waiting. New ones appear here as agents ask.", squash(empty.Text()))
		assert.True(t, has(doc.Find(`[data-testid="settled"]`), "hidden"))
		assert.Equal(t, "aepforms", doc.Find("title").Text())
		assert.Equal(t, "0 pending", doc.Find(`[data-testid="pending-count"]`).Text())
	})
	t.Run("empty, how to connect", func(t *testing.T) {
		t.Parallel()
		opts := pageOpts()
		opts.Connect = view.Connect{RelayURL: "http://127.0.0.1:8787", TokenFile: "/home/a/.config/aepforms/relay-token",
			Demo: "AEP_TOKEN=$(cat /home/a/.config/aepforms/relay-token) aepforms demo-agent --relay http://127.0.0.1:8787"}
		doc := parse(t, Page(view.Page(nil, inbox.Status{FeedConnected: true}, opts)))
		c := doc.Find(`[data-testid="empty"] [data-testid="connect"]`)
		require.Equal(t, 1, c.Length(), "the empty inbox says how to connect an agent")
		assert.Equal(t, "http://127.0.0.1:8787", c.Find(`[data-testid="relay-url"]`).Text())
		assert.Equal(t, "/home/a/.config/aepforms/relay-token", c.Find(`[data-testid="token-file"]`).Text())
		assert.Equal(t, opts.Connect.Demo, c.Find(`pre[data-testid="demo-command"] code`).Text(), "a command to copy")
		assert.Contains(t, squash(c.Text()), "An AEP adapter needs two things: the relay URL and the token. It sends its questions to http://127.0.0.1:8787/socket (or POSTs them to http://127.0.0.1:8787/events)")

		opts.Filter = inbox.Query{Agent: "claude-code"}
		doc = parse(t, Page(view.Page(nil, inbox.Status{FeedConnected: true}, opts)))
		assert.Equal(t, 0, doc.Find(`[data-testid="connect"]`).Length(), "a filter in force: agents are connected already")
		opts.Filter = inbox.Query{}
		doc = parse(t, Page(view.Page([]inbox.Card{sample(t, "canswered")}, inbox.Status{FeedConnected: true}, opts)))
		assert.Equal(t, 0, doc.Find(`[data-testid="connect"]`).Length(), "settled cards: agents are connected already")

		opts.Connect.TokenFile = ""
		doc = parse(t, Page(view.Page(nil, inbox.Status{FeedConnected: true}, opts)))
		assert.Contains(t, doc.Find(`[data-testid="connect"]`).Text(), "--token or AEP_TOKEN", "a token given by flag or env is not in a file")
	})
	t.Run("relay lost and watch-only", func(t *testing.T) {
		t.Parallel()
		opts := pageOpts()
		opts.Viewer = inbox.Viewer{WatchOnly: true}
		st := inbox.Status{FeedConnected: false, FeedError: "dial tcp: <refused>", Notices: []inbox.Notice{{Session: "s_1", Message: "events may be missing for session s_1"}}}
		doc := parse(t, Page(view.Page(sampleCards()[:2], st, opts)))
		lost := doc.Find(`[data-testid="relay-lost"]`)
		require.Equal(t, 1, lost.Length(), "a banner when the relay is lost")
		assert.Contains(t, lost.Text(), "Lost the connection to the relay")
		assert.Contains(t, lost.Text(), "dial tcp: <refused>", "the error as text")
		assert.Equal(t, "lost", attr(t, doc.Find("#banners"), "data-relay"))
		assert.Equal(t, "relay-lost", attr(t, doc.Find(`[data-testid="connection"]`), "data-state"))
		assert.Equal(t, "Relay unreachable", doc.Find(`[data-testid="connection"]`).Text())
		assert.True(t, strings.HasPrefix(squash(doc.Find(`[data-testid="notice"]`).Text()), "Events may be missing for session s_1: the relay no longer held them"),
			"the gap and what to do: %q", squash(doc.Find(`[data-testid="notice"]`).Text()))
		assert.Equal(t, 1, doc.Find(`[data-testid="watch-only"]`).Length())
		assert.Equal(t, 0, doc.Find("form").Length(), "watch-only: no form anywhere")
	})
	t.Run("connecting to the relay", func(t *testing.T) {
		t.Parallel()
		st := inbox.Status{FeedConnecting: true, FeedError: "feed: no headers yet"}
		doc := parse(t, Page(view.Page(nil, st, pageOpts())))
		assert.Equal(t, 0, doc.Find(`[data-testid="relay-lost"]`).Length(), "not lost: not there yet")
		assert.Equal(t, "connecting", attr(t, doc.Find("#banners"), "data-relay"))
		assert.Equal(t, "Connecting to the relay", attr(t, doc.Find("#banners"), "data-relay-text"), "the script's words")
		assert.Equal(t, "connecting", attr(t, doc.Find(`[data-testid="connection"]`), "data-state"))
		assert.Equal(t, "Connecting to the relay", doc.Find(`[data-testid="connection"]`).Text())
	})
	t.Run("refused post", func(t *testing.T) {
		t.Parallel()
		opts := pageOpts()
		opts.Refused = &view.Refused{Card: "cinput", Input: url.Values{"text": {""}}, Problems: []aep.Problem{{Code: "blank", Message: "Enter your answer"}}}
		doc := parse(t, Page(samplePage(opts)))
		assert.Equal(t, "cinput-errors", attr(t, doc.Find("body"), "data-focus"), "the script focuses the summary")
		assert.Equal(t, 1, doc.Find(`#cinput-errors[data-testid="error-summary"]`).Length())
		assert.Equal(t, 1, doc.Find(`[data-testid="error-summary"]`).Length(), "on the refused card only")
	})
	t.Run("refused post on a settled card", func(t *testing.T) {
		t.Parallel()
		opts := pageOpts()
		opts.Refused = &view.Refused{Card: "ctimeout", Problems: []aep.Problem{{Code: "settled", Message: "The agent stopped waiting for this answer (timed out). Nothing was sent."}}}
		doc := parse(t, Page(samplePage(opts)))
		assert.Equal(t, "ctimeout-errors", attr(t, doc.Find("body"), "data-focus"), "the script focuses the card's summary")
		sum := doc.Find(`#settled #card-ctimeout [data-testid="error-summary"]`)
		require.Equal(t, 1, sum.Length(), "the settled card itself says why nothing was sent")
		assert.Contains(t, sum.Text(), "Nothing was sent.")
	})
	t.Run("theme override", func(t *testing.T) {
		t.Parallel()
		opts := pageOpts()
		opts.Theme = "dark"
		doc := parse(t, Page(samplePage(opts)))
		assert.Equal(t, "dark", attr(t, doc.Find("html"), "data-theme"))
		assert.Equal(t, "dark", attr(t, doc.Find(`meta[name="color-scheme"]`), "content"))
		doc = parse(t, Page(samplePage(pageOpts())))
		assert.False(t, has(doc.Find("html"), "data-theme"), "the system decides by default")
	})
}

func TestPanel(t *testing.T) {
	t.Parallel()
	opts := pageOpts()
	opts.Panel = true
	opts.EmbedOrigins = []string{"https://mc.example"}
	doc := parse(t, Panel(samplePage(opts)))
	body := doc.Find("body")
	assert.True(t, body.HasClass("panel"))
	assert.Equal(t, "true", attr(t, body, "data-panel"))
	assert.Equal(t, "https://mc.example", attr(t, body, "data-embed-origins"), "postMessage target origins")
	assert.Equal(t, 0, doc.Find("header.top, .skip, .brand").Length(), "no page chrome")
	assert.Equal(t, "12 pending", doc.Find(`[data-testid="pending-count"]`).Text())
	assert.Equal(t, 14, doc.Find(`#open [data-testid="card"]`).Length())
	assert.Equal(t, "/forms/cards/cform/answer", attr(t, doc.Find(`#card-cform form`), "action"))
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		signedIn bool
		operator string
		panel    bool
		who      string // the text of the operator element; "-" = absent
	}{
		{"page, named", true, "Ann <ops>", false, "Signed in as Ann <ops>"},
		{"page, no name", true, "", false, "Signed in"},
		{"panel, named", true, "Ann <ops>", true, "Ann <ops>"},
		{"panel, no name", true, "", true, "-"},
		{"open UI", false, "", false, ""},
		{"open panel", false, "", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := pageOpts()
			opts.Panel, opts.SignedIn, opts.Operator = tc.panel, tc.signedIn, tc.operator
			view := samplePage(opts)
			c := Page(view)
			if tc.panel {
				c = Panel(view)
			}
			doc := parse(t, c)
			acct := doc.Find(`[data-testid="header"] form[data-testid="account"]`)
			if !tc.signedIn {
				assert.Equal(t, 0, acct.Length(), "no sign-out when nobody signed in")
				return
			}
			require.Equal(t, 1, acct.Length(), "a sign-out in the header")
			assert.Equal(t, "post", attr(t, acct, "method"), "signing out changes state: a POST")
			assert.Equal(t, "/forms/signout", attr(t, acct, "action"))
			btn := acct.Find(`button[data-testid="signout"]`)
			assert.Equal(t, "submit", attr(t, btn, "type"))
			assert.Equal(t, "Sign out", btn.Text())
			others := acct.Find(`button[data-testid="signout-others"]`)
			if tc.panel {
				assert.Equal(t, 0, others.Length(), "the panel keeps to one line: no sign-out of other sessions")
			} else {
				require.Equal(t, 1, others.Length(), "a sign-out of the other sessions beside sign-out")
				assert.Equal(t, "submit", attr(t, others, "type"))
				assert.Equal(t, "/forms/signout/others", attr(t, others, "formaction"), "posted by the same form")
				assert.Equal(t, "Sign out my other sessions", others.Text())
			}
			who := acct.Find(`[data-testid="operator"]`)
			if tc.who == "-" {
				assert.Equal(t, 0, who.Length())
				return
			}
			assert.Equal(t, tc.who, squash(who.Text()), "the name as text, escaped")
			assert.Equal(t, 0, who.Find("ops").Length(), "agent-free, but still never markup")
		})
	}
}

func TestTabIcon(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]templ.Component{
		"page":    Page(samplePage(pageOpts())),
		"sign-in": SignIn(view.SignIn("/forms/", sampleAssets(), "", "")),
	} {
		doc := parse(t, c)
		icon := doc.Find(`head link[rel="icon"]`)
		require.Equal(t, 1, icon.Length(), "%s links an icon, so the browser asks for no /favicon.ico", name)
		assert.Regexp(t, `^/forms/static/icon\.svg\?v=[0-9a-f]{12}$`, attr(t, icon, "href"), name)
		assert.Equal(t, "image/svg+xml", attr(t, icon, "type"), name)
	}
}

func TestStatusFragment(t *testing.T) {
	t.Parallel()
	doc := parse(t, StatusFragment(view.Page(nil, inbox.Status{FeedConnected: true}, pageOpts())))
	b := doc.Find("#banners")
	require.Equal(t, 1, b.Length())
	assert.Equal(t, "up", attr(t, b, "data-relay"))
	assert.Equal(t, 0, b.Children().Length())
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	doc := parse(t, SignIn(view.SignIn("/forms/", sampleAssets(), "That is not the operator secret.", "<ann>")))
	form := doc.Find(`form[data-testid="signin-form"]`)
	assert.Equal(t, "/forms/signin", attr(t, form, "action"))
	assert.Equal(t, "post", attr(t, form, "method"))
	secret := form.Find(`input[name="token"]`)
	assert.Equal(t, "password", attr(t, secret, "type"))
	assert.Equal(t, "true", attr(t, secret, "aria-invalid"))
	assert.Equal(t, "<ann>", attr(t, form.Find(`input[name="name"]`), "value"))
	assert.Equal(t, "signin-errors", attr(t, doc.Find("body"), "data-focus"))
	assert.Equal(t, "#signin-secret", attr(t, doc.Find(`[data-testid="error-link"]`), "href"))
	assertDescribedBy(t, doc)
}

func TestGoldenPages(t *testing.T) {
	t.Parallel()
	opts := pageOpts()
	opts.Refused = &view.Refused{Card: "cform", Input: url.Values{"f2": {"9000"}, "f5": {"other"}}, Problems: []aep.Problem{
		{Field: "ticket", Code: "required", Message: "Enter the change ticket"},
		{Field: "budget", Code: "out-of-range", Message: "Enter a number between 0.5 and 2500"},
		{Field: "db", Code: "other-blank", Message: "Enter your other answer for Database"},
	}}
	opts.SignedIn, opts.Operator = true, "ann"
	golden(t, "page.golden.html", renderHTML(t, Page(samplePage(opts))))

	panel := pageOpts()
	panel.Panel, panel.Theme, panel.EmbedOrigins = true, "light", []string{"https://mc.example"}
	golden(t, "panel.golden.html", renderHTML(t, Panel(view.Page(sampleCards()[:4], inbox.Status{FeedConnected: false}, panel))))

	golden(t, "signin.golden.html", renderHTML(t, SignIn(view.SignIn("/forms/", sampleAssets(), "", ""))))
}

// Every data-testid the tests select exists in the sample page at least once.
func TestTestIDs(t *testing.T) {
	t.Parallel()
	opts := pageOpts()
	opts.Refused = &view.Refused{Card: "cform", Problems: []aep.Problem{{Field: "ticket", Code: "required", Message: "Enter the change ticket"}}}
	opts.SignedIn, opts.Operator = true, "ann"
	doc := parse(t, Page(samplePage(opts)))
	for _, id := range []string{"header", "pending-count", "connection", "banners", "inbox", "empty", "group", "card", "provenance",
		"countdown", "prompt", "state", "state-text", "values", "answer-form", "field", "field-error", "error-summary",
		"error-link", "submit", "option", "options", "placeholder-note", "settled", "details", "hide", "new-notice",
		"account", "operator", "signout"} {
		assert.Positive(t, doc.Find(`[data-testid="`+id+`"]`).Length(), "data-testid=%q", id)
	}
}
