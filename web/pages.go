package web

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/aepforms/aepforms/components"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
)

// handlePage renders the inbox page, or the panel (the same inbox without
// chrome, for Mission Control), narrowed by ?agent=, ?session=, ?kind=.
func handlePage(s *server, panel bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.writePage(w, r, http.StatusOK, panel, nil)
	}
}

// handleCard renders one card's fragment (what the push stream sends).
func handleCard(s *server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		card, ok := s.deps.Inbox.Card(inbox.CardID(chi.URLParam(r, "id")))
		if !ok {
			http.Error(w, "This question is not in the inbox (it may have been cleared).", http.StatusNotFound)
			return
		}
		html, err := s.frags.card(s, r, card)
		if err != nil {
			s.internalError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(html))
	}
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

// pageOptions builds the view options shared by pages and fragments.
func (s *server) pageOptions(r *http.Request, panel bool) render.PageOptions {
	q := viewQuery(r)
	return render.PageOptions{
		BasePath:     s.cfg.BasePath,
		Now:          s.cfg.Now(),
		CanSubmit:    s.canSubmit(),
		Token:        func(inbox.CardID) string { return newToken() },
		Reachable:    s.reachable,
		Filter:       inbox.Query{Agent: q.Get("agent"), Session: q.Get("session"), Kind: q.Get("kind")},
		Panel:        panel,
		Theme:        q.Get("theme"),
		EmbedOrigins: s.cfg.EmbedOrigins,
		// Pages are behind requireOperator: with a secret set, a request
		// that got here is signed in.
		SignedIn: s.auth.enabled(),
		Operator: operatorFrom(r.Context()),
	}
}

func (s *server) canSubmit() bool { return s.deps.Submitter != nil && !s.cfg.WatchOnly }

func (s *server) reachable(session string) inbox.Reach {
	if s.deps.Roster == nil {
		return inbox.ReachUnknown
	}
	return s.deps.Roster.Reach(session)
}

// writePage renders the page (or panel) into a buffer, then writes status
// and body, so a template error never yields half a page with a 200.
func (s *server) writePage(w http.ResponseWriter, r *http.Request, status int, panel bool, refused *render.Refused) {
	opts := s.pageOptions(r, panel)
	opts.Refused = refused
	in := s.deps.Inbox
	// Read the seq before the cards: a change racing with the read is
	// then sent again by push, never lost.
	opts.Seq = in.Seq()
	cards := in.Cards(opts.Filter)
	view := render.Page(cards, in.Status(), opts)
	if refused != nil {
		bannerRefusal(&view, refused)
	}
	var c templ.Component = components.Page(view)
	if panel {
		c = components.Panel(view)
	}
	// About 4 KiB of HTML a card: size the buffer once instead of growing it.
	s.writeComponent(w, r, status, c, 16<<10+len(cards)*4<<10)
}

// bannerRefusal puts a refused post's problems in the page's banners when
// its card is not on the page (outside the view's filter): a card on the
// page shows them itself in its error summary, whatever its state, so the
// operator always reads why nothing was sent.
func bannerRefusal(v *render.PageView, refused *render.Refused) {
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

// writeComponent renders c into a buffer of about sizeHint bytes, then
// writes status and body.
func (s *server) writeComponent(w http.ResponseWriter, r *http.Request, status int, c templ.Component, sizeHint int) {
	var buf bytes.Buffer
	buf.Grow(sizeHint)
	if err := c.Render(r.Context(), &buf); err != nil {
		s.internalError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// renderStatusFragment renders the banners (relay lost, notices,
// watch-only) for push. They depend on the inbox status only, so no card
// is read or rendered.
func (s *server) renderStatusFragment(r *http.Request) (string, error) {
	view := render.Page(nil, s.deps.Inbox.Status(), s.pageOptions(r, false))
	var buf bytes.Buffer
	if err := components.StatusFragment(view).Render(r.Context(), &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// internalError logs the detail and answers with a generic message.
func (s *server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Logger.Error("web: request failed", "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()), "err", err)
	http.Error(w, "Something went wrong on our side. The error was logged.", http.StatusInternalServerError)
}

// domID is a card's element id, as components render it.
func domID(id inbox.CardID) string { return "card-" + string(id) }

// newToken mints a form token: 128 random bits.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
