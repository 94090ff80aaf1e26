package app

import (
	"flag"
	"time"

	"github.com/aepforms/aepforms/internal/routes"
)

// routesConfig is where questions go: the routes file (teams, their
// chat channels and escalation) and how often it is looked at.
type routesConfig struct {
	routesFile   string        // --routes
	routesReload time.Duration // --routes-reload
	// routes is the routes file read at start (nil: none); serve's
	// first step reads it.
	routes *routes.File
}

func (c *routesConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.StringVar(&c.routesFile, "routes", e.env("AEPFORMS_ROUTES"), "a routes file (JSON): each question goes to the team of the first route it matches, only that team's operators and chat webhook are notified, and it is reminded and escalated as the team's policy says; read again when it changes, a change that does not read is refused and the last good one kept; none: every operator is notified of every question (env AEPFORMS_ROUTES)")
	fs.DurationVar(&c.routesReload, "routes-reload", e.dur("AEPFORMS_ROUTES_RELOAD", 2*time.Second), "how often the --routes file is looked at for changes (env AEPFORMS_ROUTES_RELOAD)")
}

func (c *routesConfig) check(*flag.FlagSet, envDefaults) error {
	return positive("--routes-reload", c.routesReload)
}
