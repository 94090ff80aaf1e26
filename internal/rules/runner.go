package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Defaults of the rate pause: a rule answering more than DefaultMaxRate
// requests within DefaultRateWindow pauses itself (a runaway agent loop
// asking the same thing over and over).
const (
	DefaultMaxRate    = 30
	DefaultRateWindow = time.Minute
)

// DefaultRetryInterval is how long the Runner waits before it looks at a
// request again after the journal failed it (--rule-retry-interval); the
// wait doubles while the journal keeps failing, up to maxRetryWaits
// times the interval, and each request waits between half of it and the
// whole (spread).
const DefaultRetryInterval = 2 * time.Second

const maxRetryWaits = 32

// DefaultMaxRules is the most rules kept at once (not deleted) by
// default (--rule-max): one more is refused at its making.
const DefaultMaxRules = 500

// Store is what the rules keep in the journal (sqldb.RuleBook). The
// Runner reads it for every request, never a copy of its own, so a rule
// paused or deleted on one replica stops on every replica at once.
type Store interface {
	CreateRule(ctx context.Context, r store.Rule, max int) error
	RuleCount(ctx context.Context, now time.Time) (int, error)
	Rules(ctx context.Context) ([]store.Rule, error)
	ActiveRules(ctx context.Context, now time.Time) ([]store.Rule, error)
	Rule(ctx context.Context, id string) (store.Rule, bool, error)
	SetRuleState(ctx context.Context, id, state, reason, by string, at time.Time) (bool, error)
	DeleteRule(ctx context.Context, id, by string, at time.Time) (bool, error)
	ClaimRuleUse(ctx context.Context, u store.RuleUse, now time.Time) (bool, error)
	ReleaseRuleUse(ctx context.Context, u store.RuleUse) error
	RuleUses(ctx context.Context, id string, since time.Time) (int, error)
	OrphanRuleUses(ctx context.Context, before time.Time) ([]store.RuleUse, error)
	RuleFromCard(ctx context.Context, card string) (store.Rule, bool, error)
	RuleAnswered(ctx context.Context, id string, n int) ([]store.RuleUseRecord, error)
	CarryRule(ctx context.Context, id, instance, by string, at time.Time) (bool, error)
}

// Inbox is what the Runner reads of the inbox, and what the answer
// service it answers through (the one every answer of the UI takes)
// reads and writes.
type Inbox interface {
	answer.Inbox
	Subscribe(buf int) *inbox.Subscription
	Cards(inbox.Query) []inbox.Card
	SetRuleMiss(id inbox.CardID, m *inbox.RuleMiss) bool
}

// Submitter queues a journaled answer on the respond path.
type Submitter interface {
	Submit(ctx context.Context, s inbox.Submission) error
}

// Config is the Runner's.
type Config struct {
	// MaxRate and RateWindow are the rate pause (--rule-max-rate,
	// --rule-rate-window): 0 takes the defaults.
	MaxRate    int
	RateWindow time.Duration
	// MaxRules is the most rules kept at once, not deleted (--rule-max):
	// 0 takes DefaultMaxRules.
	MaxRules int
	// RetryInterval is the first wait before a request the journal
	// failed (a rule read, the claim, the answer's record) is looked at
	// again (--rule-retry-interval; each request waits between half of
	// it and the whole): 0 takes DefaultRetryInterval.
	RetryInterval time.Duration
	// ClaimLapse is how old a claim whose answer the journal does not
	// hold must be to count as cut off (its process stopped between the
	// claim and the answer's record), when another replica may still be
	// about to record it (--lease): 0 takes store.DefaultLease. With
	// Exclusive (a journal only this process opens) every claim made
	// before the Runner was made counts as cut off at once.
	ClaimLapse time.Duration
	Exclusive  bool
	// Allowed reports whether an operator still has access (named
	// operators: still in the operators file); a rule whose maker has
	// not is paused. nil: everyone has.
	Allowed func(operator string) bool
	// PromptBytes is the cards' prompt budget (--prompt-bytes): a
	// request longer than a card shows is never answered by a rule. 0
	// takes DefaultPromptBytes.
	PromptBytes int
	// Claimant returns the instance the relay's roster names for the
	// one connection claiming session, "" when it names none (a rule
	// made knowing its connection then answers nothing). nil: none.
	Claimant func(ctx context.Context, session string) string
	// Connected reports whether the relay's roster names a live
	// connection of instance (any session): a request a rule matches in
	// all but its connection then comes from a second connection
	// claiming the agent's name at once, and its card says so. nil:
	// never known.
	Connected func(instance string) bool
	Now       func() time.Time
	Logger    *slog.Logger
}

