package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/markdown"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/static"
)

// handlePage renders the inbox page, or the panel (the same inbox without
// chrome, for Mission Control), narrowed by ?agent=, ?session=, ?kind=.
func handlePage(pg *pages, panel bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pg.page(w, r, http.StatusOK, panel, nil)
	}
}

// handleCard renders one card's fragment (what the push stream sends).
func handleCard(in Inbox, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		card, ok := in.Card(inbox.CardID(chi.URLParam(r, "id")))
		if !ok {
			http.Error(w, "This question is not in the inbox (it may have been cleared).", http.StatusNotFound)
			return
		}
		html, err := pg.card(r, card)
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		// The fragment carries a fresh form token: never cached.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(html))
	}
}

// site is what every page of the UI shares: its address and assets, the
// sign-in it sits behind, the clock and the log, and the answers any
// handler may give whatever its concern (our own fault, an address not
// served, a question gone, a post not read, the sign-in page).
type site struct {
	base     string // the clean base path, "/" or "/forms/"
	assets   view.Assets
	embed    []string
	signedIn bool // an operator secret is set: a page behind it is signed in
	// namedOperators: each operator signs in with their own name and secret.
	namedOperators bool
	// provider is the identity provider's host operators sign in at
	// ("": they sign in with a secret).
	provider string
	// routes is true when serve has a routes file: an admin's pages link
	// to the Routes page.
	routes bool
	// handoffMaxAge, signInWait and signInPoll are the panel's sign-in
	// through a window of its own (Config.HandoffMaxAge,
	// SignInWindowWait, SignInWindowPoll).
	handoffMaxAge, signInWait, signInPoll time.Duration
	now                                   func() time.Time
	log                                   *slog.Logger
}

// pages answers requests about the cards with rendered HTML: the inbox
// page (or panel), a refused post's page, one card's fragment, the
// status fragment and the push stream's frames. It builds the view
// options every one of them shares and hands the rendering to package
// render; the rules' part of a card (and the Rules and History pages)
// is rulePages', the batches' batchPages'.
type pages struct {
	*site
	// viewer is who this UI's cards are drawn for, the verdict's one
	// input beyond the card (inbox.Card.Verdict): watch-only when the
	// UI has no respond path or no control token.
	viewer    inbox.Viewer
	in        Inbox
	roster    Roster // nil: every agent's reach is unknown
	frags     *render.Fragments
	prompt    int           // Config.PromptBytes
	noHistory bool          // no journal to read History from: cards link to no entry
	relEvery  time.Duration // Config.RelativeEvery
	urlEvery  time.Duration // Config.URLEvery
	pushSub   time.Duration // Config.PushSubscribeTimeout
	pageCards int           // Config.PageCards
	pageRows  int           // Config.PageRows
	// prompts keeps prompts read as Markdown, shared by every page and
	// push render; connect is Config.Connect, for the empty inbox.
	prompts *markdown.Cache
	connect view.Connect
	epoch   string // Config.PushEpoch
	// rules are the standing answers as the cards show and make them;
	// batch is the batch region the page shows.
	rules  *rulePages
	batch  *batchPages
	routes *routePages
	// assignees are the operators a question may be assigned to
	// (auth.assignees).
	assignees func() []string
}

func newPages(cfg Config, deps Deps) *pages {
	h := static.Hash()
	st := &site{
		base: cfg.BasePath,
		assets: view.Assets{
			CSS:  cfg.BasePath + "static/app.css?v=" + h,
			JS:   cfg.BasePath + "static/app.js?v=" + h,
			Icon: cfg.BasePath + "static/icon.svg?v=" + h,
		},
		embed:          cfg.EmbedOrigins,
		signedIn:       cfg.secured(),
		namedOperators: len(cfg.Operators) > 0,
		routes:         deps.Routes != nil,
		handoffMaxAge:  cfg.HandoffMaxAge,
		signInWait:     cfg.SignInWindowWait,
		signInPoll:     cfg.SignInWindowPoll,
		now:            cfg.Now,
		log:            cfg.Logger,
	}
	p := &pages{
		site:      st,
		epoch:     cfg.PushEpoch,
		viewer:    cfg.Viewer,
		noHistory: deps.History == nil,
		in:        deps.Inbox,
		roster:    deps.Roster,
		frags:     render.NewFragments(),
		prompt:    cfg.PromptBytes,
		relEvery:  cfg.RelativeEvery,
		urlEvery:  cfg.URLEvery,
		pushSub:   cfg.PushSubscribeTimeout,
		prompts:   markdown.NewCache(promptCacheSize),
		connect:   cfg.Connect,
		pageCards: cfg.PageCards,
		pageRows:  cfg.PageRows,
	}
	p.rules = &rulePages{site: st, in: deps.Inbox, viewer: p.viewer, prompt: cfg.PromptBytes, noHistory: deps.History == nil,
		rules: deps.Rules, history: deps.History, looks: deps.RuleLooks}
	p.routes = newRoutePages(st, deps, cfg)
	p.batch = &batchPages{site: st, in: deps.Inbox, viewer: p.viewer, prompt: cfg.PromptBytes, prompts: p.prompts, cards: p}
	return p
}

