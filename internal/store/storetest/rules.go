package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/store"
)

// RuleStore is what the standing answers (internal/rules) keep in the
// journal.
type RuleStore interface {
	CreateRule(ctx context.Context, r store.Rule, max int) error
	RuleCount(ctx context.Context, now time.Time) (int, error)
	Rules(ctx context.Context) ([]store.Rule, error)
	ActiveRules(ctx context.Context, now time.Time) ([]store.Rule, error)
	Rule(ctx context.Context, id string) (store.Rule, bool, error)
	SetRuleState(ctx context.Context, id, state, reason, by string, at time.Time) (bool, error)
	DeleteRule(ctx context.Context, id, by string, at time.Time) (bool, error)
	CarryRule(ctx context.Context, id, instance, by string, at time.Time) (bool, error)
	ClaimRuleUse(ctx context.Context, u store.RuleUse, now time.Time) (bool, error)
	ReleaseRuleUse(ctx context.Context, u store.RuleUse) error
	RuleUses(ctx context.Context, id string, since time.Time) (int, error)
	RuleFromCard(ctx context.Context, card string) (store.Rule, bool, error)
	RuleAnswered(ctx context.Context, id string, n int) ([]store.RuleUseRecord, error)
}

func rule(id string, at time.Time) store.Rule {
	return store.Rule{
		ID:   id,
		Name: "Allow once: Run ls?",
		Match: store.RuleMatch{
			Kind:     "permission",
			Options:  []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}},
			Agent:    "builder",
			Scope:    store.ScopePrefix,
			Question: "Allow Bash to run ls -la?",
			Text:     "Allow Bash to run ls",
			Tool:     "Bash",
			Instance: "host/4242",
		},
		Card:    "card-" + id,
		Answer:  aep.Answer{Option: "allow"},
		Note:    "fine in CI",
		Maker:   "alice",
		Created: at,
		Expires: at.Add(8 * time.Hour),
		State:   store.RuleActive,
	}
}

func utcRule(r store.Rule) store.Rule {
	r.Created, r.Expires = r.Created.UTC(), r.Expires.UTC()
	if !r.StateAt.IsZero() {
		r.StateAt = r.StateAt.UTC()
	}
	if !r.LastUse.IsZero() {
		r.LastUse = r.LastUse.UTC()
	}
	return r
}

