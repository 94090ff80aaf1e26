package view

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// PageOptions are what Page needs beyond the cards and the inbox status.
type PageOptions struct {
	// Rule and Rules are as in Options: the rule behind an answer a rule
	// sent, and whether cards offer "Answer like this from now on…".
	Rule  RuleLookup
	Rules bool
	// RuleMade names the rule made from a card's answer (Options.RuleMade).
	RuleMade func(card string) (RuleMade, bool)
	// Assignees are who a question may be assigned to (Options.Assignees).
	Assignees []string
	// AssignTeams are the teams a question may be assigned to
	// (Options.AssignTeams).
	AssignTeams []string
	// BasePath is the UI's mount point ("/" or "/forms/"), as in Options.
	BasePath string
	// Assets are the URLs of the page's stylesheet, script and icon.
	Assets Assets
	// Now is the time relative times and countdowns are computed against.
	Now time.Time
	// Viewer is who the page is drawn for: every card's verdict's input.
	Viewer inbox.Viewer
	// Role is the signed-in operator's role, shown beside their name
	// ("" with no sign-in).
	Role string
	// Token mints the form token of one card's form; nil gives no token.
	Token func(inbox.CardID) string
	// Reachable says whether a session's agent is connected for answers;
	// nil means unknown for every card.
	Reachable func(session string) inbox.Reach
	// Filter is the query in force (?agent=, ?session=, ?kind=).
	Filter inbox.Query
	// Refused, when set, is a refused post to re-render (status 422) with
	// the operator's input kept and its problems shown.
	Refused *Refused
	// Panel renders the Mission Control panel: the inbox without chrome.
	Panel bool
	// Theme is "light" or "dark" to override prefers-color-scheme; any
	// other value follows the system.
	Theme string
	// PromptBytes is how much of each prompt a card shows (Options.PromptBytes).
	PromptBytes int
	// EmbedOrigins are the origins allowed to embed the panel; the panel
	// posts its pending count to its parent only at these.
	EmbedOrigins []string
	// Seq is the inbox change seq the cards were read at: the push URL
	// carries it as ?since= so the first connect catches up from there.
	Seq uint64
	// Epoch is the server process's push epoch: ?since= is
	// {Epoch}-{Seq}, so a page loaded from one replica and connecting to
	// another (or to a restarted one) is told to reload, never caught
	// up from another process's seq.
	Epoch string
	// SignedIn is true when the request carries an operator session (an
	// operator secret is set and the operator signed in): the header then
	// offers a sign-out. Operator is the name given at sign-in ("" when none).
	SignedIn bool
	Operator string
	// NoHistory is as in Options.
	NoHistory bool
	// Routes is true when the page links to the Routes page (an admin, a
	// routes file).
	Routes bool
	// RelEvery is how often the page's script rewrites relative times
	// (data-rel-every); 0 leaves the script's default.
	RelEvery time.Duration
	// URLEvery is the least time between two rewrites of the page's
	// address by its script as the selection moves; 0 = its default.
	URLEvery time.Duration
	// PushSubscribeTimeout is how long the page's script waits for the
	// browser's push service to subscribe (data-push-subscribe-timeout);
	// 0 leaves the script's default.
	PushSubscribeTimeout time.Duration
	// Prompts keeps prompts read as Markdown (Options.Prompts).
	Prompts *markdown.Cache
	// Connect says how an agent connects, for the empty inbox.
	Connect Connect
	// Window, when set, is the part of the inbox this page shows
	// (ChooseWindow): the cards handed to Page are its Full and Settled
	// ones, the rest of the waiting requests on the page are rows. Nil
	// renders every card given in full.
	Window *Window
}

// Connect is how an agent connects to this UI's relay, for the empty
// inbox: the relay's URL, the file the relay token is kept in ("" when it
// was given another way), and a command that runs the demo agent against
// the relay ("" when none is offered).
type Connect struct {
	RelayURL, TokenFile, Demo string
}

// EmptyView is the empty inbox: the note, and how to connect an agent
// (Connect unset: the note only).
type EmptyView struct {
	Title   string
	Connect Connect
	// The words of the how-to (words.go).
	Heading, Relay, Token, NoFile, Demo, Adapter string
}

