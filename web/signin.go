package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/aepforms/aepforms/internal/render/form"
)

// handleSignInPage shows the sign-in form (or goes home when no operator
// secret is configured).
func handleSignInPage(a *auth, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.enabled() {
			http.Redirect(w, r, pg.base, http.StatusSeeOther)
			return
		}
		pg.signIn(w, r, http.StatusOK, "", "")
	}
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
	if r.URL.RawQuery != "" {
		next += "?" + r.URL.RawQuery
	}
	return safeNext(next)
}

// handleSignIn checks the operator secret (constant time) and sets the
// session cookie; a wrong secret re-renders the form with 401.
func handleSignIn(a *auth, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.enabled() {
			http.Redirect(w, r, pg.base, http.StatusSeeOther)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The sign-in form could not be read.", http.StatusBadRequest)
			return
		}
		name := operatorName(r.PostForm.Get(form.NameOperator))
		if !a.checkToken(r.PostForm.Get(form.NameSecret)) {
			pg.log.Warn("web: sign-in refused: wrong operator secret", "remote", r.RemoteAddr)
			pg.signIn(w, r, http.StatusUnauthorized,
				"That is not the operator secret this UI was started with. Check it and try again.", name)
			return
		}
		http.SetCookie(w, a.cookie(a.issue(name)))
		http.Redirect(w, r, pg.base+safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
	}
}

// handleSignOut clears the session cookie.
func handleSignOut(a *auth) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, a.cookie(""))
		http.Redirect(w, r, a.base+"signin", http.StatusSeeOther)
	}
}