// A rule comes back whole, newest first, after a reopen and from a
// second process; pausing keeps why, resuming clears it; a deleted rule
// is no longer listed, cannot be resumed, and can still be read by id.
func testRules(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	r1, r2 := rule("r1", T0), rule("r2", T0.Add(time.Minute))
	r2.Match.Fields = []aep.FieldSpec{{ID: "name", Type: aep.FieldString, Label: "Name"}}
	r2.Answer = aep.Answer{Values: aep.Values{"name": "v1"}}
	require.NoError(t, j.CreateRule(ctx, r1, 0))
	require.NoError(t, j.CreateRule(ctx, r2, 0))
	require.Error(t, j.CreateRule(ctx, r1, 0), "one rule per id")

	got, err := j.Rules(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, r2, utcRule(got[0]), "newest first, kept whole")
	assert.Equal(t, r1, utcRule(got[1]))
	active, err := j.ActiveRules(ctx, T0.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, active, 2)
	assert.Equal(t, []string{"r1", "r2"}, []string{active[0].ID, active[1].ID}, "oldest first")
	active, err = j.ActiveRules(ctx, r1.Expires)
	require.NoError(t, err)
	require.Len(t, active, 1, "expired at its instant")
	assert.Equal(t, "r2", active[0].ID)

	ok, err := j.SetRuleState(ctx, "r1", store.RulePaused, "It answered 31 requests within 1m0s.", "", T0.Add(2*time.Minute))
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = j.SetRuleState(ctx, "r1", store.RulePaused, "again", "", T0.Add(3*time.Minute))
	require.NoError(t, err)
	assert.False(t, ok, "already paused")
	ok, err = j.SetRuleState(ctx, "missing", store.RulePaused, "x", "", T0)
	require.NoError(t, err)
	assert.False(t, ok)

	check := func(j Backend) {
		r, found, err := j.Rule(ctx, "r1")
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, store.RulePaused, r.State)
		assert.Equal(t, "It answered 31 requests within 1m0s.", r.Reason)
		assert.True(t, r.StateAt.Equal(T0.Add(2*time.Minute)))
		list, err := j.Rules(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Empty(t, list[0].Changes, "r2 was never changed")
		require.Len(t, list[1].Changes, 1, "the Rules list carries each rule's changes")
		assert.Equal(t, store.RuleChangePaused, list[1].Changes[0].Change)
	}
	require.NoError(t, j.Close())
	j = st.Open()
	check(j)
	if st.Shared {
		check(st.Open())
	}

	ok, err = j.SetRuleState(ctx, "r1", store.RuleActive, "ignored", "bob", T0.Add(4*time.Minute))
	require.NoError(t, err)
	assert.True(t, ok)
	r, _, err := j.Rule(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, store.RuleActive, r.State)
	assert.Empty(t, r.Reason, "resuming clears why it was paused")

	ok, err = j.DeleteRule(ctx, "r1", "ada", T0.Add(5*time.Minute))
	require.NoError(t, err)
	assert.True(t, ok)
	got, err = j.Rules(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "r2", got[0].ID)
	ok, err = j.SetRuleState(ctx, "r1", store.RuleActive, "", "", T0.Add(6*time.Minute))
	require.NoError(t, err)
	assert.False(t, ok, "a deleted rule stays deleted")
	active, err = j.ActiveRules(ctx, T0.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, active, 1, "a deleted rule answers nothing")
	r, found, err := j.Rule(ctx, "r1")
	require.NoError(t, err)
	require.True(t, found, "still named in History")
	assert.Equal(t, store.RuleDeleted, r.State)
	assert.Equal(t, "alice", r.Maker)
	// Who changed it and when: aepforms paused it (its rate), bob
	// resumed it, ada deleted it; the refused changes are not kept.
	require.Len(t, r.Changes, 3, "%+v", r.Changes)
	for i, want := range []store.RuleChange{
		{Change: store.RuleChangePaused, Reason: "It answered 31 requests within 1m0s.", At: T0.Add(2 * time.Minute)},
		{Change: store.RuleChangeResumed, By: "bob", At: T0.Add(4 * time.Minute)},
		{Change: store.RuleChangeDeleted, By: "ada", At: T0.Add(5 * time.Minute)},
	} {
		got := r.Changes[i]
		assert.True(t, got.At.Equal(want.At), "change %d at %v, want %v", i, got.At, want.At)
		got.At = want.At
		assert.Equal(t, want, got)
	}
	_, found, err = j.Rule(ctx, "missing")
	require.NoError(t, err)
	assert.False(t, found)
}