// Refused is a refused post: the card, the operator's input and the problems.
type Refused struct {
	Card     inbox.CardID
	Input    url.Values
	Problems []aep.Problem
	// Preview is what the rule being made would have answered (a
	// "Preview" post: nothing was sent, the input is kept).
	Preview *form.RulePreview
}

// PageView is the whole inbox page (or panel).
type PageView struct {
	// RoutesURL is the Routes page's, for an admin of a UI with a routes
	// file ("" hides the link).
	RoutesURL string
	// Undos is the undo bar: the operator's answers whose commands are
	// held for the undo window, each with its Undo, and one Undo of
	// them all when there are several (UndoBar). Empty when none.
	Undos []UndoView
	// RuleAnswers is the header's count of the requests rules answered
	// since the operator last looked; nil: none.
	RuleAnswers *RuleAnswers
	Title       string // "(3) aepforms"
	Base        string // the base path without its trailing slash ("" or "/forms"), for the script
	HomeURL     string // {base}/ (the page without a filter)
	PanelURL    string // {base}/panel
	CSSURL      string // {base}/static/app.css?v={hash}
	JSURL       string // {base}/static/app.js?v={hash}
	PushURL     string // {base}/push?{filter}&since={seq}: the page's live updates
	Theme       string // "light", "dark" or ""
	Panel       bool
	NowISO      string // the server's Now, so the browser can correct its clock for countdowns
	Pending     int    // open cards on this page
	Relay       RelayView
	Notices     []string // inbox notices ("events may be missing for session X")
	// NoticeTitles are the notices' titles, by index (the whole session
	// id a notice shortens; "" or missing for none).
	NoticeTitles []string
	Filter       []FilterTerm
	ClearURL     string // the page without the filter
	// ClaimFilters are the links to all questions, the operator's own
	// (claimed by or assigned to them) and those nobody claimed, the
	// other narrowings kept; empty when nobody is signed in by name.
	ClaimFilters []ClaimFilterLink
	WatchOnly    bool
	// EmbedOrigins is the space-separated list of origins the panel may
	// post its pending count to (data-embed-origins).
	EmbedOrigins string

	Empty EmptyView // what the inbox says when no card is open
	// PageCards is how many waiting requests the page keeps in full as
	// requests arrive and leave (data-page-cards): the script turns the
	// least urgent card past it into a row, and a row back into a card
	// when a card leaves. 0: rows stay rows (a later page).
	PageCards int
	// Pager is a windowed page's position in the inbox (nil when the
	// page shows every waiting request in full); Facets count the
	// waiting requests by agent and kind, each linking to its filter.
	Pager  *Pager
	Facets []Facet
	// Single is set on one question's own page (/cards/{id}/page): the
	// header counts the whole inbox, not the one card shown, and a line
	// leads to the rest instead of "No questions waiting".
	Single *SingleView
	// SettledMore says that older settled questions are in History (the
	// inbox shows the latest DefaultPageSettled); "" when all are shown.
	SettledMore string

	Groups  []GroupView // open cards by agent and session, most urgent group first
	Settled []CardView  // settled cards, newest first
	// FocusErrors is the id of the error summary to focus on load (a
	// refused post), "" when none.
	FocusErrors string

	// SignedIn is true when the operator signed in with the operator
	// secret: the header shows who and a sign-out. Operator is the name
	// given at sign-in ("" when none); SignOutURL is {base}/signout, and
	// SignOutOthersURL {base}/signout/others (the operator's other
	// sessions).
	SignedIn         bool
	Operator         string
	Role             string // the operator's role ("" with no sign-in)
	SignOutURL       string
	SignOutOthersURL string
	// IconURL is the tab icon, {base}/static/icon.svg?v={hash}.
	IconURL string
	// UnreachableText is the banner the script shows while this UI's
	// server cannot be reached from the page.
	UnreachableText string
	// RelEveryMS is data-rel-every: how often, in ms, the script
	// rewrites relative times; 0 = its default.
	RelEveryMS int64
	// URLEveryMS is data-url-every: the least time, in ms, between two
	// rewrites of the page's address by its script; 0 = its default.
	URLEveryMS int64
	// PushSubscribeMS is data-push-subscribe-timeout, in ms
	// (PageOptions.PushSubscribeTimeout); 0 = the script's default.
	PushSubscribeMS int64
	// RemovedText is the state line of a card the operator is working in
	// when it leaves the inbox (data-removed-text on the body).
	RemovedText string
	// Batches are the inbox's batch answers (questions that share a
	// shape, two or more), for the "Answer several at once" region; the
	// page (not the panel) shows the region, empty and hidden when none.
	Batches    []BatchGroup
	BatchesURL string // {base}/batches: the batch page (and, ?region=1, the region alone)
	// BatchesLink is the batch page under the page's filter.
	BatchesLink string
	// WithdrawnText is the state line of a card the server no longer
	// holds (it restarted since the page was drawn, or a post found the
	// question gone): data-withdrawn-text on the body.
	WithdrawnText string
}

