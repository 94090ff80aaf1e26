package app

import (
	"flag"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/web"

	"github.com/aepforms/aepforms/internal/routes"
)

// routesConfig is where questions go: the routes file (teams, their
// chat channels and escalation) and how often it is looked at.
type routesConfig struct {
	routesFile   string        // --routes
	routesReload time.Duration // --routes-reload
	routesTick   time.Duration // --routes-tick
	// routes is the routes file read at start (nil: none); serve's
	// first step reads it.
	routes *routes.File
}

func (c *routesConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.StringVar(&c.routesFile, "routes", e.env("AEPFORMS_ROUTES"), "a routes file (JSON): each question goes to the team of the first route it matches, only that team's operators and chat webhook are notified, and it is reminded and escalated as the team's policy says; read again when it changes, a change that does not read is refused and the last good one kept; none: every operator is notified of every question (env AEPFORMS_ROUTES)")
	fs.DurationVar(&c.routesTick, "routes-tick", e.dur("AEPFORMS_ROUTES_TICK", time.Second), "how often the open questions are looked at for a reminder or an escalation due (--routes) (env AEPFORMS_ROUTES_TICK)")
	fs.DurationVar(&c.routesReload, "routes-reload", e.dur("AEPFORMS_ROUTES_RELOAD", 2*time.Second), "how often the --routes file is looked at for changes (env AEPFORMS_ROUTES_RELOAD)")
}

func (c *routesConfig) check(*flag.FlagSet, envDefaults) error {
	if err := positive("--routes-tick", c.routesTick); err != nil {
		return err
	}
	return positive("--routes-reload", c.routesReload)
}

// teamMembers is who each team holds, from the operators file's lines as
// they are now (ops, read at each question: the file is read again when
// it changes): the func of a team reports its operators (any case, as
// History shows names).
func teamMembers(ops func() []web.Operator) func(team string) func(operator string) bool {
	return func(team string) func(string) bool {
		names := map[string]bool{}
		for _, op := range ops() {
			if slices.Contains(op.Teams, team) {
				names[strings.ToLower(op.Name)] = true
			}
		}
		return func(op string) bool { return names[strings.ToLower(op)] }
	}
}

// cardLink is the address of a card's own page under base (the UI's
// public address and base path, "https://forms.example.com/forms/").
func cardLink(base string) func(c inbox.Card) string {
	return func(c inbox.Card) string {
		return base + "cards/" + url.PathEscape(string(c.ID)) + "/page"
	}
}