// Each request a rule answered is kept once (two replicas recording the
// same one count one), counted within a window, and listed with the
// rule's uses and last use.
func testRuleUses(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	require.NoError(t, j.CreateRule(ctx, rule("r1", T0), 0))
	require.NoError(t, j.CreateRule(ctx, rule("r2", T0), 0))
	u := func(rule, req string, at time.Time) store.RuleUse {
		return store.RuleUse{Rule: rule, Card: "card-" + req, Source: "aep://h/agent", Session: "s1", RequestID: req, CommandID: "cmd-" + req, At: at}
	}
	use := func(j Backend, req string, at time.Time) bool {
		claimed, err := j.ClaimRuleUse(ctx, u("r1", req, at), at)
		require.NoError(t, err)
		return claimed
	}
	assert.True(t, use(j, "q1", T0.Add(time.Second)))
	assert.True(t, use(j, "q2", T0.Add(2*time.Second)))
	assert.True(t, use(j, "q3", T0.Add(70*time.Second)))
	other := j
	if st.Shared {
		other = st.Open()
	}
	assert.False(t, use(other, "q3", T0.Add(71*time.Second)), "a request is claimed once")

	// A rule that is not active at the claim claims nothing: paused,
	// deleted, expired, or never made.
	_, err := j.SetRuleState(ctx, "r2", store.RulePaused, "Paused by alice.", "", T0)
	require.NoError(t, err)
	claimed, err := j.ClaimRuleUse(ctx, u("r2", "q9", T0), T0)
	require.NoError(t, err)
	assert.False(t, claimed, "paused")
	_, err = j.SetRuleState(ctx, "r2", store.RuleActive, "", "", T0)
	require.NoError(t, err)
	claimed, err = j.ClaimRuleUse(ctx, u("r2", "q9", T0.Add(9*time.Hour)), T0.Add(9*time.Hour))
	require.NoError(t, err)
	assert.False(t, claimed, "expired")
	claimed, err = j.ClaimRuleUse(ctx, u("missing", "q9", T0), T0)
	require.NoError(t, err)
	assert.False(t, claimed, "no such rule")
	// A released claim is no use; another command's claim is not released.
	claimed, err = j.ClaimRuleUse(ctx, u("r2", "q8", T0), T0)
	require.NoError(t, err)
	require.True(t, claimed)
	notMine := u("r2", "q8", T0)
	notMine.CommandID = "cmd-other"
	require.NoError(t, j.ReleaseRuleUse(ctx, notMine))
	n, err := j.RuleUses(ctx, "r2", T0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, j.ReleaseRuleUse(ctx, u("r2", "q8", T0)))

	n, err = j.RuleUses(ctx, "r1", T0)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "one use per request")
	n, err = j.RuleUses(ctx, "r1", T0.Add(10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "within the window only")
	n, err = j.RuleUses(ctx, "r2", T0)
	require.NoError(t, err)
	assert.Zero(t, n)

	// The Rules page counts the requests a rule answered: a claim whose
	// answer the journal holds (a process killed between the claim and
	// the answer left that request to the operators).
	got, err := j.Rules(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Zero(t, got[0].Uses+got[1].Uses, "claims without a journaled answer are not counted")
	for _, q := range []string{"q1", "q2"} {
		require.NoError(t, j.Record(Submission("cmd-"+q, T0)))
	}
	got, err = j.Rules(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2)
	byID := map[string]store.Rule{got[0].ID: got[0], got[1].ID: got[1]}
	assert.Equal(t, 2, byID["r1"].Uses)
	assert.True(t, byID["r1"].LastUse.Equal(T0.Add(2*time.Second)), "last use %v", byID["r1"].LastUse)
	require.NoError(t, j.Record(Submission("cmd-q3", T0)))
	got, err = j.Rules(ctx)
	require.NoError(t, err)
	byID = map[string]store.Rule{got[0].ID: got[0], got[1].ID: got[1]}
	assert.Equal(t, 3, byID["r1"].Uses)
	assert.True(t, byID["r1"].LastUse.Equal(T0.Add(70*time.Second)), "last use %v", byID["r1"].LastUse)
	assert.Zero(t, byID["r2"].Uses)
	assert.True(t, byID["r2"].LastUse.IsZero())

	// Retention forgets the uses with the answers.
	_, err = j.Prune(ctx, T0.Add(10*time.Second))
	require.NoError(t, err)
	n, err = j.RuleUses(ctx, "r1", T0)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the uses before the cutoff are pruned")
}

// Retention forgets a deleted rule with the last kept answer that names
// it: deleted rules do not pile up, and History still names the rule of
// every answer it shows. Kept and paused rules stay.
func testPruneDeletedRules(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	for _, id := range []string{"gone", "named", "old-named", "kept"} {
		require.NoError(t, j.CreateRule(ctx, rule(id, T0), 0))
	}
	for _, id := range []string{"gone", "named", "old-named"} {
		ok, err := j.DeleteRule(ctx, id, "", T0.Add(time.Hour))
		require.NoError(t, err)
		require.True(t, ok)
	}
	s := Submission(CmdID(1), T0.Add(5*time.Hour))
	s.By = "rule:named"
	require.NoError(t, j.Record(s))
	old := Submission(CmdID(2), T0.Add(2*time.Hour))
	old.By = "rule:old-named"
	require.NoError(t, j.Record(old))

	_, err := j.Prune(ctx, T0.Add(4*time.Hour))
	require.NoError(t, err)
	for id, want := range map[string]bool{"gone": false, "old-named": false, "named": true, "kept": true} {
		_, found, err := j.Rule(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, found, "rule %s kept", id)
	}
}

// The rule cap is one atomic step with the insert: makers posting at
// once (on two replicas where the store is shared) end with exactly max
// rules and the rest refused, saying so. Paused rules count (they can be
// resumed); expired ones do not (they never answer again): past the cap
// a new rule is kept, and the longest-expired rule is deleted to make
// room, so the rules listed stay at most max.
func testRuleCap(t *testing.T, st Store) {
	ctx := context.Background()
	const max, makers = 5, 24
	js := []Backend{st.Open()}
	if st.Shared {
		js = append(js, st.Open())
	}
	errs := make(chan error, makers)
	start := make(chan struct{})
	for i := range makers {
		go func() {
			<-start
			errs <- js[i%len(js)].CreateRule(ctx, rule(fmt.Sprintf("c%02d", i), T0.Add(time.Duration(i)*time.Millisecond)), max)
		}()
	}
	close(start)
	kept := 0
	for range makers {
		err := <-errs
		if err == nil {
			kept++
			continue
		}
		var capped *store.RuleMaxError
		require.ErrorAs(t, err, &capped)
		assert.Equal(t, max, capped.Max)
		assert.Contains(t, err.Error(), "at most 5 rules")
	}
	assert.Equal(t, max, kept, "exactly max made")
	got, err := js[0].Rules(ctx)
	require.NoError(t, err)
	require.Len(t, got, max, "exactly max kept")
	n, err := js[0].RuleCount(ctx, T0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, max, n)

	// Paused rules count: pausing one makes no room.
	_, err = js[0].SetRuleState(ctx, got[0].ID, store.RulePaused, "Paused by alice.", "", T0.Add(time.Minute))
	require.NoError(t, err)
	err = js[0].CreateRule(ctx, rule("paused-counts", T0.Add(time.Hour)), max)
	require.ErrorAs(t, err, new(*store.RuleMaxError), "a paused rule counts")

	// Expired rules do not: they all expired at T0+8h.
	later := T0.Add(9 * time.Hour)
	n, err = js[0].RuleCount(ctx, later)
	require.NoError(t, err)
	assert.Zero(t, n, "expired rules are not counted")
	require.NoError(t, js[0].CreateRule(ctx, rule("after-expiry", later), max), "expired rules make room")
	got, err = js[0].Rules(ctx)
	require.NoError(t, err)
	require.Len(t, got, max, "the rules listed stay at most max")
	assert.Equal(t, "after-expiry", got[0].ID)
	deleted := 0
	for i := range makers {
		r, found, err := js[0].Rule(ctx, fmt.Sprintf("c%02d", i))
		require.NoError(t, err)
		if found && r.State == store.RuleDeleted {
			deleted++
		}
	}
	assert.Equal(t, 1, deleted, "one expired rule made room, kept for History by id")

	// Without a cap (0) nothing is refused.
	for i := range max + 2 {
		require.NoError(t, js[0].CreateRule(ctx, rule(fmt.Sprintf("free%d", i), later), 0))
	}
}

// The rule made from a card is found by the card, the newest when
// several were, deleted ones too; the requests a rule answered are
// listed newest first with their History question, only those whose
// answer the journal holds.
func testRuleFromCardAndAnswered(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	older, newer := rule("r1", T0), rule("r2", T0.Add(time.Minute))
	newer.Card = older.Card
	require.NoError(t, j.CreateRule(ctx, older, 0))
	require.NoError(t, j.CreateRule(ctx, newer, 0))
	got, found, err := j.RuleFromCard(ctx, older.Card)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "r2", got.ID, "the newest made from the card")
	assert.Equal(t, newer.Match, got.Match, "the scope is kept whole")
	_, err = j.DeleteRule(ctx, "r2", "", T0.Add(2*time.Minute))
	require.NoError(t, err)
	got, found, err = j.RuleFromCard(ctx, older.Card)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, store.RuleDeleted, got.State, "a deleted rule is still named")
	_, found, err = j.RuleFromCard(ctx, "card-none")
	require.NoError(t, err)
	assert.False(t, found)
	_, found, err = j.RuleFromCard(ctx, "")
	require.NoError(t, err)
	assert.False(t, found, "a rule made before cards were kept is no card's")

	for i, req := range []string{"q1", "q2", "q3"} {
		at := T0.Add(time.Duration(i+1) * time.Second)
		claimed, err := j.ClaimRuleUse(ctx, store.RuleUse{Rule: "r1", Card: "card-" + req, Source: "aep://h/agent", Session: "s1",
			RequestID: req, CommandID: "cmd-" + req, At: at}, at)
		require.NoError(t, err)
		require.True(t, claimed)
	}
	for _, req := range []string{"q1", "q3"} {
		s := Submission("cmd-"+req, T0)
		s.Question = "Run ls " + req + "?"
		require.NoError(t, j.Record(s))
	}
	uses, err := j.RuleAnswered(ctx, "r1", 10)
	require.NoError(t, err)
	require.Len(t, uses, 2, "q2's claim has no journaled answer")
	assert.Equal(t, "cmd-q3", uses[0].CommandID, "newest first")
	assert.Equal(t, "Run ls q3?", uses[0].Question)
	assert.True(t, uses[0].At.Equal(T0.Add(3*time.Second)))
	assert.Equal(t, "s1", uses[1].Session)
	uses, err = j.RuleAnswered(ctx, "r1", 1)
	require.NoError(t, err)
	assert.Len(t, uses, 1, "at most n")
}