// Runner answers each new request an active rule matches, through the
// inbox's journal-first path (the journal's one-live-answer index decides
// between replicas), records the use, counts it by rule, and pauses a
// rule that answers too fast or whose maker lost access.
type Runner struct {
	cfg   Config
	store Store
	in    Inbox
	sub   Submitter // nil: watch-only, no rule runs
	// answers begins, journals and queues a rule's answer: the path of
	// every answer the UI takes.
	answers *answer.Service

	started time.Time // when New made it (Config.Now)

	mu       sync.Mutex
	tried    map[inbox.CardID]bool
	answered map[string]int64 // by rule id
	retries  sync.WaitGroup   // the requests waiting to be tried again
	// orphans are the cut-off claims decided here (answered, or left for
	// good: the request closed or was answered otherwise), by command id.
	orphans map[string]bool
	// misses are, by rule id, the requests each matched in all but
	// their connection since it last answered one (Misses).
	misses map[string]Missed

	// version counts the rule changes made through this Runner's Store
	// (see Version).
	version atomic.Uint64
}

// New makes a Runner. sub nil is a watch-only UI: it makes and runs no
// rule.
func New(cfg Config, st Store, in Inbox, sub Submitter) *Runner {
	if cfg.MaxRate <= 0 {
		cfg.MaxRate = DefaultMaxRate
	}
	if cfg.RateWindow <= 0 {
		cfg.RateWindow = DefaultRateWindow
	}
	if cfg.MaxRules <= 0 {
		cfg.MaxRules = DefaultMaxRules
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClaimLapse <= 0 {
		cfg.ClaimLapse = store.DefaultLease
	}
	r := &Runner{cfg: cfg, in: in, sub: sub, started: cfg.Now(), tried: map[inbox.CardID]bool{}, answered: map[string]int64{},
		orphans: map[string]bool{}, misses: map[string]Missed{}, answers: answer.New(answer.Config{Inbox: in, Submitter: sub, Now: cfg.Now, Logger: cfg.Logger})}
	r.store = counted{Store: st, version: &r.version, stopped: r.forgetMisses}
	return r
}

// Enabled reports whether this UI makes and runs rules (not watch-only).
func (r *Runner) Enabled() bool { return r != nil && r.sub != nil }

// Config returns the Runner's settings, defaults filled in.
func (r *Runner) Config() Config { return r.cfg }

// Store returns where the rules are kept; a change made through it
// moves Version on.
func (r *Runner) Store() Store { return r.store }

// Version moves on after every rule made, paused, resumed, carried over or deleted
// through Store: what a page draws of a rule (its name on the cards it
// answered or was made from, deleted since) is as new as the Version it
// was drawn at, so the caches of drawn cards key on it. A change made by
// another replica on a shared journal does not move it.
func (r *Runner) Version() uint64 { return r.version.Load() }

// counted is a Store whose rule changes move version on, once written.
type counted struct {
	Store
	version *atomic.Uint64
	// stopped is told of a rule paused or deleted: the cards naming it
	// as the rule that missed them by their connection no longer do.
	stopped func(id string)
}

func (c counted) CreateRule(ctx context.Context, r store.Rule, max int) error {
	defer c.version.Add(1)
	return c.Store.CreateRule(ctx, r, max)
}

func (c counted) SetRuleState(ctx context.Context, id, state, reason, by string, at time.Time) (bool, error) {
	defer c.version.Add(1)
	changed, err := c.Store.SetRuleState(ctx, id, state, reason, by, at)
	if changed && state != store.RuleActive && c.stopped != nil {
		c.stopped(id)
	}
	return changed, err
}

func (c counted) CarryRule(ctx context.Context, id, instance, by string, at time.Time) (bool, error) {
	defer c.version.Add(1)
	return c.Store.CarryRule(ctx, id, instance, by, at)
}

func (c counted) DeleteRule(ctx context.Context, id, by string, at time.Time) (bool, error) {
	defer c.version.Add(1)
	changed, err := c.Store.DeleteRule(ctx, id, by, at)
	if changed && c.stopped != nil {
		c.stopped(id)
	}
	return changed, err
}

// Answered returns how many requests each rule answered from this
// process, by rule id (aepforms_rule_answers_total).
func (r *Runner) Answered() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.answered)
}

