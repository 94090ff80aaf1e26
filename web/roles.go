package web

import (
	"context"
	"net/http"
	"strings"
)

// Role is what a signed-in operator may do. The server decides it from
// the sign-in (the identity provider's groups, the operators file's line,
// or admin for the one shared secret) and every route checks it.
type Role string

// Roles, from the least allowed.
const (
	// RoleViewer sees the inbox, a question's page, History and Rules,
	// and answers nothing.
	RoleViewer Role = "viewer"
	// RoleAnswerer also answers (one card, a batch, from a notification)
	// and may pause a rule (a brake anyone can pull).
	RoleAnswerer Role = "answerer"
	// RoleAdmin also makes, resumes, widens and deletes rules.
	RoleAdmin Role = "admin"
)

// Roles are the roles, from the least allowed.
var Roles = []Role{RoleViewer, RoleAnswerer, RoleAdmin}

// ParseRole reads a role's name (case-insensitive); false for none.
func ParseRole(s string) (Role, bool) {
	for _, r := range Roles {
		if strings.EqualFold(s, string(r)) {
			return r, true
		}
	}
	return "", false
}

// answers reports whether the role may send answers.
func (r Role) answers() bool { return r == RoleAnswerer || r == RoleAdmin }

// administers reports whether the role may make, resume, widen and
// delete rules.
func (r Role) administers() bool { return r == RoleAdmin }

// roleFrom is the signed-in operator's role; a UI without sign-in (on
// loopback, no secret) is its one operator's, who may do everything.
func roleFrom(ctx context.Context) Role {
	if r, ok := ctx.Value(roleKey).(Role); ok {
		return r
	}
	return RoleAdmin
}

// withRole puts the operator's role in ctx.
func withRole(ctx context.Context, r Role) context.Context { return context.WithValue(ctx, roleKey, r) }

// roleMapping is o's roles claim and mapping in one text: sessions
// opened through the provider are keyed on it, so changing who holds
// which role ends them.
func roleMapping(o *OIDC) string {
	var b strings.Builder
	b.WriteString(o.RolesClaim)
	for _, r := range Roles {
		for _, v := range o.Roles[r] {
			b.WriteString("\n" + string(r) + "=" + v)
		}
	}
	return b.String()
}

// requireRole lets through the requests of an operator whose role may
// (may); any other gets 403 and the words of what, the handler not run,
// so a hand-made post sends nothing.
func requireRole(may func(Role) bool, what string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			role := roleFrom(r.Context())
			if !may(role) {
				http.Error(w, "Your role here is "+string(role)+": it does not "+what+". Nothing was sent. Ask whoever runs this UI for another role.", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
