package view

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

func pageCard(id, agent, session string, expiresIn time.Duration) inbox.Card {
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: id})
	c.ID = inbox.CardID(id)
	c.Agent, c.Key.Session = agent, session
	if expiresIn != 0 {
		c.ExpiresAt = viewNow.Add(expiresIn)
	}
	return c
}

func TestPageGroupsAndOrder(t *testing.T) {
	t.Parallel()
	settled := pageCard("s1", "a", "x", 0)
	settled.State = inbox.StateExpired
	cards := []inbox.Card{
		pageCard("a1", "a", "x", 0),
		pageCard("b1", "b", "y", 10*time.Minute),
		pageCard("a2", "a", "x", time.Minute),
		settled,
		pageCard("c1", "c", "z", 0),
	}
	p := Page(cards, inbox.Status{FeedConnected: true}, PageOptions{Now: viewNow})
	require.Len(t, p.Groups, 3)
	assert.Equal(t, "a · session x", p.Groups[0].Label, "the group with the soonest deadline first")
	assert.Equal(t, []string{"a2", "a1"}, ids(p.Groups[0].Cards), "within a group: deadline first")
	assert.Equal(t, "b · session y", p.Groups[1].Label)
	assert.Equal(t, "c · session z", p.Groups[2].Label)
	assert.Equal(t, []string{"s1"}, ids(p.Settled))
	assert.Equal(t, 4, p.Pending)
	assert.Equal(t, "(4) aepforms", p.Title)
}

func ids(cs []CardView) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestPageEmptyAndTitle(t *testing.T) {
	t.Parallel()
	p := Page(nil, inbox.Status{}, PageOptions{Now: viewNow, Viewer: inbox.Viewer{WatchOnly: true}})
	assert.Empty(t, p.Groups)
	assert.Empty(t, p.Settled)
	assert.Equal(t, "aepforms", p.Title)
	assert.False(t, p.Relay.Connected)
	assert.True(t, p.WatchOnly, "a watch-only viewer: the page says so")
	assert.False(t, Page(nil, inbox.Status{}, PageOptions{Now: viewNow}).WatchOnly, "the zero Viewer answers")
}

func TestPageURLsAndFilter(t *testing.T) {
	t.Parallel()
	p := Page(nil, inbox.Status{FeedConnected: true}, PageOptions{
		BasePath: "/forms/", Now: viewNow, Seq: 42,
		Assets: Assets{CSS: "/forms/static/app.css?v=1", JS: "/forms/static/app.js?v=1", Icon: "/forms/static/icon.svg?v=1"},
		Filter: inbox.Query{Agent: "claude code", Session: "s&1"},
		Theme:  "dark", Panel: true, EmbedOrigins: []string{"https://mc.example", "https://b.example"},
	})
	assert.Equal(t, "/forms/", p.HomeURL)
	assert.Equal(t, "/forms/static/app.css?v=1", p.CSSURL, "asset URLs come from the caller")
	assert.Equal(t, "/forms/static/app.js?v=1", p.JSURL)
	u, err := url.Parse(p.PushURL)
	require.NoError(t, err)
	assert.Equal(t, "/forms/push", u.Path)
	assert.Equal(t, url.Values{"agent": {"claude code"}, "session": {"s&1"}, "since": {"42"}}, u.Query())
	assert.Equal(t, []FilterTerm{{"agent", "claude code", "claude code"}, {"session", "s&1", "s&1"}}, p.Filter)
	assert.Equal(t, "/forms/panel", p.ClearURL, "the panel clears to the panel")
	assert.Equal(t, "dark", p.Theme)
	assert.Equal(t, "https://mc.example https://b.example", p.EmbedOrigins)
	assert.Equal(t, "2026-03-01T12:00:00Z", p.NowISO)

	assert.Empty(t, Page(nil, inbox.Status{}, PageOptions{Theme: "<x>"}).Theme, "only light or dark override the system")
}