// Run follows the inbox from sub (made before the feed starts, so no
// request is missed) until ctx ends. When the inbox drops the
// subscription (a burst of requests overflowed its queue while rules were
// read and answers journaled), Run subscribes again and then looks at
// every card the inbox holds: the requests that arrived in the gap are
// answered like any other, and cards that left in it are forgotten.
func (r *Runner) Run(ctx context.Context, sub *inbox.Subscription) {
	defer r.Wait()
	var orphans sync.WaitGroup
	defer orphans.Wait()
	orphans.Go(func() { r.watchOrphans(ctx) })
	for {
		r.follow(ctx, sub)
		sub.Close()
		if ctx.Err() != nil {
			return
		}
		sub = r.in.Subscribe(256)
		r.catchUp(ctx)
	}
}

// catchUp observes every card of the inbox not tried yet (Observe tries
// each once), after the changes of a gap were lost, and keeps tried to
// the cards that are still there (their removals were lost too).
func (r *Runner) catchUp(ctx context.Context) {
	cards := r.in.Cards(inbox.Query{})
	held := make(map[inbox.CardID]bool, len(cards))
	for _, c := range cards {
		held[c.ID] = true
	}
	r.mu.Lock()
	maps.DeleteFunc(r.tried, func(id inbox.CardID, _ bool) bool { return !held[id] })
	r.mu.Unlock()
	for _, c := range cards {
		if ctx.Err() != nil {
			return
		}
		if !c.Verdict(r.cfg.Now(), inbox.Viewer{}).Settled {
			r.Observe(ctx, c)
		}
	}
}

func (r *Runner) follow(ctx context.Context, sub *inbox.Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case ch, ok := <-sub.C():
			if !ok {
				return
			}
			switch ch.Kind {
			case inbox.ChangeRemoved:
				r.mu.Lock()
				delete(r.tried, ch.Card)
				r.mu.Unlock()
			case inbox.ChangeAdded:
				if c, ok := r.in.Card(ch.Card); ok {
					r.Observe(ctx, c)
				}
			}
		}
	}
}

// Answers reports whether an active rule would answer card c now: Web
// Push does not announce a request a rule answers.
func (r *Runner) Answers(ctx context.Context, c inbox.Card) bool {
	if !r.Enabled() {
		return false
	}
	_, ok, _ := r.find(ctx, c, false)
	return ok
}

// Observe answers card c (a request just seen) by the first active rule
// that matches it, once per card.
func (r *Runner) Observe(ctx context.Context, c inbox.Card) {
	if !r.Enabled() {
		return
	}
	r.mu.Lock()
	seen := r.tried[c.ID]
	r.tried[c.ID] = true
	r.mu.Unlock()
	if seen {
		return
	}
	r.try(ctx, c, 0)
}

// Wait returns once no request is waiting to be tried again: each such
// wait ends when its context does, or with its try.
func (r *Runner) Wait() { r.retries.Wait() }

// try answers card c by the first active rule that matches it. When the
// journal fails that (a rule read, the claim, the answer's record), the
// request is not left to the operators for good: it is looked at again
// after a wait that doubles while the journal keeps failing (a database
// blip does not turn a standing answer off), until ctx ends or the
// request is answered, withdrawn or gone. Meanwhile it waits on the page
// as any other.
func (r *Runner) try(ctx context.Context, c inbox.Card, failed int) {
	rule, ok, err := r.find(ctx, c, true)
	if err == nil && ok {
		err = r.answer(ctx, rule, c)
	}
	if err == nil {
		return
	}
	wait := r.cfg.RetryInterval << min(failed, 5)
	wait = min(wait, maxRetryWaits*r.cfg.RetryInterval)
	// Spread: the requests one outage failed would otherwise all be
	// looked at again at the same instants (as many rule reads at once
	// as requests wait, on a database just back), so each waits between
	// half of its wait and the whole.
	wait = wait/2 + rand.N(wait/2+1)
	r.warn(ctx, err.Error()+"; the request waits for the operators, and is tried again in "+wait.String(), "card", string(c.ID), "failed", failed+1, "err", errors.Unwrap(err))
	if ctx.Err() != nil {
		return
	}
	r.retries.Add(1)
	go func() {
		defer r.retries.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		held := r.tried[c.ID] // forgotten: the card left the inbox
		r.mu.Unlock()
		if now, ok := r.in.Card(c.ID); held && ok && !now.Verdict(r.cfg.Now(), inbox.Viewer{}).Settled {
			r.try(ctx, now, failed+1)
		}
	}()
}

