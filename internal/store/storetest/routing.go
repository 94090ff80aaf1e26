package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// utcSteps is steps with their times in UTC, for comparing.
func utcSteps(steps []store.RoutingStep) []store.RoutingStep {
	for i := range steps {
		steps[i].At = steps[i].At.UTC()
	}
	return steps
}

// A question's routing step is kept once, however many callers
// (replicas) race to keep it: the one that kept it sends it; every
// replica reads the card's steps back, oldest first.
func testRoutingStepsKeptOnce(t *testing.T, st Store) {
	ctx := context.Background()
	stores := []Backend{st.Open()}
	if st.Shared {
		stores = append(stores, st.Open())
	}
	var mu sync.Mutex
	won := 0
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ok, err := stores[i%len(stores)].KeepRoutingStep(ctx, store.RoutingStep{Card: "c1", Kind: inbox.StepEscalated, Team: "leads", At: T0.Add(time.Minute)})
			assert.NoError(t, err)
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, won, "one caller keeps the escalation")
	for _, s := range []store.RoutingStep{{Card: "c1", Kind: store.RoutedTo, Team: "oncall", At: T0},
		{Card: "c1", Kind: inbox.StepReminded, Team: "oncall", At: T0.Add(30 * time.Second)},
		{Card: "c2", Kind: store.RoutedTo, Team: "leads", At: T0}} {
		ok, err := stores[0].KeepRoutingStep(ctx, s)
		require.NoError(t, err)
		assert.True(t, ok, "%+v", s)
	}
	got, err := stores[len(stores)-1].RoutingSteps(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, []store.RoutingStep{{Card: "c1", Kind: store.RoutedTo, Team: "oncall", At: T0},
		{Card: "c1", Kind: inbox.StepReminded, Team: "oncall", At: T0.Add(30 * time.Second)},
		{Card: "c1", Kind: inbox.StepEscalated, Team: "leads", At: T0.Add(time.Minute)}}, utcSteps(got))
	got, err = stores[0].RoutingSteps(ctx, "none")
	require.NoError(t, err)
	assert.Empty(t, got)
}

