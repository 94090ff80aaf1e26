package view

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/aepforms/aepforms/internal/routes"
)

// RoutesOptions are what the Routes page (GET /routes) is drawn with.
type RoutesOptions struct {
	BasePath string
	Assets   Assets
	Theme    string
	SignedIn bool
	Operator string
	// Path is the routes file's path ("" when serve has none: the page
	// says every operator is notified of every question).
	Path string
	// Problem is why the file as it now is was refused ("" when the
	// routes in force are the file's).
	Problem string
	// Members are, by team, the operators the operators file puts in it.
	Members map[string][]string
	// Operators are the named operators as they are now (the operators
	// file) and the people the identity provider signed in, with their
	// roles and teams.
	Operators []OperatorRow
	// RoleMap is, in words, how the identity provider's sign-ins get
	// their roles ("admin: group aepforms-admins"); none without OIDC.
	RoleMap []string
	// Provider is true when operators sign in at an identity provider.
	Provider bool
}

// OperatorRow is one operator as the Operators page lists them: a
// named one or a person the identity provider signed in.
type OperatorRow struct {
	Name, Role, Teams string
	// SignsIn says how, in words: "with their own secret", or "at
	// login.example.com, last seen 7 Dec 19:40 UTC".
	SignsIn string
}

// RoutesView is the Routes page: the teams and the routes in force.
type RoutesView struct {
	Page    PageView
	Heading string
	Intro   string
	Problem string
	// Operators and RoleMap are who may do what (RoutesOptions').
	Operators []OperatorRow
	RoleMap   []string
	// Provider is RoutesOptions'.
	Provider bool
	// Off is true when serve has no routes file.
	Off    bool
	Teams  []TeamRow
	Routes []RouteRow
}

// TeamRow is one team as the Routes page lists it.
type TeamRow struct {
	Name string
	// Webhook is the chat webhook's origin only (its path holds a
	// secret); "" when the team has none.
	Webhook string
	// Remind and Escalate in words ("" when never); EscalateTo the team.
	Remind, Escalate, EscalateTo string
	Members                      []string
}

// RouteRow is one route: its place, what it matches in words, its team.
type RouteRow struct {
	N     int
	Match string
	Team  string
}

// Routes builds the Routes page of table t (nil: no routes file).
func Routes(t *routes.Table, opts RoutesOptions) RoutesView {
	base := root(opts.BasePath)
	v := RoutesView{
		Page:      subPage("Operators and routes", base, opts.Assets, opts.Theme, opts.SignedIn, opts.Operator),
		Heading:   "Operators and routes",
		Problem:   Marked(opts.Problem),
		Off:       opts.Path == "",
		Operators: opts.Operators,
		Provider:  opts.Provider,
		RoleMap:   opts.RoleMap,
	}
	for i := range v.Operators {
		v.Operators[i].Name = Marked(v.Operators[i].Name)
	}
	v.Page.RoutesURL = base + "/routes"
	if v.Off {
		v.Intro = "This UI has no routes file: every question notifies every operator. Start serve with --routes FILE to send each question to a team."
		return v
	}
	v.Intro = "Each question goes to the team of the first route it matches; only that team's operators and chat channel are notified. " +
		"Reminders and escalations never answer anything. The file, " + opts.Path + ", is read again when it changes."
	if opts.Problem != "" {
		v.Page.Title = "Error: Operators and routes"
	}
	for _, tm := range t.Teams() {
		row := TeamRow{Name: tm.Name, Webhook: webhookOrigin(tm.Webhook), EscalateTo: tm.EscalateTo, Members: opts.Members[tm.Name]}
		if tm.Remind > 0 {
			row.Remind = formatDuration(tm.Remind)
		}
		if tm.Escalate > 0 {
			row.Escalate = formatDuration(tm.Escalate)
		}
		v.Teams = append(v.Teams, row)
	}
	for i, r := range t.Routes() {
		v.Routes = append(v.Routes, RouteRow{N: i + 1, Match: Marked(routeWords(r)), Team: r.Team})
	}
	return v
}

// routeWords says what a route matches: "agent claude-code, kind
// permission", or "every question".
func routeWords(r routes.Route) string {
	var parts []string
	for _, p := range [][2]string{{"agent", r.Agent}, {"kind", r.Kind}, {"session", r.SessionLabel}, {"tool", r.Tool}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+strconv.Quote(p[1]))
		}
	}
	if len(parts) == 0 {
		return "every question"
	}
	return strings.Join(parts, ", ")
}

// webhookOrigin is a webhook URL's origin and an ellipsis: the rest is
// its secret.
func webhookOrigin(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil {
		return "…"
	}
	return p.Scheme + "://" + p.Host + "/…"
}