// RelayView is the UI's connection to the relay, as the feed reports it.
type RelayView struct {
	Connected bool
	// Connecting is true while the feed has not yet connected once, within
	// the reference relay's ping bound (inbox.Status.FeedConnecting): not
	// "lost", just not there yet. ConnectingText says so.
	Connecting     bool
	ConnectingText string
	Error          string // the last feed error ("" when none); shown in the banner
}

// FilterTerm is one narrowing in force: "agent" = "claude-code".
type FilterTerm struct {
	Name, Value string
	// Shown is Value as the page shows it: a session shortened as its
	// group heading and cards shorten it, so one session reads the same
	// everywhere (Value whole in its title); a claim filter its name
	// ("Mine", "Unclaimed").
	Shown string
}

// GroupView is the open cards of one agent and session.
type GroupView struct {
	ID    string // "group-{hash}"
	Label string // "claude-code · session s_1"
	Cards []CardView
	// Rows are the group's requests past the page's full cards, as one
	// line each (a windowed page only), most urgent first.
	Rows []RowView
	// Count is how many requests wait in the group on every page, and
	// CountURL the page filtered by its session (windowed pages only).
	Count, CountText, CountURL string
}

// Page builds the inbox page from the cards (in inbox order: open by
// urgency, then settled newest first) and the inbox status at opts.Now.
func Page(cards []inbox.Card, status inbox.Status, opts PageOptions) PageView {
	base := root(opts.BasePath)
	v := PageView{
		Base:            base,
		HomeURL:         base + "/",
		PanelURL:        base + "/panel",
		BatchesURL:      base + "/batches",
		CSSURL:          opts.Assets.CSS,
		JSURL:           opts.Assets.JS,
		Theme:           theme(opts.Theme),
		RemovedText:     words.state["removed"],
		WithdrawnText:   words.state["withdrawn"],
		UnreachableText: words.page["unreachable"],
		Panel:           opts.Panel,
		NowISO:          opts.Now.UTC().Format(time.RFC3339Nano),
		Relay: RelayView{Connected: status.FeedConnected, Connecting: status.FeedConnecting && !status.FeedConnected,
			ConnectingText: words.page["connecting"], Error: status.FeedError},
		WatchOnly:        opts.Viewer.WatchOnly, // the UI's banner; a viewer's cards say their role
		SignedIn:         opts.SignedIn,
		Operator:         opts.Operator,
		Role:             opts.Role,
		SignOutURL:       base + "/signout",
		SignOutOthersURL: base + "/signout/others",
		IconURL:          opts.Assets.Icon,
		RelEveryMS:       opts.RelEvery.Milliseconds(),
		URLEveryMS:       opts.URLEvery.Milliseconds(),
		PushSubscribeMS:  opts.PushSubscribeTimeout.Milliseconds(),
	}
	v.Empty = EmptyView{
		Title:   words.empty["title"],
		Heading: words.empty["connect"], Relay: words.empty["relay"], Token: words.empty["token"],
		NoFile: words.empty["no-file"], Demo: words.empty["demo"],
		Adapter: strings.ReplaceAll(words.empty["adapter"], "{relay}", strings.TrimSuffix(opts.Connect.RelayURL, "/")),
	}
	for _, n := range status.Notices {
		msg, title := n.Message, ""
		if n.Session != "" {
			// A gap in a session's events: say what it means and what
			// to do, not only that it happened. The session shortened
			// as cards and headings show it, the whole id in the title.
			msg = words.page["gap"] + shortenID(n.Session, idRunes) + ": " + words.page["gap-advice"]
			title = Marked(n.Session)
		}
		v.Notices = append(v.Notices, msg)
		v.NoticeTitles = append(v.NoticeTitles, title)
	}
	if line := dropLine(status); line != "" {
		v.Notices = append(v.Notices, line)
	}
	var q url.Values
	v.Filter, q = filterTerms(opts.Filter)
	v.BatchesLink = BatchesLink(base, opts.Filter)
	q.Set("since", PushID(opts.Epoch, opts.Seq))
	v.PushURL = base + "/push?" + q.Encode()
	v.ClearURL = v.HomeURL
	if opts.Panel {
		v.ClearURL = v.PanelURL
	}
	if opts.Operator != "" {
		v.ClaimFilters = claimFilters(v.ClearURL, opts.Filter)
	}
	v.EmbedOrigins = strings.Join(opts.EmbedOrigins, " ")

	byGroup := map[string]int{}
	for _, c := range cards {
		o := Options{
			BasePath:    base,
			Now:         opts.Now,
			Viewer:      opts.Viewer,
			Panel:       opts.Panel,
			PromptBytes: opts.PromptBytes,
			NoHistory:   opts.NoHistory,
			Prompts:     opts.Prompts,
			Operator:    opts.Operator,
			Rule:        opts.Rule,
			Rules:       opts.Rules,
			RuleMade:    opts.RuleMade,
			Assignees:   opts.Assignees,
			AssignTeams: opts.AssignTeams,
		}
		if opts.Token != nil {
			o.Token = opts.Token(c.ID)
		}
		if opts.Reachable != nil {
			o.Reachable = opts.Reachable(c.Key.Session)
		}
		if r := opts.Refused; r != nil && r.Card == c.ID {
			o.Input, o.Problems, o.Preview = r.Input, r.Problems, r.Preview
		}
		cv := Card(c, o)
		if len(cv.Errors) > 0 && v.FocusErrors == "" {
			v.FocusErrors = cv.ErrorsID
		}
		if cv.Settled {
			v.Settled = append(v.Settled, cv)
			continue
		}
		if cv.Pending {
			v.Pending++
		}
		gi, ok := byGroup[cv.Group]
		if !ok {
			gi = len(v.Groups)
			byGroup[cv.Group] = gi
			v.Groups = append(v.Groups, GroupView{ID: cv.Group, Label: cv.GroupLabel})
		}
		v.Groups[gi].Cards = append(v.Groups[gi].Cards, cv)
	}
	if len(cards) == 0 && len(v.Filter) == 0 {
		// Nothing asked yet: say how to connect an agent. (With a filter,
		// or with settled cards, agents are connected already.)
		v.Empty.Connect = opts.Connect
	}
	sortGroups(v.Groups)
	v.PageCards = DefaultPageCards
	if opts.Window != nil {
		windowPage(&v, opts.Window, opts)
	}
	if opts.Routes {
		v.RoutesURL = base + "/routes"
	}
	v.Title = "aepforms"
	if v.Pending > 0 {
		v.Title = "(" + strconv.Itoa(v.Pending) + ") aepforms"
	}
	if v.FocusErrors != "" {
		// A refused post: the first thing a screen reader hears.
		v.Title = "Error: " + v.Title
	}
	safePage(&v)
	return v
}