// journalError is a failure of the journal that leaves a request
// unanswered for now: Msg says what failed, in the log's words.
type journalError struct {
	Msg string
	Err error
}

func (e *journalError) Error() string { return e.Msg }
func (e *journalError) Unwrap() error { return e.Err }

// find returns the oldest active rule that matches c, if the card can be
// answered at all; an error when the journal failed the look. With act, a
// matching rule whose maker lost access or that answered too fast is
// paused on the way (and skipped).
func (r *Runner) find(ctx context.Context, c inbox.Card, act bool) (store.Rule, bool, error) {
	now := r.cfg.Now()
	if !c.Verdict(now, inbox.Viewer{}).Announce {
		// Not one to answer now (an answer on its way, or none may be
		// sent), or already answered from this UI: as a notification's.
		return store.Rule{}, false, nil
	}
	all, err := r.store.ActiveRules(ctx, now)
	if err != nil {
		return store.Rule{}, false, &journalError{"rules: could not be read", err}
	}
	var seen Seen
	if len(all) > 0 {
		seen = r.see(c)
	}
	asked := false
	var missed *store.Rule     // the oldest rule matching in all but the connection
	for _, rule := range all { // oldest first
		ok, why := Match(rule, c, seen, now)
		if !ok && why == whyInstance && !asked {
			// Only a request a rule matches in all else waits for the
			// roster to name its connection.
			seen.Instance, asked = r.claimant(ctx, c), true
			ok, why = Match(rule, c, seen, now)
		}
		if !ok || c.ReceivedAt.Before(since(rule)) {
			// Not matching, or asked before the rule was made or while
			// it was paused (looked at late: a catch-up, a busy
			// Runner): it stays for the operators.
			if !ok && why == whyInstance && missed == nil && !c.ReceivedAt.Before(since(rule)) {
				missed = &rule
			}
			continue
		}
		if r.cfg.Allowed != nil && !r.cfg.Allowed(rule.Maker) {
			if act {
				r.pause(ctx, rule, fmt.Sprintf("Paused: %s, who made it, no longer has access.", rule.Maker), now)
			}
			continue
		}
		n, err := r.store.RuleUses(ctx, rule.ID, now.Add(-r.cfg.RateWindow))
		if err != nil {
			// Not the next rule instead: this one, the oldest that
			// matches, is the one to answer once the journal is back.
			return store.Rule{}, false, &journalError{"rules: the uses of rule " + rule.ID + " could not be read", err}
		}
		if n >= r.cfg.MaxRate {
			if act {
				r.pause(ctx, rule, fmt.Sprintf("Paused: it answered %d requests within %s, more than the %d allowed (a runaway agent?). Resume it when that is sorted.", n+1, Words(r.cfg.RateWindow), r.cfg.MaxRate), now)
			}
			continue
		}
		return rule, true, nil
	}
	if act && missed != nil {
		r.missed(c, *missed, seen.Instance)
	}
	return store.Rule{}, false, nil
}

// since is when rule last began answering: made, or resumed (an active
// rule's last change).
func since(rule store.Rule) time.Time {
	if rule.StateAt.After(rule.Created) {
		return rule.StateAt
	}
	return rule.Created
}

func (r *Runner) pause(ctx context.Context, rule store.Rule, why string, now time.Time) {
	changed, err := r.store.SetRuleState(ctx, rule.ID, store.RulePaused, why, "", now) // by aepforms itself
	if err != nil {
		r.warn(ctx, "rules: could not pause", "rule", rule.ID, "err", err)
		return
	}
	if changed {
		r.cfg.Logger.Info("rule paused", "rule", rule.ID, "name", rule.Name, "why", why)
	}
}

// answer sends rule's answer to c's request. The request is first
// claimed for the rule in the journal, which holds only while the rule is
// still active there (a pause or delete that landed since the rules were
// read wins) and once per request (another replica's claim wins). Then
// the answer is begun and journaled by the inbox under the operator name
// By(rule.ID) (an answer already on its way, an operator's or another
// replica's, is refused by the journal: nothing is sent twice; the claim
// is released), then queued on the respond path. It returns an error
// when the journal failed the claim or the record, and the request may
// be tried again.
func (r *Runner) answer(ctx context.Context, rule store.Rule, c inbox.Card) error {
	now := r.cfg.Now()
	use := store.RuleUse{Rule: rule.ID, Card: string(c.ID), Source: c.Key.Source, Session: c.Key.Session,
		RequestID: c.Key.RequestID, CommandID: ulid.Make().String(), At: now}
	claimed, err := r.store.ClaimRuleUse(ctx, use, now)
	switch {
	case err != nil:
		return &journalError{"rules: the request could not be claimed for rule " + rule.ID, err}
	case !claimed:
		r.cfg.Logger.Debug("rules: not answered (the rule stopped meanwhile, or another replica claimed the request)", "rule", rule.ID, "card", string(c.ID))
		if r.cfg.Exclusive {
			// No other replica: the claim is this process's or an
			// earlier one's, cut off before its answer (orphan.go).
			r.answerOrphans(ctx)
		}
		return nil
	}
	crashpoint.Hit(crashpoint.RuleClaimed)
	return r.send(ctx, rule, c, use, false)
}

