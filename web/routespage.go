package web

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/routes"
)

// Routes is the routes file in force (internal/routes.File): the
// table, the file's path and why its last change was refused.
type Routes interface {
	Table() *routes.Table
	Path() string
	Problem() error
}

// RoutingMetrics writes the routing's counts in the Prometheus text
// format (internal/routing.Metrics).
type RoutingMetrics interface {
	Write(w io.Writer)
}

// routePages is the Routes page's concern: the teams and routes in
// force, for an admin.
type routePages struct {
	*site
	routes Routes // nil: no routes file
	// operators are the named operators as they are now (the operators
	// file, read again as it changes).
	operators func() []Operator
	// people are those the identity provider signed in (nil: none).
	people *PeopleList
	// provider is the identity provider's host ("" without one).
	provider string
	// roleMap is, in words, how the provider's sign-ins get their roles.
	roleMap []string
}

func newRoutePages(st *site, deps Deps, cfg Config) *routePages {
	rp := &routePages{site: st, routes: deps.Routes, operators: func() []Operator { return cfg.Operators }, people: cfg.People}
	if o := cfg.OIDC; o != nil {
		signIn := newOIDCSignIn(*o, cfg.BasePath, cfg.Now) // with its defaults
		rp.provider, o = signIn.host(), &signIn.cfg
		for _, r := range Roles {
			for _, v := range o.Roles[r] {
				rp.roleMap = append(rp.roleMap, string(r)+": "+o.RolesClaim+" holds "+v)
			}
		}
		groups := slices.Sorted(maps.Keys(o.Teams))
		for _, g := range groups {
			rp.roleMap = append(rp.roleMap, "team "+o.Teams[g]+": "+o.RolesClaim+" holds "+g)
		}
	}
	if cfg.OperatorList != nil {
		rp.operators = cfg.OperatorList.Get
	}
	return rp
}

// teams are the names of the routes file's teams in force (none without
// a routes file): a question may be assigned to one.
func (p *routePages) teams() []string {
	if p == nil || p.routes == nil {
		return nil
	}
	return p.routes.Table().TeamNames()
}

// members are, by team, the named operators and the people the
// provider signed in who are in it.
func (p *routePages) members() map[string][]string {
	m := map[string][]string{}
	for _, op := range append(p.operators(), p.people.Operators()...) {
		for _, t := range op.Teams {
			if !slices.Contains(m[t], op.Name) {
				m[t] = append(m[t], op.Name)
			}
		}
	}
	return m
}

// operatorRows are the named operators with their roles and teams, then
// the people the provider signed in, with when they were last seen.
func (p *routePages) operatorRows() []view.OperatorRow {
	var out []view.OperatorRow
	for _, op := range p.operators() {
		out = append(out, view.OperatorRow{Name: op.Name, Role: string(op.role()), Teams: strings.Join(op.Teams, ", "), SignsIn: "with their own secret"})
	}
	for _, person := range p.people.Get() {
		role, ok := ParseRole(person.Role)
		if !ok {
			role = RoleViewer
		}
		out = append(out, view.OperatorRow{Name: person.Name, Role: string(role), Teams: strings.Join(person.Teams, ", "),
			SignsIn: "at " + p.provider + ", last seen " + person.LastSeen.UTC().Format("2 Jan 15:04 UTC")})
	}
	return out
}

// linked reports whether the pages drawn for r link to the Operators
// and routes page (routesURL says when).
func (p *routePages) linked(r *http.Request) bool {
	return p.routesURL(r) != ""
}

// routesURL is the Operators and routes page's address for the pages
// drawn for r ("": no link, for a role other than admin, or on a UI with
// neither sign-in nor a routes file, whose one operator is everyone).
func (p *site) routesURL(r *http.Request) string {
	if !(p.routes || p.signedIn) || !roleFrom(r.Context()).administers() {
		return ""
	}
	return strings.TrimSuffix(p.base, "/") + "/routes"
}

// handleRoutes is GET /routes: the teams and routes in force, and why a
// change of the file was refused when it was.
func handleRoutes(p *routePages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		opts := view.RoutesOptions{BasePath: p.base, Assets: p.assets, Theme: r.URL.Query().Get("theme"), SignedIn: p.signedIn,
			Operator: operatorFrom(r.Context()), Members: p.members(), Operators: p.operatorRows(), RoleMap: p.roleMap, Provider: p.provider != ""}
		var t *routes.Table
		if p.routes != nil {
			t, opts.Path = p.routes.Table(), p.routes.Path()
			if err := p.routes.Problem(); err != nil {
				opts.Problem = err.Error()
			}
		}
		buf, err := render.Routes(r.Context(), view.Routes(t, opts))
		if err != nil {
			p.internalError(w, r, err)
			return
		}
		writeHTML(w, http.StatusOK, buf)
	}
}