// sortGroups orders each group's cards by urgency, and the groups by their
// most urgent card (stable for equal keys, so inbox order is kept).
func sortGroups(gs []GroupView) {
	for _, g := range gs {
		slices.SortStableFunc(g.Cards, func(a, b CardView) int { return strings.Compare(a.SortKey, b.SortKey) })
	}
	slices.SortStableFunc(gs, func(a, b GroupView) int { return strings.Compare(a.first(), b.first()) })
}

// first is the sort key of the group's most urgent request: its first
// card (the full cards are the page's most urgent), else its first row.
func (g GroupView) first() string {
	if len(g.Cards) > 0 {
		return g.Cards[0].SortKey
	}
	if len(g.Rows) > 0 {
		return g.Rows[0].SortKey
	}
	return ""
}

// Assets are the URLs of the static files every page links (the caller
// knows where they are served and their versions): the stylesheet, the
// script and the tab icon (linked so no browser asks for a /favicon.ico
// that is not there).
type Assets struct {
	CSS, JS, Icon string
}

func theme(t string) string {
	if t == "light" || t == "dark" {
		return t
	}
	return ""
}

// PushID is a push event id: the server process's epoch and the inbox
// change seq, {epoch}-{seq} (the bare seq without an epoch).
func PushID(epoch string, seq uint64) string {
	if epoch == "" {
		return strconv.FormatUint(seq, 10)
	}
	return epoch + "-" + strconv.FormatUint(seq, 10)
}

