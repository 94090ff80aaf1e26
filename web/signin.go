package web

import (
	"net/http"
	"strings"
	"unicode/utf8"

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
		s.writeComponent(w, r, http.StatusOK, components.SignIn(render.SignIn(s.cfg.BasePath, "", "")))
	}
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
		name := strings.TrimSpace(r.PostForm.Get("name"))
		if len(name) > 80 || !utf8.ValidString(name) {
			name = ""
		}
		if !s.auth.checkToken(r.PostForm.Get("token")) {
			s.cfg.Logger.Warn("web: sign-in refused: wrong operator secret", "remote", r.RemoteAddr)
			s.writeComponent(w, r, http.StatusUnauthorized, components.SignIn(render.SignIn(s.cfg.BasePath,
				"That is not the operator secret this UI was started with. Check it and try again.", name)))
			return
		}
		http.SetCookie(w, s.auth.cookie(s.auth.issue(name)))
		http.Redirect(w, r, s.cfg.BasePath, http.StatusSeeOther)
	}
}

// handleSignOut clears the session cookie.
func handleSignOut(s *server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, s.auth.cookie(""))
		http.Redirect(w, r, s.cfg.BasePath+"signin", http.StatusSeeOther)
	}
}
