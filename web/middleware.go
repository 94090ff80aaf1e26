package web

import (
	"context"
	"net"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/go-chi/chi/v5/middleware"
)

// ctxKey is the type of this package's request-context keys.
type ctxKey int

const (
	operatorKey     ctxKey = iota
	sessionKeyCtx          // the signed-in session's id hash ("" for Bearer)
	roleKey                // the signed-in operator's Role
	bearerDeviceKey        // a Bearer request's device session (bearerDeviceOf)
	teamsKey               // the signed-in operator's teams, comma-separated
)

// operatorFrom returns the signed-in operator's name ("" when unknown).
func operatorFrom(ctx context.Context) string {
	name, _ := ctx.Value(operatorKey).(string)
	return name
}

// teamsFrom returns the signed-in operator's teams, comma-separated (""
// when none or unknown).
func teamsFrom(ctx context.Context) string {
	teams, _ := ctx.Value(teamsKey).(string)
	return teams
}

// sessionFrom returns the signed-in session's id hash ("" for Bearer or
// no sign-in).
func sessionFrom(ctx context.Context) string {
	h, _ := ctx.Value(sessionKeyCtx).(string)
	return h
}

// securityHeaders sets a strict CSP (no inline script or style) and the
// other defensive headers on every response.
func (s *server) securityHeaders(next http.Handler) http.Handler {
	ancestors := "'none'"
	if len(s.cfg.EmbedOrigins) > 0 {
		ancestors = "'self' " + strings.Join(s.cfg.EmbedOrigins, " ")
	}
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; worker-src 'self'; manifest-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors " + ancestors
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if len(s.cfg.EmbedOrigins) == 0 {
			h.Set("X-Frame-Options", "DENY")
		}
		next.ServeHTTP(w, r)
	})
}

// hostCheck refuses requests whose Host is not a loopback name (or one
// given with --allow-host) when no operator secret is set, so a page
// using DNS rebinding cannot reach an open UI.
func (s *server) hostCheck(next http.Handler) http.Handler {
	if s.cfg.secured() {
		return next
	}
	allowed := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	for _, h := range s.cfg.AllowHosts {
		allowed[hostOnly(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[hostOnly(r.Host)] {
			http.Error(w, "This UI answers only on localhost. Use http://127.0.0.1 or start aepforms with --allow-host or an operator token.", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly is a Host header's (or --allow-host value's) name, without the
// port and IPv6 brackets, lower-cased.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// crossOrigin refuses cross-site state-changing requests; embed origins
// are trusted.
func (s *server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	for _, o := range s.cfg.EmbedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			s.cfg.Logger.Error("web: embed origin not usable", "origin", o, "err", err)
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Cross-site request refused: answers may only be posted from this UI's own pages.", http.StatusForbidden)
	}))
	return cop.Handler(next)
}

// recoverer turns a panic into a logged 500 with a generic message.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.cfg.Logger.Error("web: panic", "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()), "panic", v, "stack", string(debug.Stack()))
				http.Error(w, "Something went wrong on our side. The error was logged.", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
