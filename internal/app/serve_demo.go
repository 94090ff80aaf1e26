package app

import (
	"flag"
	"time"

	"github.com/aepforms/aepforms/internal/agent"
)

// demoConfig is --demo and the demo agent's pace.
type demoConfig struct {
	demo        bool
	demoEvery   time.Duration
	demoPending int
}

func (c *demoConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.BoolVar(&c.demo, "demo", e.boolean("AEPFORMS_DEMO"), "also run the demo agent against the relay; its expiring form is asked again after each timeout (env AEPFORMS_DEMO)")
	fs.DurationVar(&c.demoEvery, "demo-every", e.dur("AEPFORMS_DEMO_EVERY", 30*time.Second), "with --demo: ask one more question this often, 0 = never (env AEPFORMS_DEMO_EVERY)")
	fs.IntVar(&c.demoPending, "demo-max-pending", e.integer("AEPFORMS_DEMO_MAX_PENDING", agent.DefaultConfig().MaxExtra), "with --demo: most of its periodic questions left pending; an older one is dismissed first (env AEPFORMS_DEMO_MAX_PENDING)")
}

func (c *demoConfig) check(*flag.FlagSet, envDefaults) error {
	if err := notNegative("--demo-every", c.demoEvery); err != nil {
		return err
	}
	return atLeastOne("--demo-max-pending", c.demoPending)
}
