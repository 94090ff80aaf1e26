package app

import (
	"flag"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// claimConfig is the team inbox's claims ("I’m on it"): how long one
// holds without its operator's activity, and how often the claims other
// replicas (or this process before a restart) kept are read.
type claimConfig struct {
	claimIdle time.Duration // --claim-idle
	claimSync time.Duration // --claim-sync
}

func (c *claimConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.DurationVar(&c.claimIdle, "claim-idle", e.dur("AEPFORMS_CLAIM_IDLE", inbox.DefaultClaimIdle), "an operator's “I’m on it” on a question lapses after this long without their activity (typing an answer on it, or claiming it again); signing out or an answer ends it at once (env AEPFORMS_CLAIM_IDLE)")
	fs.DurationVar(&c.claimSync, "claim-sync", e.dur("AEPFORMS_CLAIM_SYNC", time.Second), "read the claims and assignments kept in the journal this often: those made on another replica sharing it reach this one's pages within it (env AEPFORMS_CLAIM_SYNC)")
}

func (c *claimConfig) check(*flag.FlagSet, envDefaults) error {
	if err := positive("--claim-idle", c.claimIdle); err != nil {
		return err
	}
	return positive("--claim-sync", c.claimSync)
}
