package rules

import (
	"context"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Cut-off claims.
//
// A rule's claim is an answer owed. A process that stops between a claim
// and its answer's record (a kill, a crash, power lost) leaves the claim,
// with the command id it chose, and no answer; every other try finds the
// request claimed and leaves it. So the Runner answers such a claim
// itself, under the claim's command id, once the claim counts as cut off
// (Config.ClaimLapse; at once for a claim made before this process on a
// journal only it opens) and the request is in the inbox, open and
// unanswered: after a restart the restarted process does, and among
// replicas whichever looks first after the lapse (the journal records
// one answer per command id and request, so two replicas adopting the
// same claim send it once).

// watchOrphans answers the cut-off claims every RetryInterval until ctx
// ends.
func (r *Runner) watchOrphans(ctx context.Context) {
	if !r.Enabled() {
		return
	}
	t := time.NewTicker(r.cfg.RetryInterval)
	defer t.Stop()
	for {
		r.answerOrphans(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// orphanCutoff is when a claim without an answer must have been made by
// to count as cut off at now.
func (r *Runner) orphanCutoff(now time.Time) time.Time {
	cut := now.Add(-r.cfg.ClaimLapse)
	if r.cfg.Exclusive && r.started.After(cut) {
		cut = r.started
	}
	return cut
}

// answerOrphans answers each cut-off claim whose request is in the inbox,
// open and unanswered, with its rule's answer under the claim's command
// id. A claim whose request closed is left, for good; one whose request
// has not come yet, or has an answer on its way, is looked at again.
func (r *Runner) answerOrphans(ctx context.Context) {
	uses, err := r.store.OrphanRuleUses(ctx, r.orphanCutoff(r.cfg.Now()))
	if err != nil {
		r.warn(ctx, "rules: the claims left without an answer could not be read; looked at again later", "err", err)
		return
	}
	for _, u := range uses {
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		done := r.orphans[u.CommandID]
		r.mu.Unlock()
		if done {
			continue
		}
		c, ok := r.in.Card(inbox.CardID(u.Card))
		if !ok {
			continue // not here (yet): the feed may bring it
		}
		vd := c.Verdict(r.cfg.Now(), inbox.Viewer{})
		if vd.Settled {
			r.decided(u.CommandID) // closed: answered otherwise, or gone
			continue
		}
		if !vd.Announce {
			continue // an answer on its way, or a lock for now: looked at again
		}
		rule, ok, err := r.store.Rule(ctx, u.Rule)
		if err != nil {
			r.warn(ctx, "rules: a cut-off claim's rule could not be read; looked at again later", "rule", u.Rule, "err", err)
			continue
		}
		if !ok {
			r.decided(u.CommandID)
			continue
		}
		if rule.State != store.RuleActive {
			continue // paused or deleted since: it answers nothing now
		}
		r.cfg.Logger.Info("rules: answering a request whose claim was cut off before its answer", "rule", rule.ID, "card", u.Card, "command", u.CommandID)
		if err := r.send(ctx, rule, c, u, true); err == nil {
			r.decided(u.CommandID)
		}
	}
}

// decided notes a cut-off claim this Runner is done with.
func (r *Runner) decided(commandID string) {
	r.mu.Lock()
	r.orphans[commandID] = true
	r.mu.Unlock()
}