// reach is what the roster says of a session's agent.
func (p *pages) reach(session string) inbox.Reach {
	if p.roster == nil {
		return inbox.ReachUnknown
	}
	return p.roster.Reach(session)
}

// viewerOf is who r's cards are drawn for: this UI's Viewer, read-only
// for an operator whose role answers nothing.
func (p *pages) viewerOf(r *http.Request) inbox.Viewer { return viewerFor(p.viewer, r) }

// viewerFor is ui (this UI's Viewer) as the operator signed in on r sees
// it: read-only when their role answers nothing.
func viewerFor(ui inbox.Viewer, r *http.Request) inbox.Viewer {
	ui.ReadOnly = !roleFrom(r.Context()).answers()
	return ui
}

// roleShown is the role the header shows beside the operator's name: the
// signed-in operator's ("" with no sign-in).
func (p *pages) roleShown(r *http.Request) string {
	if !p.signedIn {
		return ""
	}
	return string(roleFrom(r.Context()))
}

// options builds the view options of a page request.
func (p *pages) options(r *http.Request, panel bool) view.PageOptions {
	q := viewQuery(r)
	return view.PageOptions{
		BasePath:             p.base,
		Assets:               p.assets,
		Now:                  p.now(),
		Viewer:               p.viewerOf(r),
		Role:                 p.roleShown(r),
		Routes:               p.routes.linked(r),
		Token:                func(inbox.CardID) string { return render.NewToken() },
		Reachable:            p.reach,
		Filter:               narrowing(q, operatorFrom(r.Context()), teamsFrom(r.Context())),
		Panel:                panel,
		Theme:                q.Get("theme"),
		EmbedOrigins:         p.embed,
		SignedIn:             p.signedIn,
		Operator:             operatorFrom(r.Context()),
		PromptBytes:          p.prompt,
		NoHistory:            p.noHistory,
		RelEvery:             p.relEvery,
		URLEvery:             p.urlEvery,
		PushSubscribeTimeout: p.pushSub,
		Prompts:              p.prompts,
		Connect:              p.connect,
		Rule:                 p.rules.ruleLookup(r.Context()),
		Rules:                p.rules.makesRules() && roleFrom(r.Context()).administers(),
		RuleMade:             p.rules.ruleMade(r.Context()),
		Assignees:            p.assigneesFor(r),
		AssignTeams:          p.assignTeamsFor(r),
	}
}

// assigneesFor are the operators r's operator may assign a question to:
// none for a role that answers nothing.
func (p *pages) assigneesFor(r *http.Request) []string {
	if p.assignees == nil || !roleFrom(r.Context()).answers() {
		return nil
	}
	return p.assignees()
}

// assignTeamsFor are the teams r's operator may assign a question to:
// the routes file's, none for a role that answers nothing.
func (p *pages) assignTeamsFor(r *http.Request) []string {
	if !roleFrom(r.Context()).answers() {
		return nil
	}
	return p.routes.teams()
}

// promptCacheSize bounds the prompts kept read as Markdown (about one per
// open card; past it the cache starts over).
const promptCacheSize = 4096

