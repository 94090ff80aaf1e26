package web

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
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

// pages answers requests with rendered HTML: the inbox page (or panel),
// a refused post's page, one card's fragment, the status fragment and the
// sign-in page. It builds the view options every one of them shares and
// hands the rendering to package render.
type pages struct {
	base     string // the clean base path, "/" or "/forms/"
	assets   view.Assets
	embed    []string
	signedIn bool // an operator secret is set: a page behind it is signed in
	// namedOperators: each operator signs in with their own name and secret.
	namedOperators bool
	canSubmit      bool // a respond path exists and the UI is not watch-only
	in             Inbox
	roster         Roster // nil: every agent's reach is unknown
	frags          *render.Fragments
	prompt         int           // Config.PromptBytes
	noHistory      bool          // no journal to read History from: cards link to no entry
	relEvery       time.Duration // Config.RelativeEvery
	now            func() time.Time
	log            *slog.Logger
	epoch          string // Config.PushEpoch
}

func newPages(cfg Config, deps Deps) *pages {
	h := static.Hash()
	return &pages{
		base: cfg.BasePath,
		assets: view.Assets{
			CSS:  cfg.BasePath + "static/app.css?v=" + h,
			JS:   cfg.BasePath + "static/app.js?v=" + h,
			Icon: cfg.BasePath + "static/icon.svg?v=" + h,
		},
		embed:          cfg.EmbedOrigins,
		epoch:          cfg.PushEpoch,
		signedIn:       cfg.secured(),
		namedOperators: len(cfg.Operators) > 0,
		canSubmit:      deps.Submitter != nil && !cfg.WatchOnly,
		noHistory:      deps.History == nil,
		in:             deps.Inbox,
		roster:         deps.Roster,
		frags:          render.NewFragments(),
		prompt:         cfg.PromptBytes,
		relEvery:       cfg.RelativeEvery,
		now:            cfg.Now,
		log:            cfg.Logger,
	}
}

// reach is what the roster says of a session's agent.
func (p *pages) reach(session string) inbox.Reach {
	if p.roster == nil {
		return inbox.ReachUnknown
	}
	return p.roster.Reach(session)
}

// options builds the view options of a page request.
func (p *pages) options(r *http.Request, panel bool) view.PageOptions {
	q := viewQuery(r)
	return view.PageOptions{
		BasePath:     p.base,
		Assets:       p.assets,
		Now:          p.now(),
		CanSubmit:    p.canSubmit,
		Token:        func(inbox.CardID) string { return render.NewToken() },
		Reachable:    p.reach,
		Filter:       inbox.Query{Agent: q.Get("agent"), Session: q.Get("session"), Kind: q.Get("kind")},
		Panel:        panel,
		Theme:        q.Get("theme"),
		EmbedOrigins: p.embed,
		SignedIn:     p.signedIn,
		Operator:     operatorFrom(r.Context()),
		PromptBytes:  p.prompt,
		NoHistory:    p.noHistory,
		RelEvery:     p.relEvery,
	}
}

// page renders the page (or panel), with a refused post when one is
// given, then writes status and body.
func (p *pages) page(w http.ResponseWriter, r *http.Request, status int, panel bool, refused *view.Refused) {
	opts := p.options(r, panel)
	opts.Refused = refused
	// Read the seq before the cards: a change racing with the read is
	// then sent again by push, never lost.
	opts.Seq = p.in.Seq()
	opts.Epoch = p.epoch
	v := view.Page(p.in.Cards(opts.Filter), p.in.Status(), opts)
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
func (p *pages) signIn(w http.ResponseWriter, r *http.Request, status int, problem, name string) {
	v := view.SignIn(p.base, p.assets, problem, name)
	v.NameRequired = p.namedOperators
	if next := safeNext(r.URL.Query().Get("next")); next != "" {
		v.Action += "?" + url.Values{"next": {next}}.Encode()
	}
	buf, err := render.SignIn(r.Context(), v)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	writeHTML(w, status, buf)
}

// card is card c's fragment for one browser (rendered once per version,
// with the browser's own form token).
func (p *pages) card(r *http.Request, c inbox.Card) (string, error) {
	return p.frags.Card(r.Context(), c, view.Options{
		BasePath: p.base, Now: p.now(), CanSubmit: p.canSubmit, Reachable: p.reach(c.Key.Session), PromptBytes: p.prompt,
		NoHistory: p.noHistory,
	})
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
	opts := view.Options{
		BasePath: p.base, Now: p.now(), CanSubmit: p.canSubmit, Reachable: p.reach(c.Key.Session), PromptBytes: p.prompt,
		Token: render.NewToken(),
	}
	var html string
	var err error
	if refused != nil {
		opts.Input, opts.Problems = refused.Input, refused.Problems
		html, err = render.CardOnce(r.Context(), c, opts)
	} else {
		html, err = p.frags.Card(r.Context(), c, opts)
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

// status is the banners fragment (relay lost, notices, watch-only): it
// depends on the inbox status only, so no card is read or rendered.
func (p *pages) status(r *http.Request) (string, error) {
	return render.Status(r.Context(), view.Page(nil, p.in.Status(), p.options(r, false)))
}

// internalError logs the detail and answers with a generic message.
func (p *pages) internalError(w http.ResponseWriter, r *http.Request, err error) {
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
	opts := p.options(r, panel)
	opts.Token = nil
	v := view.Page(p.in.Cards(opts.Filter), inbox.Status{FeedConnected: true}, opts)
	if next := nextPending(v, string(id)); next != "" {
		id = inbox.CardID(next)
	}
	p.redirectBack(w, r, id, panel)
}

// nextPending is the id of the first card waiting for an answer after
// card id in the page's order, wrapping round to the top; "" when none
// (id itself is not waiting: its answer is on its way).
func nextPending(v view.PageView, id string) string {
	var order []view.CardView
	for _, g := range v.Groups {
		order = append(order, g.Cards...)
	}
	at := slices.IndexFunc(order, func(c view.CardView) bool { return c.ID == id })
	for i := 1; i <= len(order); i++ {
		c := order[(at+i+len(order))%len(order)]
		if c.ID != id && c.Open && c.Form != nil && c.Form.Answerable {
			return c.ID
		}
	}
	return ""
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
	q := r.URL.Query()
	return inbox.Query{Agent: q.Get("agent"), Session: q.Get("session"), Kind: q.Get("kind")}
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
