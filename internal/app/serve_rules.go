package app

import (
	"flag"
	"time"

	"github.com/aepforms/aepforms/internal/rules"
)

// rulesConfig is the standing answers' bounds: how many, how fast, and
// how a journal failure is retried.
type rulesConfig struct {
	ruleMaxRate    int           // --rule-max-rate
	ruleRateWindow time.Duration // --rule-rate-window
	ruleMax        int           // --rule-max
	ruleRetry      time.Duration // --rule-retry-interval
}

func (c *rulesConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.IntVar(&c.ruleMaxRate, "rule-max-rate", e.integer("AEPFORMS_RULE_MAX_RATE", rules.DefaultMaxRate), "a rule (standing answer) that would answer more than this many requests within --rule-rate-window pauses itself instead, and the Rules page says why: a runaway agent asking the same thing in a loop (env AEPFORMS_RULE_MAX_RATE)")
	fs.IntVar(&c.ruleMax, "rule-max", e.integer("AEPFORMS_RULE_MAX", rules.DefaultMaxRules), "the most rules (standing answers) kept at once, paused ones included, expired ones not: making one more is refused until one is deleted or expires (env AEPFORMS_RULE_MAX)")
	fs.DurationVar(&c.ruleRateWindow, "rule-rate-window", e.dur("AEPFORMS_RULE_RATE_WINDOW", rules.DefaultRateWindow), "the window --rule-max-rate counts a rule's answers in (env AEPFORMS_RULE_RATE_WINDOW)")
	fs.DurationVar(&c.ruleRetry, "rule-retry-interval", e.dur("AEPFORMS_RULE_RETRY_INTERVAL", rules.DefaultRetryInterval), "when the journal fails a rule's look at a request (a database blip), the request is looked at again after between half of this and this (spread, so one outage's requests are not all read at once), the wait doubling while it keeps failing (up to 32 times this); meanwhile it waits on the page as any other (env AEPFORMS_RULE_RETRY_INTERVAL)")
}

func (c *rulesConfig) check(*flag.FlagSet, envDefaults) error {
	if err := positive("--rule-retry-interval", c.ruleRetry); err != nil {
		return err
	}
	if err := atLeastOne("--rule-max-rate", c.ruleMaxRate); err != nil {
		return err
	}
	if err := atLeastOne("--rule-max", c.ruleMax); err != nil {
		return err
	}
	return positive("--rule-rate-window", c.ruleRateWindow)
}