// page renders the page (or panel), with a refused post when one is
// given, then writes status and body.
func (p *pages) page(w http.ResponseWriter, r *http.Request, status int, panel bool, refused *view.Refused) {
	opts := p.options(r, panel)
	opts.Refused = refused
	// Read the seq before the cards: a change racing with the read is
	// then sent again by push, never lost.
	opts.Seq = p.in.Seq()
	opts.Epoch = p.epoch
	// The page is chosen from heads (no request bodies) and reads whole
	// only the cards it renders in full: its cost stays that of one page
	// however many requests wait.
	heads := p.in.Heads(opts.Filter)
	win := view.ChooseWindow(heads, view.WindowOptions{
		After: viewQuery(r).Get("after"), Cards: p.pageCards, Rows: p.pageRows, Now: opts.Now, Viewer: p.viewer,
	})
	opts.Window = &win
	cards := make([]inbox.Card, 0, len(win.Full)+len(win.Settled))
	for _, ids := range [][]inbox.CardID{win.Full, win.Settled} {
		for _, id := range ids {
			if c, ok := p.in.Card(id); ok {
				cards = append(cards, c)
			}
		}
	}
	v := view.Page(cards, p.in.Status(), opts)
	v.Undos = p.undoBar(r, heads, opts)
	v.RuleAnswers = p.rules.ruleAnswers(r)
	if !panel {
		v.Batches = p.batch.batchRegion(r, heads)
		if v.PushURL != "" && p.viewer.Answers() {
			v.PushURL += "&batches=1" // its region's counts come by push
		}
	}
	if refused != nil {
		bannerRefusal(&v, refused)
	}
	buf, err := render.Page(r.Context(), v)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// signIn renders the sign-in form with a refused attempt's problem and
// the name to keep; its action carries the page to return to (?next=)
// when the request named a safe one.
func (p *site) signIn(w http.ResponseWriter, r *http.Request, status int, problem, name string) {
	v := view.SignIn(p.base, p.assets, problem, name)
	v.NameRequired = p.namedOperators
	if p.provider != "" {
		v.Provider, v.ProviderURL = p.provider, p.base+"auth/login"
	}
	next := safeNext(r.URL.Query().Get("next"))
	if next != "" {
		v.Action += "?" + url.Values{"next": {next}}.Encode()
		if v.ProviderURL != "" {
			v.ProviderURL += "?" + url.Values{"next": {next}}.Encode()
		}
	}
	if v.ProviderURL != "" && len(p.embed) > 0 && r.Header.Get("Sec-Fetch-Dest") == "iframe" {
		v.Window = p.signInWindow(next)
		v.Page.Theme = themeOf(next)
	}
	buf, err := render.SignIn(r.Context(), v)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// signInWindow is the sign-in of a frame inside an embedding console,
// through a window of its own (handoff.go), returning to next (the panel
// when none).
func (p *site) signInWindow(next string) *view.SignInWindow {
	open := next
	if open == "" {
		open = "panel"
	}
	handoff := p.base + "auth/handoff"
	if next != "" {
		handoff += "?" + url.Values{"next": {next}}.Encode()
	}
	return &view.SignInWindow{HandoffURL: handoff, PopupURL: p.base + "auth/popup",
		RedeemURL: p.base + "auth/handoff/redeem", OpenURL: p.base + open,
		PollMS: p.signInPoll.Milliseconds(), MaxAge: view.DurationWords(p.handoffMaxAge)}
}

// themeOf is the theme (?theme=light|dark) of next, a page to return to
// ("" when it forces none).
func themeOf(next string) string {
	u, err := url.Parse(next)
	if err != nil {
		return ""
	}
	if t := u.Query().Get("theme"); t == "light" || t == "dark" {
		return t
	}
	return ""
}

// cardOptions are the view options of card c drawn for request r at now:
// the one builder behind every copy of a card version, the push stream's
// (card, pushshare.go) and the posting browser's fragment (cardFragment),
// so both render it the same way (and share one cached rendering).
func (p *pages) cardOptions(r *http.Request, c inbox.Card, now time.Time) view.Options {
	return view.Options{
		BasePath: p.base, Now: now, Viewer: p.viewerOf(r), Reachable: p.reach(c.Key.Session),
		PromptBytes: p.prompt, NoHistory: p.noHistory, Prompts: p.prompts, Operator: operatorFrom(r.Context()),
		Rule: p.rules.ruleLookup(r.Context()), Rules: p.rules.makesRules() && roleFrom(r.Context()).administers(), RuleMade: p.rules.ruleMade(r.Context()), RulesVersion: p.rules.rulesVersion(),
		Assignees: p.assigneesFor(r), AssignTeams: p.assignTeamsFor(r),
	}
}

// card is card c's fragment for one browser (rendered once per version,
// with the browser's own form token).
func (p *pages) card(r *http.Request, c inbox.Card) (string, error) {
	return p.frags.Card(r.Context(), c, p.cardOptions(r, c, p.now()))
}

// cardFragment writes card id's fragment with status: as it now is
// (refused nil), or with a refused post's input and problems. A card
// gone from the inbox is a plain 404.
func (p *pages) cardFragment(w http.ResponseWriter, r *http.Request, status int, id inbox.CardID, refused *view.Refused) {
	c, ok := p.in.Card(id)
	if !ok {
		http.Error(w, view.RefusalGone.Message, http.StatusNotFound)
		return
	}
	var html string
	var err error
	if refused != nil {
		opts := p.cardOptions(r, c, p.now())
		opts.Token, opts.Input, opts.Problems, opts.Preview = render.NewToken(), refused.Input, refused.Problems, refused.Preview
		html, err = render.CardOnce(r.Context(), c, opts)
	} else {
		html, err = p.card(r, c)
	}
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(html))
}

// gone answers a post to a question the inbox does not hold (a server
// restarted since the page was drawn, or the question was cleared) with
// 404: to the script, the words as plain text (it withdraws the card in
// place, the draft kept); to a browser's own post, a page in the UI's
// style with the operator's typed text and the way back to the inbox.
func (p *site) gone(w http.ResponseWriter, r *http.Request, post url.Values, panel bool) {
	if wantsFragment(r) {
		http.Error(w, view.RefusalGone.Message, http.StatusNotFound)
		return
	}
	v := view.Gone(p.base, p.assets, post, panel, viewQuery(r).Get("theme"))
	buf, err := render.Gone(r.Context(), v)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, http.StatusNotFound, buf)
}

