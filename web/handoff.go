package web

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/view"
)

// Signing in the panel inside an embedding console's frame, with the
// identity provider. Providers refuse to be framed, so the frame opens the
// sign-in in a window of its own; and a cookie that window is given lives
// in another jar than the frame's (the frame's cookies are partitioned by
// the console's site), so the window's sign-in is handed off to the frame:
//
//  1. The frame posts auth/handoff. It is given a hand-off cookie
//     (partitioned, HttpOnly, Config.HandoffMaxAge) holding a random secret, and
//     in the answer, readable by this UI's own script only, a ticket: the
//     secret's hash (the hand-off's id) with its expiry, signed.
//  2. The frame opens auth/popup, and gives the window the ticket by
//     postMessage, to this UI's origin only; the window takes it only from
//     the window that opened it, of this UI's origin, and posts it to
//     auth/popup (same-origin posts only). No address carries it.
//  3. The window signs in at the provider (its flow carries the
//     hand-off's id); the callback opens the operator's session under the
//     id, the hash of the frame's secret, and shows who signed in.
//  4. The frame posts auth/handoff/redeem with its hand-off cookie: the
//     session its secret opens is ended and a new one opened in its place,
//     whose cookie the frame is given. The hand-off cookie is cleared.
//
// Another browser cannot redeem a hand-off: it lacks the frame's cookie.
// A ticket sent to someone else (to sign them in for the sender's frame)
// signs no one in: the window takes a ticket only from the panel that
// opened it, and this UI's script gives it only the ticket of its own
// hand-off; a page of another site cannot post one.

// handoffCookie holds a panel frame's hand-off under way.
const handoffCookie = "aepforms_handoff"

// handoff is what the hand-off cookie holds: the frame's secret (the
// session's cookie id the window's sign-in opens), where the frame goes
// once signed in, and when the hand-off ends.
type handoff struct {
	Secret  string `json:"s"`
	Next    string `json:"x"`
	Expires int64  `json:"e"` // Unix seconds
}

// id is the hand-off's id: the hash of its secret, the id the store keeps
// the session the window opens for the frame under.
func (h handoff) id() string { return hashSessionID(h.Secret) }

// handoffCookieFor is the hand-off cookie of h (nil clears it): the
// frame's, so SameSite=None and Partitioned as the session cookie there,
// HttpOnly, under auth/handoff only.
func (a *auth) handoffCookieFor(h *handoff) *http.Cookie {
	c := &http.Cookie{Name: handoffCookie, Path: a.base + "auth/handoff", HttpOnly: true, Secure: a.secure,
		SameSite: http.SameSiteNoneMode, Partitioned: true, MaxAge: -1}
	if h != nil {
		b, _ := json.Marshal(h)
		payload := base64.RawURLEncoding.EncodeToString(b)
		c.Value, c.MaxAge = payload+"."+a.sign("handoff "+payload), int(a.handoffMaxAge/time.Second)
	}
	return c
}

// handoffOf reads the request's hand-off cookie: false when there is none
// or it is not this UI's. Its expiry is the caller's to check.
func (a *auth) handoffOf(r *http.Request) (handoff, bool) {
	var h handoff
	ck, err := r.Cookie(handoffCookie)
	if err != nil {
		return h, false
	}
	payload, sig, ok := strings.Cut(ck.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.sign("handoff "+payload))) {
		return h, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &h) != nil || h.Secret == "" {
		return h, false
	}
	return h, true
}

// ticket is the hand-off's id and expiry, signed: what the frame gives
// its window to sign in for.
func (a *auth) ticket(h handoff) string {
	body := h.id() + "." + strconv.FormatInt(h.Expires, 36)
	return body + "." + a.sign("handoff ticket "+body)
}

// checkTicket returns the id and expiry of a ticket this UI signed; false
// when it did not, or the hand-off has ended.
func (a *auth) checkTicket(t string) (id string, expires int64, ok bool) {
	i := strings.LastIndexByte(t, '.')
	if i < 0 || !hmac.Equal([]byte(t[i+1:]), []byte(a.sign("handoff ticket "+t[:i]))) {
		return "", 0, false
	}
	id, exp, _ := strings.Cut(t[:i], ".")
	expires, err := strconv.ParseInt(exp, 36, 64)
	if err != nil || a.now().Unix() > expires {
		return "", 0, false
	}
	return id, expires, true
}