// A rule carried over to another connection of its agent answers that
// connection too, its own still, and no third; the carry-over is kept
// with who and when (once: carrying it again changes nothing), and a
// process opening the journal again reads it so. A deleted rule is not
// carried, nor one that names no connection.
func testCarryRule(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	r := rule("r1", T0)
	require.NoError(t, j.CreateRule(ctx, r, 0))
	ok, err := j.CarryRule(ctx, "r1", "host/5151", "alice", T0.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = j.CarryRule(ctx, "r1", "host/5151", "bob", T0.Add(2*time.Minute))
	require.NoError(t, err)
	assert.False(t, ok, "carried already")
	ok, err = j.CarryRule(ctx, "r1", "host/4242", "bob", T0.Add(2*time.Minute))
	require.NoError(t, err)
	assert.False(t, ok, "its own connection")

	check := func(j Backend) {
		got, found, err := j.Rule(ctx, "r1")
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, []string{"host/5151"}, got.Match.Carried)
		assert.True(t, got.Match.Answers("host/4242"), "its own connection")
		assert.True(t, got.Match.Answers("host/5151"), "the one carried to")
		assert.False(t, got.Match.Answers("evil/1"))
		assert.False(t, got.Match.Answers(""), "a connection the roster does not name")
		require.Len(t, got.Changes, 1)
		c := got.Changes[0]
		assert.True(t, c.At.Equal(T0.Add(time.Minute)), "carried at %v", c.At)
		c.At = T0.Add(time.Minute)
		assert.Equal(t, store.RuleChange{Change: store.RuleChangeCarried, By: "alice", Reason: "host/5151", At: T0.Add(time.Minute)}, c)
		active, err := j.ActiveRules(ctx, T0.Add(time.Hour))
		require.NoError(t, err)
		require.Len(t, active, 1)
		assert.Equal(t, []string{"host/5151"}, active[0].Match.Carried, "what the Runner reads")
	}
	check(j)
	require.NoError(t, j.Close())
	j = st.Open()
	check(j)

	none := rule("r2", T0)
	none.Match.Instance = ""
	require.NoError(t, j.CreateRule(ctx, none, 0))
	ok, err = j.CarryRule(ctx, "r2", "host/5151", "alice", T0)
	require.NoError(t, err)
	assert.False(t, ok, "a rule of no connection answers any already")
	ok, err = j.DeleteRule(ctx, "r2", "alice", T0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = j.CarryRule(ctx, "r2", "host/5151", "alice", T0)
	require.NoError(t, err)
	assert.False(t, ok, "deleted")
	ok, err = j.CarryRule(ctx, "missing", "host/5151", "alice", T0)
	require.NoError(t, err)
	assert.False(t, ok)
}