// goneOpened answers a link to a question the inbox does not hold (a
// row's own page, followed without the script after a restart) with 404
// and a page in the UI's style that leads back to the inbox.
func (p *site) goneOpened(w http.ResponseWriter, r *http.Request) {
	buf, err := render.Gone(r.Context(), view.GoneOpened(p.base, p.assets, viewQuery(r).Get("theme")))
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, http.StatusNotFound, buf)
}

// notFound answers an address the UI does not serve with 404 and a page
// in the UI's style that leads to the inbox.
func (p *site) notFound(w http.ResponseWriter, r *http.Request) {
	buf, err := render.Gone(r.Context(), view.NotFound(p.base, p.assets, viewQuery(r).Get("theme")))
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, http.StatusNotFound, buf)
}

// unread answers a post that could not be read (too large: 413, or
// malformed: 400): plain words to the script (which falls back to the
// browser's own post), a page in the UI's style to that post, saying
// nothing was sent and how to get back to what was typed.
func (p *site) unread(w http.ResponseWriter, r *http.Request, status int, panel, tooLarge bool) {
	v := view.Unread(p.base, p.assets, panel, viewQuery(r).Get("theme"), tooLarge)
	if wantsFragment(r) {
		http.Error(w, v.Message, status)
		return
	}
	buf, err := render.Gone(r.Context(), v)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// status is the banners fragment (relay lost, notices, watch-only) and
// the header's count of what rules answered (the page the stream is
// for, r's referrer, may be the panel): no card is read or rendered.
func (p *pages) status(r *http.Request) (string, error) {
	panel := cameFromPanel(r, p.base)
	v := view.Page(nil, p.in.Status(), p.options(r, panel))
	v.RuleAnswers = p.rules.ruleAnswers(r)
	return render.Status(r.Context(), v, panel)
}

// internalError logs the detail and answers with a generic message.
// A browser that left before its page was written (its request's
// context canceled) is not an error on our side: it is logged at debug.
func (p *site) internalError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		p.log.Debug("web: browser left before the answer", "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()))
		return
	}
	p.log.Error("web: request failed", "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()), "err", err)
	http.Error(w, "Something went wrong on our side. The error was logged.", http.StatusInternalServerError)
}

// redirectBack sends the browser to the page (or panel) it posted from,
// keeping its filter, anchored at the card.
func (p *pages) redirectBack(w http.ResponseWriter, r *http.Request, id inbox.CardID, panel bool) {
	target := p.base
	if panel {
		target += "panel"
	}
	if ref, err := url.Parse(r.Referer()); err == nil && ref.RawQuery != "" && ref.Host == r.Host {
		target += "?" + ref.Query().Encode()
	}
	http.Redirect(w, r, target+"#"+domID(id), http.StatusSeeOther)
}

// redirectNext sends the browser back to the page (or panel) it posted
// from, keeping its filter, anchored at the next card waiting for an
// answer after the one just sent (in page order, wrapping round), so the
// operator keeps their place; at the card sent when none waits.
func (p *pages) redirectNext(w http.ResponseWriter, r *http.Request, id inbox.CardID, panel bool) {
	p.redirectBack(w, r, p.nextCard(r, id, panel), panel)
}

// nextCard is the card redirectNext anchors at: the next one waiting for
// an answer after id in the order of the page (or panel) r was posted
// from, or id when none waits. It only reads r.
func (p *pages) nextCard(r *http.Request, id inbox.CardID, panel bool) inbox.CardID {
	opts := p.options(r, panel)
	heads := p.in.WaitingHeads(opts.Filter)
	if next := view.NextPending(heads, id, view.WindowOptions{
		After: viewQuery(r).Get("after"), Cards: p.pageCards, Rows: p.pageRows, Now: opts.Now, Viewer: p.viewer,
	}); next != "" {
		return next
	}
	return id
}

// writeHTML writes a rendered page with its status. Pages are never
// cached: they carry form tokens and live state.
func writeHTML(w http.ResponseWriter, status int, buf *bytes.Buffer) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// queryOf reads the page's narrowing from the URL.
func queryOf(r *http.Request) inbox.Query {
	return narrowing(r.URL.Query(), operatorFrom(r.Context()), teamsFrom(r.Context()))
}

// narrowing is the narrowing q names for operator, in teams (comma-
// separated): ?agent=, ?session=, ?kind=, and ?claim= (mine: claimed by
// or assigned to them or to one of their teams; unclaimed).
func narrowing(q url.Values, operator, teams string) inbox.Query {
	f := inbox.Query{Agent: q.Get("agent"), Session: q.Get("session"), Kind: q.Get("kind")}
	switch c := q.Get("claim"); c {
	case inbox.ClaimMine, inbox.ClaimNone:
		f.Claim, f.Operator = c, operator
		if c == inbox.ClaimMine {
			f.Teams = teams
		}
	}
	return f
}

// viewQuery is the query string of the view a request shows: its own for
// a GET, the posting page's (its same-origin Referer) for a form post, so
// a refused post re-renders the filter and theme the operator was using.
func viewQuery(r *http.Request) url.Values {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return r.URL.Query()
	}
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host {
		return ref.Query()
	}
	return url.Values{}
}

