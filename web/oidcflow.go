package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// flowCookie carries a sign-in under way from /auth/login to
// /auth/callback in the browser that started it: its state, nonce, PKCE
// verifier and where to go after, signed (auth.key), for oidcFlowMaxAge.
// The browser that did not start a flow has no such cookie, so a
// callback it is sent to (a forged or replayed one) signs no one in.
const flowCookie = "aepforms_signin"

// oidcFlowMaxAge bounds a sign-in at the provider.
const oidcFlowMaxAge = 10 * time.Minute

// equalSecret compares two secrets in constant time.
func equalSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// randomText is n random bytes, unpadded base64url.
func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// flowCookieFor is the cookie of flow f (value "" clears it): HttpOnly,
// Lax (the provider sends the browser back with a top-level GET), under
// the callback's path only.
func (a *auth) flowCookieFor(f *oidcFlow) *http.Cookie {
	c := &http.Cookie{Name: flowCookie, Path: a.base + "auth/", HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode, MaxAge: -1}
	if f != nil {
		b, _ := json.Marshal(f)
		payload := base64.RawURLEncoding.EncodeToString(b)
		c.Value, c.MaxAge = payload+"."+a.sign("oidc flow "+payload), int(oidcFlowMaxAge/time.Second)
	}
	return c
}

// flowOf reads the request's flow cookie: false when there is none, it is
// not this UI's, or it is past its time.
func (a *auth) flowOf(r *http.Request) (oidcFlow, bool) {
	var f oidcFlow
	ck, err := r.Cookie(flowCookie)
	if err != nil {
		return f, false
	}
	payload, sig, ok := strings.Cut(ck.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.sign("oidc flow "+payload))) {
		return f, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &f) != nil {
		return f, false
	}
	return f, a.now().Unix() <= f.Expires
}

// handleOIDCStart begins a sign-in at the identity provider: a fresh
// state, nonce and PKCE verifier kept in the flow cookie, and the browser
// sent to the provider. A provider that does not answer gets the sign-in
// page saying so (503), to try again.
//
// Inside an embedding console's frame the provider would refuse to be
// shown: the frame is sent to its sign-in page, which signs in through a
// window of its own (handoff.go).
func handleOIDCStart(a *auth, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next := safeNext(r.URL.Query().Get("next"))
		if a.embed && r.Header.Get("Sec-Fetch-Dest") == "iframe" {
			target := a.base + "signin"
			if next != "" {
				target += "?" + url.Values{"next": {next}}.Encode()
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		a.startFlow(w, r, pg, a.newFlow(next))
	}
}

// newFlow is a fresh sign-in at the provider: its state, nonce and PKCE
// verifier, returning to next.
func (a *auth) newFlow(next string) oidcFlow {
	return oidcFlow{State: randomText(24), Nonce: randomText(24), Verifier: oauth2.GenerateVerifier(),
		Next: next, Expires: a.now().Add(oidcFlowMaxAge).Unix()}
}

// startFlow keeps flow f in the flow cookie and sends the browser to the
// provider; a provider that does not answer gets the sign-in page saying
// so (503), to try again.
func (a *auth) startFlow(w http.ResponseWriter, r *http.Request, pg *pages, f oidcFlow) {
	target, err := a.oidc.start(r.Context(), f)
	if err != nil {
		a.oidcProblem(w, r, pg, err)
		return
	}
	http.SetCookie(w, a.flowCookieFor(&f))
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// handleOIDCCallback finishes a sign-in the provider sends the browser
// back from: the state must be the flow's of this browser, the code is
// exchanged with the flow's verifier, the ID token verified and its nonce
// the flow's. Then the operator holds a session like any other. Anything
// else gets the sign-in page saying what went wrong, and no session.
func handleOIDCCallback(a *auth, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, a.flowCookieFor(nil)) // one callback per flow
		q := r.URL.Query()
		f, ok := a.flowOf(r)
		if !ok || !equalSecret(q.Get("state"), f.State) {
			a.log.Info("web: a sign-in callback without this browser's sign-in under way (state)", "remote", r.RemoteAddr)
			pg.signIn(w, r, http.StatusBadRequest, "This sign-in did not start in this browser, or took more than 10 minutes. Sign in again.", "")
			return
		}
		if e := q.Get("error"); e != "" {
			a.log.Info("web: the identity provider refused a sign-in", "error", e, "remote", r.RemoteAddr)
			pg.signIn(w, r, http.StatusUnauthorized, "The identity provider did not sign you in ("+truncate(e, 60)+"). Sign in again, or ask whoever runs it.", "")
			return
		}
		in, err := a.oidc.finish(r.Context(), f, q.Get("code"))
		if err != nil {
			a.oidcProblem(w, r, pg, err)
			return
		}
		name := a.oidc.name(in.claims)
		if name == "" {
			a.log.Warn("web: the identity provider's ID token names no operator", "claims", strings.Join(a.oidc.cfg.NameClaims, ","))
			pg.signIn(w, r, http.StatusForbidden, "The identity provider signed you in but gave no name this UI can record ("+strings.Join(a.oidc.cfg.NameClaims, " or ")+"). Ask whoever runs this UI.", "")
			return
		}
		role := a.oidc.role(in.claims)
		if b := a.operatorBook(); b != nil && b.holds(name) {
			a.log.Warn("web: the identity provider names a named operator; not signed in", "operator", name)
			pg.signIn(w, r, http.StatusForbidden, "The identity provider names you “"+truncate(name, 60)+"”, an operator who signs in here with a secret: one name is one person here. Ask whoever runs this UI.", "")
			return
		}
		at, err := a.atProvider(r.Context(), name, role, in)
		if err != nil {
			pg.signIn(w, r, http.StatusForbidden, "The identity provider names you “"+truncate(name, 60)+"”, a name another of its accounts already goes by here: one name is one person here. Ask whoever runs this UI.", "")
			return
		}
		if f.Handoff != "" {
			a.bindHandoff(w, r, pg, f, name, role, at)
			return
		}
		id, err := a.issueWith(r.Context(), a.oidcKey, name, role, r.UserAgent(), at)
		if err != nil {
			pg.internalError(w, r, fmt.Errorf("web: open a session: %w", err))
			return
		}
		a.log.Info("web: signed in with the identity provider", "operator", name, "role", role, "teams", strings.Join(a.oidc.teams(in.claims), ","))
		http.SetCookie(w, a.cookie(id))
		http.Redirect(w, r, a.base+f.Next, http.StatusSeeOther)
	}
}

// oidcProblem answers a sign-in the provider could not complete: 503
// when it did not answer (down, slow, misconfigured), 401 when it
// answered and the sign-in does not hold. The log says why; no token is
// in either.
func (a *auth) oidcProblem(w http.ResponseWriter, r *http.Request, pg *pages, err error) {
	if errors.Is(err, errProvider) {
		a.log.Warn("web: the identity provider did not answer", "err", err)
		w.Header().Set("Retry-After", "10")
		pg.signIn(w, r, http.StatusServiceUnavailable, "The identity provider at "+a.oidc.host()+" did not answer. Try again in a moment; if this goes on, tell whoever runs this UI.", "")
		return
	}
	a.log.Warn("web: a sign-in with the identity provider was refused", "err", err)
	pg.signIn(w, r, http.StatusUnauthorized, "The identity provider's answer did not hold up, so you are not signed in. Sign in again.", "")
}

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