// sameOrigin reports whether a browser sent r from this UI's own pages:
// Sec-Fetch-Site same-origin, or, from a browser that does not send it,
// an Origin of this host. The hand-off's posts take nothing else, not
// even from an embedding console trusted with answers.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	u, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && u.Host != "" && u.Host == r.Host
}

// handoffAnswer is the JSON a hand-off's posts are answered with.
type handoffAnswer struct {
	// State is "started" (Ticket is the window's), "pending" (no sign-in
	// yet), "signed-in" (Next is where to go), "expired" (past
	// Config.HandoffMaxAge) or "none" (the browser did not send the hand-off
	// cookie: it refused it, or never started one).
	State  string `json:"state"`
	Ticket string `json:"ticket,omitempty"`
	Next   string `json:"next,omitempty"`
}

func writeHandoff(w http.ResponseWriter, status int, ans handoffAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ans)
}

// refuseCrossSite answers a hand-off post from anywhere but this UI's own
// pages.
func refuseCrossSite(w http.ResponseWriter) {
	http.Error(w, "Refused: a sign-in for the panel is started only from the panel's own page.", http.StatusForbidden)
}

// handleHandoffStart starts a frame's hand-off (step 1): the cookie and
// the window's ticket, returning to ?next= once signed in.
func handleHandoffStart(a *auth) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			refuseCrossSite(w)
			return
		}
		h := handoff{Secret: randomText(32), Next: safeNext(r.URL.Query().Get("next")), Expires: a.now().Add(a.handoffMaxAge).Unix()}
		http.SetCookie(w, a.handoffCookieFor(&h))
		writeHandoff(w, http.StatusOK, handoffAnswer{State: "started", Ticket: a.ticket(h)})
	}
}

// handleSignInPopup shows the window a frame opens (step 2), which waits
// for its ticket from the frame.
func handleSignInPopup(a *auth, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := view.SignIn(pg.base, pg.assets, "", "")
		v.Page.Title = "Sign in to the panel · aepforms"
		v.Provider = a.oidc.host()
		v.PopupWaitMS = pg.signInWait.Milliseconds()
		buf, err := render.SignInPopup(r.Context(), v, pg.base+"auth/popup")
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		// The window's form posts here and is sent on to the provider:
		// its page's form-action allows the provider's sign-in too.
		if to := a.oidc.authOrigin(r.Context()); to != "" {
			csp := w.Header().Get("Content-Security-Policy")
			w.Header().Set("Content-Security-Policy", strings.Replace(csp, "form-action 'self'", "form-action 'self' "+to, 1))
		}
		w.Header().Set("Cache-Control", "no-store")
		writeHTML(w, http.StatusOK, buf)
	}
}

// handlePopupStart goes on from the window to the provider with the
// frame's ticket (step 2's post): a sign-in whose flow carries the
// hand-off. A ticket this UI did not sign, or past its time, is refused.
func handlePopupStart(a *auth, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			refuseCrossSite(w)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The sign-in window's form could not be read.", http.StatusBadRequest)
			return
		}
		id, expires, ok := a.checkTicket(r.PostForm.Get("handoff"))
		if !ok {
			a.log.Info("web: a sign-in window with no hand-off of this UI's, or an ended one", "remote", r.RemoteAddr)
			pg.signIn(w, r, http.StatusBadRequest, "This sign-in window's sign-in has ended, or was not started by the panel. Close this window and sign in from the panel again.", "")
			return
		}
		f := a.newFlow("")
		f.Handoff, f.HandoffExpires = id, expires
		a.startFlow(w, r, pg, f)
	}
}