// cameFromPanel reports whether the post came from the panel page (its
// Referer, same-origin by our Referrer-Policy).
func cameFromPanel(r *http.Request, base string) bool {
	ref, err := url.Parse(r.Referer())
	return err == nil && ref.Host == r.Host && strings.HasSuffix(strings.TrimSuffix(ref.Path, "/"), strings.TrimSuffix(base, "/")+"/panel")
}

// bannerRefusal puts a refused post's problems in the page's banners when
// its card is not on the page (outside the view's filter): a card on the
// page shows them itself in its error summary, whatever its state, so the
// operator always reads why nothing was sent.
func bannerRefusal(v *view.PageView, refused *view.Refused) {
	for _, g := range v.Groups {
		for _, c := range g.Cards {
			if c.ID == string(refused.Card) {
				return
			}
		}
	}
	for _, c := range v.Settled {
		if c.ID == string(refused.Card) {
			return
		}
	}
	for _, p := range refused.Problems {
		v.Notices = append(v.Notices, p.Message)
	}
}

// domID is a card's element id, as components render it.
func domID(id inbox.CardID) string { return "card-" + string(id) }

// handleCardPage is one card on a page of its own: where a row's link
// leads without the script (the script opens the card in place from its
// fragment, GET /cards/{id}, instead), and a notification's. It follows
// the inbox's push as the inbox page does: its card as it changes, the
// others only counted.
func handleCardPage(in Inbox, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Read the seq before the card: a change racing with the read is
		// then sent again by push, never lost.
		seq := pg.in.Seq()
		card, ok := in.Card(inbox.CardID(chi.URLParam(r, "id")))
		if !ok {
			pg.goneOpened(w, r)
			return
		}
		opts := pg.options(r, false)
		opts.Filter = inbox.Query{}
		opts.Seq, opts.Epoch = seq, pg.epoch
		// The header counts the inbox as its page does (the verdict's
		// pending), not the one card shown.
		v := view.SinglePage(card, view.CountPending(in.WaitingHeads(inbox.Query{}), opts.Now, pg.viewer), pg.in.Status(), opts)
		buf, err := render.Page(r.Context(), v)
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		writeHTML(w, http.StatusOK, buf)
	}
}

// handleRow is one waiting request as a row (components.RowFragment): the
// script fetches it when a card leaves the page's full cards as more
// urgent ones arrive.
func handleRow(in Inbox, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		card, ok := in.Card(inbox.CardID(chi.URLParam(r, "id")))
		if !ok {
			http.Error(w, "This question is not in the inbox (it may have been cleared).", http.StatusNotFound)
			return
		}
		buf, err := render.Row(r.Context(), view.Row(card, view.Options{BasePath: pg.base, Now: pg.now()}))
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		writeHTML(w, http.StatusOK, buf)
	}
}