func TestPageRefusedPost(t *testing.T) {
	t.Parallel()
	a := pageCard("a1", "a", "x", 0)
	b := pageCard("b1", "a", "x", 0)
	p := Page([]inbox.Card{a, b}, inbox.Status{FeedConnected: true}, PageOptions{
		Now:       viewNow,
		Token:     func(id inbox.CardID) string { return "tok-" + string(id) },
		Reachable: func(s string) inbox.Reach { return inbox.ReachConnected },
		Refused:   &Refused{Card: "b1", Input: url.Values{"text": {"  "}}, Problems: []aep.Problem{{Code: "blank", Message: "Enter your answer"}}},
	})
	cs := p.Groups[0].Cards
	require.Len(t, cs, 2)
	assert.Equal(t, "tok-a1", cs[0].Form.Token, "one token per card, minted by the caller")
	assert.Empty(t, cs[0].Errors, "the refused post marks its own card only")
	assert.Equal(t, "  ", cs[1].Form.Reply.Value)
	assert.Len(t, cs[1].Errors, 1)
	assert.Equal(t, "b1-errors", p.FocusErrors, "the error summary takes focus")
	assert.Equal(t, "Error: (2) aepforms", p.Title, "the title says a post was refused")
	assert.Equal(t, inbox.ReachConnected, cs[0].Prov.Reach)
}

func TestPageNotices(t *testing.T) {
	t.Parallel()
	p := Page(nil, inbox.Status{FeedConnected: false, FeedError: "dial: refused", Notices: []inbox.Notice{{Session: "s", Message: "events may be missing for session s"}}}, PageOptions{Now: viewNow})
	require.Len(t, p.Notices, 1)
	assert.True(t, strings.HasPrefix(p.Notices[0], "events may be missing for session s: "), "the gap: %q", p.Notices[0])
	assert.Contains(t, p.Notices[0], "answer it in the agent itself", "and what to do about it")
	assert.Equal(t, RelayView{Connected: false, ConnectingText: "Connecting to the relay", Error: "dial: refused"}, p.Relay)
}

// Before the feed has connected once, within the ping bound, the page
// says "connecting", not "lost".
func TestPageConnecting(t *testing.T) {
	t.Parallel()
	p := Page(nil, inbox.Status{FeedConnecting: true}, PageOptions{Now: viewNow})
	assert.Equal(t, RelayView{Connecting: true, ConnectingText: "Connecting to the relay"}, p.Relay)
	p = Page(nil, inbox.Status{FeedConnected: true, FeedConnecting: true}, PageOptions{Now: viewNow})
	assert.False(t, p.Relay.Connecting, "connected wins")
}

func TestSignInView(t *testing.T) {
	t.Parallel()
	v := SignIn("/forms/", Assets{}, "", "")
	assert.Equal(t, "/forms/signin", v.Action)
	assert.Equal(t, "Sign in · aepforms", v.Page.Title)
	assert.Empty(t, v.Page.FocusErrors)
	assert.Empty(t, v.Page.PushURL, "no live updates before sign-in")
	bad := SignIn("/", Assets{}, "Wrong secret", "ann")
	assert.Equal(t, "/signin", bad.Action)
	assert.Equal(t, "Error: Sign in · aepforms", bad.Page.Title)
	assert.Equal(t, SignInErrorsID, bad.Page.FocusErrors)
	assert.Equal(t, "ann", bad.Name)
}

func TestPageSignedIn(t *testing.T) {
	t.Parallel()
	p := Page(nil, inbox.Status{FeedConnected: true}, PageOptions{BasePath: "/forms/", Now: viewNow, SignedIn: true, Operator: "ann"})
	assert.True(t, p.SignedIn)
	assert.Equal(t, "ann", p.Operator)
	assert.Equal(t, "/forms/signout", p.SignOutURL)
	open := Page(nil, inbox.Status{FeedConnected: true}, PageOptions{Now: viewNow})
	assert.False(t, open.SignedIn, "no operator session: nothing to sign out of")
	assert.Equal(t, "/signout", open.SignOutURL)
}
