package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
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
// session cookie; a wrong secret re-renders the form with 401, and past
// the guessing limit (g) with 429 and Retry-After, the secret unchecked.
func handleSignIn(a *auth, g *guard, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.enabled() {
			http.Redirect(w, r, pg.base, http.StatusSeeOther)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The sign-in form could not be read.", http.StatusBadRequest)
			return
		}
		if typed := r.PostForm.Get(form.NameOperator); reservedName(typed) {
			pg.signIn(w, r, http.StatusUnprocessableEntity,
				"A name cannot begin with “rule:”: that is how answers sent by a rule are named. Give your own name.", "")
			return
		}
		name := operatorName(r.PostForm.Get(form.NameOperator))
		keys := []string{g.key(r), nameKey(name)}
		tooMany := func(wait time.Duration) {
			w.Header().Set("Retry-After", retryAfter(wait))
			pg.signIn(w, r, http.StatusTooManyRequests,
				"Too many wrong secrets were tried from your address or for this name. Try again in "+waitWords(wait)+".", name)
		}
		if wait := g.refused(keys...); wait > 0 {
			tooMany(wait)
			return
		}
		name, ok := a.authenticate(name, r.PostForm.Get(form.NameSecret))
		if !ok {
			if wait := g.failed("sign-in", keys...); wait > 0 {
				tooMany(wait)
				return
			}
			problem := "That is not the operator secret this UI was started with. Check it and try again."
			if a.named() {
				problem = "That name and secret are not one of this UI's operators. Give your own name and secret, and try again."
			}
			pg.signIn(w, r, http.StatusUnauthorized, problem, name)
			return
		}
		g.succeeded(keys...)
		id, err := a.issue(r.Context(), name, r.UserAgent())
		if err != nil {
			pg.internalError(w, r, fmt.Errorf("web: open a session: %w", err))
			return
		}
		http.SetCookie(w, a.cookie(id))
		target := pg.base + safeNext(r.URL.Query().Get("next"))
		if a.embed && r.Header.Get("Sec-Fetch-Dest") != "document" {
			// Perhaps inside a console's frame, where the browser may
			// refuse the cookie: mark the way back (see requireOperator).
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			target += sep + signedInParam + "=" + url.QueryEscape(a.marker())
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

// signInNotKept answers a page load that a sign-in just marked but
// that came without the session cookie: the browser refused it. The way
// on is the same page in its own tab, signed in there.
func (p *site) signInNotKept(w http.ResponseWriter, r *http.Request) {
	here := nextOf(r)
	v := view.SignIn(p.base, p.assets, "", "").Page
	v.Title = "Sign-in not kept · aepforms"
	if t := r.URL.Query().Get("theme"); t == "light" || t == "dark" {
		v.Theme = t
	}
	again := p.base + "signin"
	if here != "" {
		again += "?" + url.Values{"next": {here}}.Encode()
	}
	p.log.Info("web: signed in, but the browser did not send the session cookie back (refused in a frame?)", "remote", r.RemoteAddr)
	buf, err := render.SignInNotKept(r.Context(), v, p.base+here, again)
	if err != nil {
		p.internalError(w, r, err)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="aepforms"`)
	writeHTML(w, http.StatusUnauthorized, buf)
}

// handleSignOut ends the request's session, so its cookie (and any copy
// of it) no longer signs in, and clears the cookie.
// Its open push streams end with it (live).
func handleSignOut(a *auth, pg *pages, devs PushDevices, live *liveStreams, cl Claims) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Whoever signs out is on no question any more: their claims end,
		// on every open page.
		if name, _, _, ok, err := a.operator(r); err == nil && ok && name != "" {
			cl.EndClaims(name)
		}
		// The devices this sign-in subscribed stop being notified with it.
		if ck, err := r.Cookie(cookieName); err == nil && ck.Value != "" && devs != nil {
			if err := devs.DeleteSessionPushSubscriptions(r.Context(), hashSessionID(ck.Value)); err != nil {
				pg.internalError(w, r, fmt.Errorf("web: remove a session's push subscriptions: %w", err))
				return
			}
		}
		hash, err := a.signOut(r)
		if err != nil {
			pg.internalError(w, r, fmt.Errorf("web: end a session: %w", err))
			return
		}
		if hash != "" {
			live.endSession(hash)
		}
		http.SetCookie(w, a.cookie(""))
		if a.oidc != nil {
			if to := a.oidc.signOutURL(); to != "" {
				// The provider's own session ends too, or the next
				// sign-in would pass through it unasked.
				http.Redirect(w, r, to, http.StatusSeeOther)
				return
			}
		}
		http.Redirect(w, r, a.base+"signin", http.StatusSeeOther)
	}
}

// handleSignOutOthers ends the signed-in operator's other sessions (every
// browser but this one) and goes home. A Bearer script has no session to
// keep and is refused. Their open push streams end with them (live).
func handleSignOutOthers(a *auth, pg *pages, live *liveStreams) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		keep := sessionFrom(r.Context())
		if keep == "" {
			http.Error(w, "Only a signed-in browser can sign out its other sessions.", http.StatusBadRequest)
			return
		}
		n, err := a.store.DeleteOtherSessions(r.Context(), operatorFrom(r.Context()), keep)
		if err != nil {
			pg.internalError(w, r, fmt.Errorf("web: end other sessions: %w", err))
			return
		}
		live.endOthers(operatorFrom(r.Context()), keep)
		pg.log.Info("web: signed out other sessions", "operator", operatorFrom(r.Context()), "count", n)
		http.Redirect(w, r, a.base, http.StatusSeeOther)
	}
}