// send begins, journals and queues rule's answer to c's request under
// the claim use (its command id). A claim of this call's own (adopted
// false) is released when the answer is not kept, so the rule's uses
// count what it sent; an adopted one (a cut-off claim, orphan.go) is
// never released: another replica may be answering it at once, and the
// journal keeps exactly one of the two.
func (r *Runner) send(ctx context.Context, rule store.Rule, c inbox.Card, use store.RuleUse, adopted bool) error {
	a, err := r.answers.Begin(ctx, answer.Post{Card: c.ID, Token: "rule-" + rule.ID, CommandID: use.CommandID, Answer: &rule.Answer,
		By: By(rule.ID), Unsent: "not sent; the rule's answer is kept"})
	if err == nil && a.Kept {
		err = inbox.ErrDuplicate // this rule's answer is the card's already
	}
	if err != nil && adopted {
		r.cfg.Logger.Debug("rules: a cut-off claim's answer was not begun here", "rule", rule.ID, "card", string(c.ID), "err", err)
		if errors.Is(err, inbox.ErrNotRecorded) {
			return &journalError{"rules: rule " + rule.ID + "'s answer was not recorded", err}
		}
		return nil
	}
	if err != nil {
		answered := errors.Is(err, inbox.ErrDuplicate) || errors.Is(err, inbox.ErrInFlight) || errors.Is(err, inbox.ErrOtherInFlight)
		if answered {
			r.cfg.Logger.Debug("rules: the request is answered already", "rule", rule.ID, "card", string(c.ID))
		}
		if err := r.store.ReleaseRuleUse(context.WithoutCancel(ctx), use); err != nil {
			// The claim stays: a try again finds the request claimed and
			// leaves it to the operators.
			r.warn(ctx, "rules: the claim was not released", "rule", rule.ID, "err", err)
		}
		switch {
		case answered:
			return nil
		case !errors.Is(err, inbox.ErrNotRecorded):
			// Refused for good (the request closed meanwhile, or the
			// answer makes no command for it): trying again would fail
			// the same way, so it is left to the operators now.
			r.warn(ctx, "rules: rule "+rule.ID+"'s answer was refused; the request waits for the operators", "card", string(c.ID), "err", err)
			return nil
		}
		return &journalError{"rules: rule " + rule.ID + "'s answer was not recorded", err}
	}
	r.mu.Lock()
	r.answered[rule.ID]++
	delete(r.misses, rule.ID)
	r.mu.Unlock()
	r.cfg.Logger.Info("rule answered a request", "rule", rule.ID, "name", rule.Name, "card", string(c.ID), "command", a.Submission.CommandID)
	// One that cannot be queued is settled failed on its card, its
	// answer kept.
	_ = r.answers.Send(context.WithoutCancel(ctx), a, nil)
	return nil
}

// Words is a window as the operator reads it ("1 minute", "90 seconds"):
// the rate pause's reason and the Rules page say it so.
func Words(d time.Duration) string {
	unit := func(n int64, u string) string {
		if n == 1 {
			return "1 " + u
		}
		return fmt.Sprintf("%d %ss", n, u)
	}
	switch {
	case d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return unit(int64(d/time.Minute), "minute")
	case d%time.Second == 0:
		return unit(int64(d/time.Second), "second")
	}
	return d.String()
}

// warn logs a failure that leaves a request to the operators, unless the
// Runner is stopping (ctx done): a read cut short by the shutdown loses
// nothing (the request stays open) and is not worth a warning.
func (r *Runner) warn(ctx context.Context, msg string, args ...any) {
	if ctx.Err() != nil {
		r.cfg.Logger.Debug(msg+" (stopping)", args...)
		return
	}
	r.cfg.Logger.Warn(msg, args...)
}