// A question's routing history (its team, reminders and escalations)
// and its claim and assignment are kept as long as its answer is in
// History, past the push claims' week: an answer kept 30 days shows its
// steps and the team and escalated filters find it. Once its answers
// are pruned they go with them; those of a question never answered go
// once as old as the answers pruned; newer ones stay, and so do those of
// a question still shown (open longer than the retention).
func testRoutingAndMarksKeptWithTheirAnswer(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	asked := T0.Add(-30 * 24 * time.Hour)
	old := Submission(CmdID(1), asked.Add(10*time.Minute)) // answered 30 days ago, kept
	gone := Submission(CmdID(2), asked.Add(-time.Hour))    // answered before the cutoff
	gone.Key.RequestID = "r-gone"
	require.NoError(t, j.Record(old))
	require.NoError(t, j.Record(gone))
	steps := func(card inbox.CardID, at time.Time) []store.RoutingStep {
		return []store.RoutingStep{{Card: string(card), Kind: store.RoutedTo, Team: "oncall", At: at},
			{Card: string(card), Kind: inbox.StepReminded, Team: "oncall", At: at.Add(2 * time.Minute)},
			{Card: string(card), Kind: inbox.StepEscalated, Team: "leads", At: at.Add(4 * time.Minute)}}
	}
	unanswered, recent, open := inbox.CardID("card-unanswered"), inbox.CardID("card-recent"), inbox.CardID("card-open")
	j.KeepLiveCards(func(card string) bool { return card == string(open) })
	for _, c := range []struct {
		card inbox.CardID
		at   time.Time
	}{{old.Card, asked}, {gone.Card, asked.Add(-2 * time.Hour)}, {unanswered, asked.Add(-2 * time.Hour)}, {recent, T0}, {open, asked.Add(-2 * time.Hour)}} {
		for _, s := range steps(c.card, c.at) {
			ok, err := j.KeepRoutingStep(ctx, s)
			require.NoError(t, err)
			require.True(t, ok)
		}
		require.NoError(t, j.KeepClaim(c.card, inbox.Claim{By: "ann", At: c.at, Until: c.at.Add(10 * time.Minute), Rev: c.at.UnixNano()}))
		require.NoError(t, j.KeepAssignment(c.card, inbox.Assignment{To: "leads", Team: true, By: "ann", At: c.at, Rev: c.at.UnixNano()}))
	}
	// The push claims are pruned after their week; the answers after
	// 30 days and a minute.
	_, err := j.PrunePushClaims(ctx, T0.Add(-7*24*time.Hour))
	require.NoError(t, err)
	n, err := j.Prune(ctx, asked.Add(-time.Minute))
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the answer past retention")

	for _, q := range []store.HistoryQuery{{}, {Team: "oncall"}, {Escalated: true}, {Team: "oncall", Escalated: true}} {
		page, err := j.History(ctx, q)
		require.NoError(t, err)
		require.Len(t, page.Entries, 1, "%+v finds the 30-day-old escalated answer", q)
		assert.Equal(t, old.CommandID, page.Entries[0].CommandID)
		assert.Equal(t, steps(old.Card, asked), utcSteps(page.Entries[0].Routing), "its steps, with their times")
	}
	page, err := j.History(ctx, store.HistoryQuery{Team: "leads"})
	require.NoError(t, err)
	assert.Empty(t, page.Entries, "routed to oncall, escalated to leads: its team is oncall")

	for card, want := range map[inbox.CardID]int{old.Card: 3, gone.Card: 0, unanswered: 0, recent: 3, open: 3} {
		got, err := j.RoutingSteps(ctx, string(card))
		require.NoError(t, err)
		assert.Len(t, got, want, "%s's routing history", card)
	}
	marks, err := j.Marks(asked)
	require.NoError(t, err)
	var kept []inbox.CardID
	for _, m := range marks {
		kept = append(kept, m.Card)
	}
	assert.ElementsMatch(t, []inbox.CardID{old.Card, recent, open}, kept, "the marks of the cards with an answer kept, the recent and the open")
}

// RoutingClaimsBefore are the push claims a journal kept of a question's
// routing before its routing history had a table of its own: its team,
// its chat message, a reminder and an escalation, beside Web Push's own
// claim. CheckRoutingCarriedOver checks them after the migration.
const RoutingClaimsBefore = `INSERT INTO push_claims (card_id, kind, claimed_at) VALUES
	('c1', 'routing:team:oncall', 1000), ('c1', 'routing:new:oncall', 1000), ('c1', 'new', 1000),
	('c1', 'routing:reminded:oncall', 2000), ('c1', 'routing:escalated:leads', 3000)`

// CheckRoutingCarriedOver checks that j, a journal migrated from one
// holding RoutingClaimsBefore, has their routing history with its
// times, and keeps the push claims of the jobs (the chat message, Web
// Push's) as they were.
func CheckRoutingCarriedOver(t *testing.T, j Backend) {
	t.Helper()
	ctx := context.Background()
	got, err := j.RoutingSteps(ctx, "c1")
	require.NoError(t, err)
	at := func(n int64) time.Time { return time.Unix(0, n).UTC() }
	assert.Equal(t, []store.RoutingStep{{Card: "c1", Kind: store.RoutedTo, Team: "oncall", At: at(1000)},
		{Card: "c1", Kind: inbox.StepReminded, Team: "oncall", At: at(2000)},
		{Card: "c1", Kind: inbox.StepEscalated, Team: "leads", At: at(3000)}}, utcSteps(got))
	claims, err := j.PushClaimsOf(ctx, "")
	require.NoError(t, err)
	var kinds []string
	for _, c := range claims {
		kinds = append(kinds, c.Kind)
	}
	assert.ElementsMatch(t, []string{"new", "routing:new:oncall"}, kinds, "the jobs' claims stay; the history's moved")
	ok, err := j.KeepRoutingStep(ctx, store.RoutingStep{Card: "c1", Kind: inbox.StepEscalated, Team: "leads", At: at(4000)})
	require.NoError(t, err)
	assert.False(t, ok, "an escalation sent before the migration is not sent again")
}