// bindHandoff ends the window's sign-in for the frame (step 3): the
// operator's session is opened under the hand-off's id, for the frame to
// redeem, and the window says who signed in. The window itself is not
// signed in.
func (a *auth) bindHandoff(w http.ResponseWriter, r *http.Request, pg *pages, f oidcFlow, name string, role Role, at atProvider) {
	if a.now().Unix() > f.HandoffExpires {
		pg.signIn(w, r, http.StatusBadRequest, "This sign-in took more than "+view.DurationWords(a.handoffMaxAge)+", and the panel no longer waits for it. Close this window and sign in from the panel again.", "")
		return
	}
	// A window that signed in for this hand-off before is replaced.
	if err := a.store.DeleteSession(r.Context(), f.Handoff); err != nil {
		pg.internalError(w, r, fmt.Errorf("web: replace a hand-off's session: %w", err))
		return
	}
	if err := a.issueAt(r.Context(), f.Handoff, a.oidcKey, name, role, r.UserAgent(), at); err != nil {
		pg.internalError(w, r, fmt.Errorf("web: open a hand-off's session: %w", err))
		return
	}
	// Not redeemed within a.handoffMaxAge, it is idle past its expiry, and
	// the next sign-in's clean-up ends it.
	if err := a.store.TouchSession(r.Context(), f.Handoff, a.now().Add(a.handoffMaxAge-a.idle)); err != nil {
		pg.internalError(w, r, fmt.Errorf("web: bound a hand-off's session: %w", err))
		return
	}
	a.log.Info("web: signed in with the identity provider for a panel's frame", "operator", name, "role", role)
	v := view.SignIn(pg.base, pg.assets, "", "").Page
	v.Title = "Signed in · aepforms"
	buf, err := render.SignInPopupDone(r.Context(), v, name, string(role))
	if err != nil {
		pg.internalError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeHTML(w, http.StatusOK, buf)
}

// handleHandoffRedeem picks up the window's sign-in in the frame (step
// 4), with the frame's hand-off cookie: 200 and a session cookie of its
// own when the window has signed in, 202 while it has not, 410 past the
// hand-off's time, 400 without the cookie.
func handleHandoffRedeem(a *auth) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			refuseCrossSite(w)
			return
		}
		h, ok := a.handoffOf(r)
		if !ok {
			writeHandoff(w, http.StatusBadRequest, handoffAnswer{State: "none"})
			return
		}
		if a.now().Unix() > h.Expires {
			http.SetCookie(w, a.handoffCookieFor(nil))
			if err := a.store.DeleteSession(r.Context(), h.id()); err != nil {
				a.log.Warn("web: an ended hand-off's session could not be removed", "err", err)
			}
			writeHandoff(w, http.StatusGone, handoffAnswer{State: "expired"})
			return
		}
		s, ok, err := a.session(r.Context(), h.Secret)
		if err != nil {
			a.log.Error("web: a hand-off could not be checked", "err", err)
			http.Error(w, "The sign-in could not be checked. Try again in a moment.", http.StatusServiceUnavailable)
			return
		}
		if !ok {
			writeHandoff(w, http.StatusAccepted, handoffAnswer{State: "pending"})
			return
		}
		// Once: the window's session ends, and the frame's own begins. Of
		// redeemings racing for it, only the one that ended it goes on;
		// to the others it is as if the window had not signed in.
		role, _ := a.sessionRole(s)
		taken, err := a.store.TakeSession(r.Context(), s.IDHash)
		if err != nil {
			handoffFailed(a, w, fmt.Errorf("web: end a hand-off's session: %w", err))
			return
		}
		if !taken {
			writeHandoff(w, http.StatusAccepted, handoffAnswer{State: "pending"})
			return
		}
		id, err := a.issueWith(r.Context(), a.oidcKey, s.Operator, role, r.UserAgent(), atProvider{subject: s.Subject, refresh: s.Refresh})
		if err != nil {
			handoffFailed(a, w, fmt.Errorf("web: open a session: %w", err))
			return
		}
		a.log.Info("web: a panel's frame picked up its window's sign-in", "operator", s.Operator, "role", role)
		http.SetCookie(w, a.handoffCookieFor(nil))
		http.SetCookie(w, a.cookie(id))
		writeHandoff(w, http.StatusOK, handoffAnswer{State: "signed-in", Next: a.base + h.Next})
	}
}

// handoffFailed logs err and answers a generic 500.
func handoffFailed(a *auth, w http.ResponseWriter, err error) {
	a.log.Error("web: a hand-off failed", "err", err)
	http.Error(w, "Something went wrong on our side. The error was logged.", http.StatusInternalServerError)
}