// filterTerms are filter's terms in force and the query that names them.
func filterTerms(filter inbox.Query) ([]FilterTerm, url.Values) {
	var terms []FilterTerm
	q := url.Values{}
	for _, t := range []FilterTerm{{"agent", filter.Agent, filter.Agent}, {"session", filter.Session, shortenID(Name(filter.Session), idRunes)}, {"kind", filter.Kind, filter.Kind}, {"claim", filter.Claim, words.card["filter-"+filter.Claim]}} {
		if t.Value != "" {
			terms = append(terms, t)
			q.Set(t.Name, t.Value)
		}
	}
	return terms, q
}

// InboxLink is the inbox (base = the UI's root, no trailing slash) under
// filter.
func InboxLink(base string, filter inbox.Query) string {
	_, q := filterTerms(filter)
	if len(q) == 0 {
		return base + "/"
	}
	return base + "/?" + q.Encode()
}

// BatchesLink is the batch page (base = the UI's root, no trailing slash)
// under filter, as the inbox narrowed by it links to it.
func BatchesLink(base string, filter inbox.Query) string {
	_, q := filterTerms(filter)
	if len(q) == 0 {
		return base + "/batches"
	}
	return base + "/batches?" + q.Encode()
}

// SingleView is what one question's own page says of the rest of the
// inbox.
type SingleView struct {
	// OffPage is how many questions wait besides the one shown
	// (data-off-page: the script counts the page's own card on top).
	OffPage int
	// Card is the DOM id of the card shown (data-single): the push
	// stream's other cards only change the script's count.
	Card    string
	Text    string // "One question of 15 pending."
	AllText string // "See all questions"
}

// SinglePage is card's own page: Page for the one card, with the header
// counting the inbox's pending (inboxPending, counted as the inbox page
// counts them). It follows the inbox's push as the inbox page does
// (opts.Seq and Epoch as there): its card's changes replace it, and the
// other cards' only change the count.
func SinglePage(card inbox.Card, inboxPending int, status inbox.Status, opts PageOptions) PageView {
	v := Page([]inbox.Card{card}, status, opts)
	off := inboxPending - v.Pending
	if off < 0 {
		off = 0
	}
	v.Pending = off + v.Pending
	v.Title = "aepforms"
	if v.Pending > 0 {
		v.Title = "(" + strconv.Itoa(v.Pending) + ") aepforms"
	}
	text := words.page["single-none"]
	if v.Pending > 0 {
		text = strings.ReplaceAll(words.page["single"], "{n}", formatCount(uint64(v.Pending)))
	}
	v.Single = &SingleView{OffPage: off, Card: "card-" + string(card.ID), Text: text, AllText: words.page["single-all"]}
	return v
}

// subPage is the frame of a page other than the inbox (History, Rules,
// the batch pages): its title, assets, theme and the header's account.
// Their script follows no push, so the relay is shown as connected.
func subPage(title, base string, assets Assets, themeName string, signedIn bool, operator string) PageView {
	return PageView{
		Title: title, Base: base, HomeURL: base + "/", CSSURL: assets.CSS, JSURL: assets.JS,
		IconURL: assets.Icon, Theme: theme(themeName), Relay: RelayView{Connected: true},
		SignedIn: signedIn, Operator: operator, SignOutURL: base + "/signout",
		SignOutOthersURL: base + "/signout/others",
		UnreachableText:  words.page["unreachable"],
	}
}
