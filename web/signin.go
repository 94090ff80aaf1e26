package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/aepforms/aepforms/components"
	"github.com/aepforms/aepforms/internal/render"
)

// handleSignInPage shows the sign-in form (or goes home when no operator
// secret is configured).
func handleSignInPage(s *server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.auth.enabled() {
			http.Redirect(w, r, s.cfg.BasePath, http.StatusSeeOther)
			return
		}
		s.writeComponent(w, r, http.StatusOK, components.SignIn(s.signInView(r, "", "")), 0)
	}
}

// signInView is the sign-in form; its action carries the page to return
// to (?next=) when the request named a safe one.
func (s *server) signInView(r *http.Request, problem, name string) render.SignInView {
	v := render.SignIn(s.cfg.BasePath, problem, name)
	if next := safeNext(r.URL.Query().Get("next")); next != "" {
		v.Action += "?" + url.Values{"next": {next}}.Encode()
	}
	return v
}

// safeNext returns next when it is a path relative to the base path (no
// scheme, host or leading slash, so it can only lead back into this UI),
// "" otherwise.
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || strings.HasPrefix(next, "/") || strings.ContainsAny(next, "\\\x00\r\n\t") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return ""
	}
	return next
}

// nextOf is the request's own place relative to the base path, to return
// to after signing in ("" for the inbox itself).
func nextOf(r *http.Request) string {
	next := strings.TrimPrefix(r.URL.Path, "/")
	if q := withoutParam(r.URL.RawQuery, signedInParam); q != "" {
		next += "?" + q
	}
	return safeNext(next)
}

// withoutParam is the raw query without the parameter name, the others
// kept as they were, in their order.
func withoutParam(raw, name string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	kept := parts[:0]
	for _, p := range parts {
		if p == name || strings.HasPrefix(p, name+"=") {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&")
}

// handleSignIn checks the operator secret (constant time) and sets the
// session cookie; a wrong secret re-renders the form with 401.
func handleSignIn(s *server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.auth.enabled() {
			http.Redirect(w, r, s.cfg.BasePath, http.StatusSeeOther)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The sign-in form could not be read.", http.StatusBadRequest)
			return
		}
		name := operatorName(r.PostForm.Get("name"))
		if !s.auth.checkToken(r.PostForm.Get("token")) {
			s.cfg.Logger.Warn("web: sign-in refused: wrong operator secret", "remote", r.RemoteAddr)
			s.writeComponent(w, r, http.StatusUnauthorized, components.SignIn(s.signInView(r,
				"That is not the operator secret this UI was started with. Check it and try again.", name)), 0)
			return
		}
		http.SetCookie(w, s.auth.cookie(s.auth.issue(name)))
		target := s.cfg.BasePath + safeNext(r.URL.Query().Get("next"))
		if s.auth.embed && r.Header.Get("Sec-Fetch-Dest") != "document" {
			// Perhaps inside a console's frame, where the browser may
			// refuse the cookie: mark the way back (see requireOperator).
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			target += sep + signedInParam + "=" + url.QueryEscape(s.auth.marker())
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
	}
}

// signedInParam is the query parameter a sign-in that may be inside a
// frame adds to the page it returns to: a signed, short-lived "signed in
// just now" (auth.marker). Arriving with the session cookie, the page
// drops it with a redirect; arriving without, the browser refused the
// cookie (third-party cookies blocked and no partitioned cookies), and
// the frame explains that instead of showing the sign-in form again.
const signedInParam = "signedin"

// writeSignInNotKept answers a page load that a sign-in just marked but
// that came without the session cookie: the browser refused it. The way
// on is the same page in its own tab, signed in there.
func (s *server) writeSignInNotKept(w http.ResponseWriter, r *http.Request) {
	here := nextOf(r)
	p := render.SignIn(s.cfg.BasePath, "", "").Page
	p.Title = "Sign-in not kept · aepforms"
	if t := r.URL.Query().Get("theme"); t == "light" || t == "dark" {
		p.Theme = t
	}
	again := s.cfg.BasePath + "signin"
	if here != "" {
		again += "?" + url.Values{"next": {here}}.Encode()
	}
	s.cfg.Logger.Info("web: signed in, but the browser did not send the session cookie back (refused in a frame?)", "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", `Bearer realm="aepforms"`)
	s.writeComponent(w, r, http.StatusUnauthorized, components.SignInNotKept(p, s.cfg.BasePath+here, again), 0)
}

// handleSignOut clears the session cookie.
func handleSignOut(s *server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, s.auth.cookie(""))
		http.Redirect(w, r, s.cfg.BasePath+"signin", http.StatusSeeOther)
	}
}
