// Package storetest is the journal's behaviour, as tests every backend
// runs: Run(t, fresh) checks a backend (the embedded SQLite one, the
// PostgreSQL one) against what the inbox, History, retention and the
// sign-in sessions rely on, so the backends cannot drift apart. What
// only one backend has (file modes, locks, its migrations from each
// earlier version, advisory locks) is tested beside that backend.
package storetest

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Backend is an open journal as the app uses it.
type Backend interface {
	inbox.Journal
	inbox.TokenJournal
	inbox.Leases
	inbox.PeerJournal
	inbox.MarkJournal
	inbox.FirstClaims
	store.Pruner
	History(ctx context.Context, q store.HistoryQuery) (store.HistoryPage, error)
	CreateSession(ctx context.Context, s store.Session) error
	LookupSession(ctx context.Context, idHash string) (store.Session, bool, error)
	LookupSessions(ctx context.Context, idHashes []string) (map[string]store.Session, error)
	TouchSession(ctx context.Context, idHash string, at time.Time) error
	DeleteSession(ctx context.Context, idHash string) error
	TakeSession(ctx context.Context, idHash string) (bool, error)
	DeleteOtherSessions(ctx context.Context, operator, keepHash string) (int, error)
	DeleteExpiredSessions(ctx context.Context, idleBefore, createdBefore time.Time) (int, error)
	ClaimSessionCheck(ctx context.Context, idHash string, was, at time.Time) (bool, error)
	SetSessionRefresh(ctx context.Context, idHash string, sealed []byte) error
	SeePerson(ctx context.Context, p store.Person) error
	People(ctx context.Context, since time.Time) ([]store.Person, error)
	ForgetPeople(ctx context.Context, before time.Time) (int, error)
	Identity() store.Identity
	Close() error
	PushStore
	RuleStore
	store.RuleLooks
	KeepRoutingStep(ctx context.Context, s store.RoutingStep) (bool, error)
	RoutingSteps(ctx context.Context, card string) ([]store.RoutingStep, error)
	KeepLiveCards(live func(card string) bool)
}

// PushStore is what Web Push keeps in the journal.
type PushStore interface {
	PushKeys(ctx context.Context, gen func() (store.PushKeys, error)) (store.PushKeys, error)
	SavePushSubscription(ctx context.Context, s store.PushSubscription) error
	DeletePushSubscription(ctx context.Context, operator, endpoint string) (bool, error)
	DeleteSessionPushSubscriptions(ctx context.Context, idHash string) error
	PushSubscriptions(ctx context.Context) ([]store.PushSubscription, error)
	PushFailed(ctx context.Context, endpoint, failure string, at time.Time) error
	ClaimPush(ctx context.Context, card, kind string, at time.Time) (bool, error)
	SetPageVisible(ctx context.Context, page, operator string, visible bool, at time.Time) error
	VisibleOperators(ctx context.Context, since time.Time) ([]string, error)
	PrunePushClaims(ctx context.Context, before time.Time) (int64, error)
	PushClaimsOf(ctx context.Context, prefix string) ([]store.PushClaim, error)
}

// Store is one journal's place (a file, a database) as a test sees it.
type Store struct {
	// Open opens the journal. It may be called again after Close, as a
	// restarted process would; each journal it opens is closed when the
	// test ends (the suite closes it earlier where a test restarts).
	Open func() Backend
	// OpenAs opens the journal as replica replica, holding resend leases
	// for lease (the backend's Options.Replica and Options.Lease).
	OpenAs func(replica string, lease time.Duration) Backend
	// Shared is true when the store may be open more than once at a
	// time, as replicas share one database (not a locked file).
	Shared bool
}

// Fresh makes a new, empty journal's Store for t.
type Fresh func(t *testing.T) Store

// T0 is the tests' epoch.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Submission is a filled-in form post, command cmd, request "r-"+cmd,
// posted at.
func Submission(cmd string, at time.Time) inbox.Submission {
	text := "ship it"
	return inbox.Submission{
		Card:      inbox.CardID("card-" + cmd),
		Key:       inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r-" + cmd},
		Fields:    []aep.FieldSpec{{ID: "name", Type: aep.FieldString, Label: "Name", Required: true}},
		Agent:     "builder",
		Question:  "Which release?",
		Token:     "tok-" + cmd,
		CommandID: cmd,
		Answer:    aep.Answer{Text: &text, Values: aep.Values{"name": "v1.2", "count": json.Number("3")}},
		Form:      url.Values{"f0": {"v1.2"}, "f1": {"3"}},
		By:        "alice",
		State:     inbox.SubmissionSending,
		At:        at,
	}
}

// CmdID is the i-th test command id.
func CmdID(i int) string { return "cmd-" + strconv.Itoa(i) }

// Run runs the journal's behaviour tests against the backend fresh
// makes, each as a parallel subtest on its own journal.
func Run(t *testing.T, fresh Fresh) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Store)
	}{
		{"RecordSettleUnsettledRoundTrip", testRoundTrip},
		{"CommandBytes", testCommandBytes},
		{"OneLiveSubmissionPerRequest", testOneLive},
		{"ReplacedAnswerLeavesTheLiveRule", testReplaced},
		{"IdentityIsCreatedOnceAndKept", testIdentity},
		{"HistoryFilters", testHistoryFilters},
		{"HistoryPagesAreStableUnderInserts", testHistoryPages},
		{"Prune", testPrune},
		{"Sessions", testSessions},
		{"SessionTakenOnce", testSessionTakenOnce},
		{"ProviderSessionsAreCheckedOnce", testSessionChecks},
		{"PeopleSurviveARestartAndAreForgotten", testPeople},
		{"TheInboxWritesAhead", testInboxWritesAhead},
		{"ResumeScanAcrossProcesses", testResumeScan},
		{"LookupKeepRecordedRecent", testRecorded},
		{"QueuedAcrossProcesses", testQueued},
		{"PushKeysMadeOnceAndKept", testPushKeys},
		{"PushSubscriptions", testPushSubscriptions},
		{"PushClaimedOnce", testPushClaims},
		{"PageVisibility", testPageVisibility},
		{"RulesKeptPausedDeleted", testRules},
		{"RuleCarriedToAnotherConnection", testCarryRule},
		{"PruneDeletedRules", testPruneDeletedRules},
		{"RuleUsesCountedOncePerRequest", testRuleUses},
		{"RuleCapHoldsUnderConcurrentMakers", testRuleCap},
		{"RuleFromCardAndWhatItAnswered", testRuleFromCardAndAnswered},
		{"RuleAnswersFilteredAndCountedSinceLooked", testRuleAnswers},
		{"LookupToken", testLookupToken},
		{"ResendLeases", testLeases},
		{"ReplicasGiveOneAnswer", testReplicasOneAnswer},
		{"ReplicasResendOnceAfterALapse", testReplicasReclaim},
		{"PeersAreTheOthersQueuedAnswers", testPeers},
		{"ClaimsKeptAndShared", testClaimsKeptAndShared},
		{"MarksOrderedAsSeenAcrossSkewedClocks", testMarksOrderedAsSeenAcrossSkewedClocks},
		{"FirstClaimCountedOnce", testFirstClaimCountedOnce},
		{"RoutingStepsKeptOnce", testRoutingStepsKeptOnce},
		{"RoutingAndMarksKeptWithTheirAnswer", testRoutingAndMarksKeptWithTheirAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, fresh(t))
		})
	}
}

// What Record keeps comes back whole from Unsettled, after a reopen too;
// Settle moves it, and only sending and accepted submissions are
// unsettled, oldest first.
func testRoundTrip(t *testing.T, st Store) {
	open := st.Open
	j := open()
	want := make([]inbox.Submission, 5)
	for i := range want {
		want[i] = Submission(CmdID(i), T0.Add(time.Duration(i)*time.Second))
		require.NoError(t, j.Record(want[i]))
	}
	assert.ErrorIs(t, j.Record(want[0]), store.ErrDuplicate, "a command id is recorded once")
	again := Submission(CmdID(0), T0)
	again.Key.RequestID = "another"
	assert.ErrorIs(t, j.Record(again), store.ErrDuplicate, "a command id is recorded once, whatever its request")

	at := T0.Add(time.Minute)
	require.NoError(t, j.Settle(CmdID(1), inbox.SubmissionAccepted, "", "", at))
	require.NoError(t, j.Settle(CmdID(2), inbox.SubmissionRejected, "invalid", "no such release", at))
	require.NoError(t, j.Settle(CmdID(3), inbox.SubmissionFailed, inbox.ReasonTimeout, "", at))
	require.NoError(t, j.Settle(CmdID(4), inbox.SubmissionFailed, inbox.ReasonUnreachable, "", at))
	require.NoError(t, j.Settle(CmdID(4), inbox.SubmissionSending, "", "", at.Add(time.Second)), "a resend")
	require.NoError(t, j.Settle("unknown", inbox.SubmissionAccepted, "", "", at), "an unknown command is ignored")
	require.NoError(t, j.Close())

	j = open()
	got, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, got, 3, "sending (0, 4 resent) and accepted (1)")
	want[1].State, want[1].SettledAt = inbox.SubmissionAccepted, at
	for i, w := range []inbox.Submission{want[0], want[1], want[4]} {
		AssertSameSubmission(t, w, got[i])
	}
}

// AssertSameSubmission compares two submissions, their times as instants.
func AssertSameSubmission(t *testing.T, want, got inbox.Submission) {
	t.Helper()
	assert.True(t, want.At.Equal(got.At), "%s At: got %v, want %v", want.CommandID, got.At, want.At)
	assert.True(t, want.SettledAt.Equal(got.SettledAt), "%s SettledAt: got %v, want %v", want.CommandID, got.SettledAt, want.SettledAt)
	want.At, want.SettledAt, got.At, got.SettledAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	assert.Equal(t, want, got)
}

// The exact command bytes recorded come back from Unsettled, after a
// reopen; a submission without them comes back without them.
func testCommandBytes(t *testing.T, st Store) {
	open := st.Open
	j := open()
	with := Submission(CmdID(1), T0)
	with.Command = []byte(`{"aep":"0.1","id":"cmd-1","type":"control.attention.respond"}`)
	require.NoError(t, j.Record(with))
	require.NoError(t, j.Record(Submission(CmdID(2), T0.Add(1))))
	require.NoError(t, j.Close())

	j = open()
	got, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, string(with.Command), string(got[0].Command), "command bytes: got, want")
	assert.Nil(t, got[1].Command, "no bytes recorded: none come back")
}

// An owed answer the operator explicitly replaced ("Answer
// differently": settled failed, reason replaced) leaves the one-live
// rule: the replacement is recorded, and the replaced one's own late ack
// still settles it (accepted) beside the live replacement. An accidental
// third answer is still refused; a replaced one put back on its way (the
// replacement not kept) rejoins the rule.
func testReplaced(t *testing.T, st Store) {
	j := st.Open()
	first := Submission("c1", T0)
	require.NoError(t, j.Record(first))
	require.NoError(t, j.Settle("c1", inbox.SubmissionSending, inbox.ReasonTimeout, "", T0.Add(time.Second)))
	second := Submission("c2", T0.Add(2*time.Second))
	second.Key = first.Key
	require.ErrorIs(t, j.Record(second), store.ErrLive, "owed is live: no second answer by accident")

	require.NoError(t, j.Settle("c1", inbox.SubmissionFailed, inbox.ReasonReplaced, "", T0.Add(3*time.Second)))
	require.NoError(t, j.Record(second), "the explicit replacement")
	require.NoError(t, j.Settle("c1", inbox.SubmissionAccepted, "", "", T0.Add(4*time.Second)),
		"the replaced answer's late ack is kept beside the live replacement")
	third := Submission("c3", T0.Add(5*time.Second))
	third.Key = first.Key
	assert.ErrorIs(t, j.Record(third), store.ErrLive, "a third answer is still refused")
	got, ok, err := j.Lookup("c1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, inbox.SubmissionAccepted, got.State)

	// Put back on its way (its replacement was refused): live again.
	j2 := Submission("d1", T0)
	j2.Key.RequestID = "r-d"
	require.NoError(t, j.Record(j2))
	require.NoError(t, j.Settle("d1", inbox.SubmissionFailed, inbox.ReasonReplaced, "", T0.Add(time.Second)))
	require.NoError(t, j.Settle("d1", inbox.SubmissionSending, inbox.ReasonTimeout, "", T0.Add(2*time.Second)))
	d2 := Submission("d2", T0.Add(3*time.Second))
	d2.Key = j2.Key
	assert.ErrorIs(t, j.Record(d2), store.ErrLive, "back on its way: one live answer again")
}

// The database keeps at most one live (sending or accepted) submission
// per request: a second is refused with ErrLive (which the inbox reads
// as ErrInFlight) until the first is settled; another request, or the
// same request id from another session or source, is another request.
// Two journals open on one store (replicas) see each other's.
func testOneLive(t *testing.T, st Store) {
	open := st.Open
	j := open()
	first := Submission("c1", T0)
	require.NoError(t, j.Record(first))

	second := Submission("c2", T0.Add(time.Second))
	second.Key = first.Key
	err := j.Record(second)
	require.ErrorIs(t, err, store.ErrLive, "a second live submission for one request")
	assert.ErrorIs(t, err, inbox.ErrInFlight, "the inbox's own word for it")
	assert.NotErrorIs(t, err, store.ErrDuplicate)

	require.NoError(t, j.Settle("c1", inbox.SubmissionAccepted, "", "", T0.Add(time.Second)))
	assert.ErrorIs(t, j.Record(second), store.ErrLive, "accepted is still live: the agent acts on it")

	for _, key := range []inbox.RequestKey{
		{Source: first.Key.Source, Session: first.Key.Session, RequestID: "r-other"},
		{Source: first.Key.Source, Session: "s-other", RequestID: first.Key.RequestID},
		{Source: "aep://other/agent", Session: first.Key.Session, RequestID: first.Key.RequestID},
	} {
		other := Submission("c-"+key.Source+key.Session+key.RequestID, T0)
		other.Key = key
		require.NoError(t, j.Record(other), "another request: %+v", key)
	}

	// A replica on the same store is refused the same way.
	if st.Shared {
		two := open()
		assert.ErrorIs(t, two.Record(second), store.ErrLive, "a second replica")
		require.NoError(t, two.Close())
	}

	// Once the first is settled for good, the request takes another
	// answer; the first cannot then be sent again beside it.
	require.NoError(t, j.Settle("c1", inbox.SubmissionRejected, "invalid", "", T0.Add(2*time.Second)))
	require.NoError(t, j.Record(second), "the first is no longer live")
	err = j.Settle("c1", inbox.SubmissionSending, "", "", T0.Add(3*time.Second))
	assert.ErrorIs(t, err, store.ErrLive, "a resend of the first while the second is live")
	require.NoError(t, j.Settle("c2", inbox.SubmissionFailed, inbox.ReasonTimeout, "", T0.Add(4*time.Second)))
	require.NoError(t, j.Settle("c1", inbox.SubmissionSending, "", "", T0.Add(5*time.Second)), "a failed one is not live")

	got, err := j.Unsettled()
	require.NoError(t, err)
	live := map[string]int{}
	for _, s := range got {
		live[s.Key.Source+"|"+s.Key.Session+"|"+s.Key.RequestID]++
	}
	for k, n := range live {
		assert.Equal(t, 1, n, "live submissions of %s", k)
	}
	assert.Len(t, got, 4, "c1 and the three other requests")
}

// The identity is made once: reopening keeps the instance id and the
// command source.
func testIdentity(t *testing.T, st Store) {
	open := st.Open
	j := open()
	first := j.Identity()
	require.NotEmpty(t, first.InstanceID)
	assert.Equal(t, store.NewSource(first.Host, first.InstanceID), first.Source)
	require.NoError(t, j.Close())
	j = open()
	assert.Equal(t, first.InstanceID, j.Identity().InstanceID)
	assert.Equal(t, first.Source, j.Identity().Source)
	assert.True(t, first.CreatedAt.Equal(j.Identity().CreatedAt))
}

// History filters by agent, session, operator, outcome, time range and a
// case-insensitive substring of the question or the answer, taken
// literally (no LIKE wildcards, no escapes).
func testHistoryFilters(t *testing.T, st Store) {
	open := st.Open
	j := open()
	mk := func(cmd string, min int, edit func(*inbox.Submission)) {
		s := Submission(cmd, T0.Add(time.Duration(min)*time.Minute))
		edit(&s)
		require.NoError(t, j.Record(s))
	}
	mk("a", 0, func(s *inbox.Submission) {})
	mk("b", 1, func(s *inbox.Submission) { s.Agent, s.Question = "deployer", "Deploy to PRODUCTION?" })
	mk("c", 2, func(s *inbox.Submission) { s.Key.Session, s.By = "s2", "bob" })
	mk("d", 3, func(s *inbox.Submission) {
		s.Answer = aep.Answer{Option: "allow_once"}
		s.Question = "Run rm -rf build/?"
	})
	mk("e", 4, func(s *inbox.Submission) {
		s.Answer = aep.Answer{Values: aep.Values{"city": "Zürich"}}
		s.Key.Session = "deploy-01M90W3ZG77V4SXVG7CY95N4DN"
	})
	mk("f", 5, func(s *inbox.Submission) { s.Question = `Is 100% of C:\build_1 done?` })
	require.NoError(t, j.Settle("b", inbox.SubmissionRejected, "invalid", "", T0.Add(time.Hour)))
	require.NoError(t, j.Settle("c", inbox.SubmissionAccepted, "", "", T0.Add(time.Hour)))

	for _, tc := range []struct {
		name string
		q    store.HistoryQuery
		want []string
	}{
		{"everything, newest first", store.HistoryQuery{}, []string{"f", "e", "d", "c", "b", "a"}},
		{"agent", store.HistoryQuery{Agent: "deployer"}, []string{"b"}},
		{"session", store.HistoryQuery{Session: "s2"}, []string{"c"}},
		{"session by its short form", store.HistoryQuery{Session: "deploy-…\u2060Y95N4DN"}, []string{"e"}},
		{"session by its short form, typed", store.HistoryQuery{Session: "deploy-...95N4DN"}, []string{"e"}},
		{"a short form is not a wildcard elsewhere", store.HistoryQuery{Session: "ploy-…Y95N4DN"}, nil},
		{"operator", store.HistoryQuery{Operator: "bob"}, []string{"c"}},
		{"outcome", store.HistoryQuery{Outcome: inbox.SubmissionRejected}, []string{"b"}},
		{"still sending", store.HistoryQuery{Outcome: inbox.SubmissionSending}, []string{"f", "e", "d", "a"}},
		{"since", store.HistoryQuery{Since: T0.Add(3 * time.Minute)}, []string{"f", "e", "d"}},
		{"until (exclusive)", store.HistoryQuery{Until: T0.Add(time.Minute)}, []string{"a"}},
		{"time range", store.HistoryQuery{Since: T0.Add(time.Minute), Until: T0.Add(3 * time.Minute)}, []string{"c", "b"}},
		{"question, any case", store.HistoryQuery{Text: "production"}, []string{"b"}},
		{"option sent", store.HistoryQuery{Text: "ALLOW_ONCE"}, []string{"d"}},
		{"text sent", store.HistoryQuery{Text: "Ship It"}, []string{"f", "c", "b", "a"}},
		{"a value, beyond ASCII", store.HistoryQuery{Text: "ZÜRICH"}, []string{"e"}},
		{"a value's field id", store.HistoryQuery{Text: `"name"`}, []string{"f", "c", "b", "a"}},
		{"percent is literal, not a pattern", store.HistoryQuery{Text: "%"}, []string{"f"}},
		{"underscore is literal, not a pattern", store.HistoryQuery{Text: "d_1"}, []string{"f"}},
		{"an underscore matches only itself", store.HistoryQuery{Text: "w_once"}, []string{"d"}},
		{"no wildcard across characters", store.HistoryQuery{Text: "allow%once"}, nil},
		{"backslash is literal, not an escape", store.HistoryQuery{Text: `c:\b`}, []string{"f"}},
		{"filters combine", store.HistoryQuery{Agent: "builder", Text: "which", Operator: "alice", Until: T0.Add(4 * time.Minute)}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			page, err := j.History(context.Background(), tc.q)
			require.NoError(t, err)
			assert.Equal(t, tc.want, CommandIDs(page.Entries))
			assert.Empty(t, page.Next, "one page")
		})
	}

	page, err := j.History(context.Background(), store.HistoryQuery{Agent: "deployer"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	b := page.Entries[0]
	assert.Equal(t, "Deploy to PRODUCTION?", b.Question)
	assert.Equal(t, inbox.SubmissionRejected, b.State)
	require.Len(t, b.Changes, 2, "posted, then rejected")
	assert.Equal(t, inbox.SubmissionSending, b.Changes[0].State)
	assert.True(t, b.Changes[0].At.Equal(T0.Add(time.Minute)))
	assert.Equal(t, store.Change{State: inbox.SubmissionRejected, Reason: "invalid", At: b.Changes[1].At}, b.Changes[1])
	assert.True(t, b.Changes[1].At.Equal(T0.Add(time.Hour)))
}

// Pages hold 50, newest first; paging on while new answers are posted
// neither repeats nor skips an entry.
func testHistoryPages(t *testing.T, st Store) {
	open := st.Open
	j := open()
	const n = 120
	var want []string
	for i := range n {
		at := T0.Add(time.Duration(i/3) * time.Second) // three share each time: insertion order breaks the tie
		require.NoError(t, j.Record(Submission(CmdID(i), at)))
		want = append([]string{CmdID(i)}, want...)
	}

	var got []string
	q := store.HistoryQuery{}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4, "120 entries are three pages")
		page, err := j.History(context.Background(), q)
		require.NoError(t, err)
		if page.Next != "" {
			assert.Len(t, page.Entries, store.PageSize, "a full page before the last")
		}
		got = append(got, CommandIDs(page.Entries)...)
		// New answers arrive between pages, at the same time as the
		// newest and later.
		require.NoError(t, j.Record(Submission("new-a"+CmdID(pages), T0.Add(time.Duration(n/3-1)*time.Second))))
		require.NoError(t, j.Record(Submission("new-b"+CmdID(pages), T0.Add(time.Hour))))
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	assert.Equal(t, want, got, "every entry once, in order")

	for _, bad := range []string{"page-2", "1.x", "x.1"} {
		_, err := j.History(context.Background(), store.HistoryQuery{After: bad})
		assert.ErrorIs(t, err, store.ErrBadCursor, "cursor %q", bad)
	}

	page, err := j.History(context.Background(), store.HistoryQuery{Limit: 7})
	require.NoError(t, err)
	assert.Len(t, page.Entries, 7, "a smaller page when asked")
}

// Prune removes what was posted before the cutoff, with its states, and
// keeps the rest whole.
func testPrune(t *testing.T, st Store) {
	open := st.Open
	j := open()
	for i := range 10 {
		s := Submission(CmdID(i), T0.Add(time.Duration(i)*time.Hour))
		require.NoError(t, j.Record(s))
		require.NoError(t, j.Settle(CmdID(i), inbox.SubmissionAccepted, "", "", s.At.Add(time.Second)))
	}

	n, err := j.Prune(context.Background(), T0.Add(4*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)

	page, err := j.History(context.Background(), store.HistoryQuery{})
	require.NoError(t, err)
	assert.Equal(t, []string{CmdID(9), CmdID(8), CmdID(7), CmdID(6), CmdID(5), CmdID(4)}, CommandIDs(page.Entries))
	for _, e := range page.Entries {
		assert.Len(t, e.Changes, 2, "%s keeps its states", e.CommandID)
	}
	got, err := j.Unsettled()
	require.NoError(t, err)
	assert.Len(t, got, 6, "the pruned ones are gone from the resume scan too")

	n, err = j.Prune(context.Background(), T0.Add(4*time.Hour))
	require.NoError(t, err)
	assert.Zero(t, n, "nothing more to prune")
}

// session is a session of operator, opened at.
func session(hash, operator string, at time.Time) store.Session {
	return store.Session{IDHash: hash, Operator: operator, Secret: "fp-" + operator, UserAgent: "Firefox", Created: at, LastSeen: at}
}

// Sessions survive a restart and are ended one, the others, or the
// expired at a time.
func testSessions(t *testing.T, st Store) {
	open := st.Open
	ctx := context.Background()
	j := open()
	require.NoError(t, j.CreateSession(ctx, session("a1", "ann", T0)))
	require.NoError(t, j.CreateSession(ctx, session("a2", "ann", T0.Add(time.Hour))))
	require.NoError(t, j.CreateSession(ctx, session("a3", "ann", T0.Add(2*time.Hour))))
	require.NoError(t, j.CreateSession(ctx, session("b1", "bo", T0)))
	require.Error(t, j.CreateSession(ctx, session("a1", "ann", T0)), "an id hash is kept once")
	require.NoError(t, j.TouchSession(ctx, "a1", T0.Add(30*time.Minute)))
	require.NoError(t, j.Close())

	j = open()
	got, ok, err := j.LookupSession(ctx, "a1")
	require.NoError(t, err)
	require.True(t, ok, "a session survives a restart")
	assert.Equal(t, store.Session{IDHash: "a1", Operator: "ann", Secret: "fp-ann", UserAgent: "Firefox",
		Created: T0, LastSeen: T0.Add(30 * time.Minute)}, normal(got))

	many, err := j.LookupSessions(ctx, []string{"a1", "b1", "none"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a1", "b1"}, slices.Sorted(maps.Keys(many)), "the sessions there are, in one lookup")
	assert.Equal(t, normal(got), normal(many["a1"]))
	ids := make([]string, 1200) // more than one query's worth
	for i := range ids {
		ids[i] = "x" + strconv.Itoa(i)
	}
	ids[1100] = "b1"
	many, err = j.LookupSessions(ctx, ids)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1"}, slices.Sorted(maps.Keys(many)))

	n, err := j.DeleteOtherSessions(ctx, "ann", "a1")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "ann's other sessions end")
	for hash, want := range map[string]bool{"a1": true, "a2": false, "a3": false, "b1": true} {
		_, ok, err := j.LookupSession(ctx, hash)
		require.NoError(t, err)
		assert.Equal(t, want, ok, "session %s: got kept=%v, want %v", hash, ok, want)
	}

	// a1 last seen T0+30m, b1 T0: idle before T0+10m ends b1 only.
	n, err = j.DeleteExpiredSessions(ctx, T0.Add(10*time.Minute), T0.Add(-time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	// created before T0+1s ends a1.
	n, err = j.DeleteExpiredSessions(ctx, T0.Add(-time.Hour), T0.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	require.NoError(t, j.CreateSession(ctx, session("c1", "cy", T0)))
	require.NoError(t, j.DeleteSession(ctx, "c1"))
	require.NoError(t, j.DeleteSession(ctx, "c1"), "ending a session that is gone is not an error")
	_, ok, err = j.LookupSession(ctx, "c1")
	require.NoError(t, err)
	assert.False(t, ok, "a deleted session is not found")
}

// A session is taken (a panel's hand-off redeemed) once: of takers
// racing for it, on one journal or on replicas sharing the database,
// exactly one is told it ended it; a gone one is taken by no one.
func testSessionTakenOnce(t *testing.T, st Store) {
	ctx := context.Background()
	const takers = 16
	js := []Backend{st.Open()}
	if st.Shared {
		js = append(js, st.Open())
	}
	require.NoError(t, js[0].CreateSession(ctx, session("h1", "ann", T0)))
	taken := make(chan bool, takers)
	errs := make(chan error, takers)
	start := make(chan struct{})
	for i := range takers {
		go func() {
			<-start
			ok, err := js[i%len(js)].TakeSession(ctx, "h1")
			taken <- ok
			errs <- err
		}()
	}
	close(start)
	n := 0
	for range takers {
		require.NoError(t, <-errs)
		if <-taken {
			n++
		}
	}
	assert.Equal(t, 1, n, "takers told they ended the session: got %d, want exactly 1", n)
	_, ok, err := js[0].LookupSession(ctx, "h1")
	require.NoError(t, err)
	assert.False(t, ok, "a taken session is gone")
	ok, err = js[0].TakeSession(ctx, "never")
	require.NoError(t, err)
	assert.False(t, ok, "a session that never was is taken by no one")
}

// normal makes a session's times comparable with ==.
func normal(s store.Session) store.Session {
	s.Created, s.LastSeen = s.Created.UTC(), s.LastSeen.UTC()
	if !s.Checked.IsZero() {
		s.Checked = s.Checked.UTC()
	}
	return s
}

// A sign-in at the identity provider keeps its subject and sealed
// refresh token across a restart; of two replicas claiming its recheck
// from the same last check, one wins; its new refresh token is kept.
func testSessionChecks(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	s := session("p1", "ann", T0)
	s.Subject, s.Refresh, s.Checked = "sub-ann", []byte("sealed-1"), T0
	require.NoError(t, j.CreateSession(ctx, s))
	require.NoError(t, j.Close())

	j = st.Open()
	got, ok, err := j.LookupSession(ctx, "p1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, s, normal(got), "subject, refresh token and last check survive a restart")

	won, err := j.ClaimSessionCheck(ctx, "p1", T0, T0.Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, won, "the first claim from the last check takes")
	won, err = j.ClaimSessionCheck(ctx, "p1", T0, T0.Add(time.Minute+time.Second))
	require.NoError(t, err)
	assert.False(t, won, "a second claim from the same last check does not")
	require.NoError(t, j.SetSessionRefresh(ctx, "p1", []byte("sealed-2")))
	got, _, err = j.LookupSession(ctx, "p1")
	require.NoError(t, err)
	assert.Equal(t, "sealed-2", string(got.Refresh))
	assert.True(t, got.Checked.Equal(T0.Add(time.Minute)), "checked at the winning claim: got %v", got.Checked)

	plain := session("s1", "bo", T0)
	require.NoError(t, j.CreateSession(ctx, plain))
	got, _, err = j.LookupSession(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, plain, normal(got), "a sign-in with a secret has no subject, token or check")
}

// The people the identity provider signed in are kept with their role
// and teams, each sign-in replacing what the last one said, across a
// restart; those unseen since a time are forgotten.
func testPeople(t *testing.T, st Store) {
	ctx := context.Background()
	j := st.Open()
	require.NoError(t, j.SeePerson(ctx, store.Person{Name: "ann", Subject: "sub-ann", Role: "answerer", Teams: []string{"oncall", "leads"}, LastSeen: T0}))
	require.NoError(t, j.SeePerson(ctx, store.Person{Name: "vera", Subject: "sub-vera", Role: "viewer", LastSeen: T0}))
	require.NoError(t, j.SeePerson(ctx, store.Person{Name: "ann", Subject: "sub-ann", Role: "viewer", Teams: []string{"leads"}, LastSeen: T0.Add(time.Hour)}))
	err := j.SeePerson(ctx, store.Person{Name: "ann", Subject: "sub-mallory", Role: "admin", Teams: []string{"oncall"}, LastSeen: T0.Add(2 * time.Hour)})
	require.ErrorIs(t, err, store.ErrNameTaken, "another account of the provider giving itself ann's name")
	require.NoError(t, j.Close())

	j = st.Open()
	people, err := j.People(ctx, time.Time{})
	require.NoError(t, err)
	for i := range people {
		people[i].LastSeen = people[i].LastSeen.UTC()
	}
	assert.Equal(t, []store.Person{
		{Name: "ann", Subject: "sub-ann", Role: "viewer", Teams: []string{"leads"}, LastSeen: T0.Add(time.Hour)},
		{Name: "vera", Subject: "sub-vera", Role: "viewer", LastSeen: T0},
	}, people, "the latest of each, after a restart; another account's sign-in changed nothing")
	seen, err := j.People(ctx, T0.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, seen, 1)
	assert.Equal(t, "ann", seen[0].Name, "seen since a time")

	n, err := j.ForgetPeople(ctx, T0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "vera, unseen since, is forgotten")
	people, err = j.People(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, people, 1)
	assert.Equal(t, "ann", people[0].Name)
}

// Behind the inbox, the journal keeps a post before BeginSubmission
// returns (so before its command can be sent), and every state after;
// a new process finds them in the journal.
func testInboxWritesAhead(t *testing.T, st Store) {
	open := st.Open
	j := open()
	now := T0
	in := inbox.New(inbox.Options{Journal: j, Now: func() time.Time { return now }, OwnSources: []string{j.Identity().Source}})
	req, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Time: T0.Format(time.RFC3339Nano), Source: "aep://h/agent", Agent: "builder",
		Session: "s1", Seq: aep.Int64(0), Capture: "full", Data: aep.Request{Kind: aep.KindForm, Prompt: "Which release?",
			Fields: []aep.FieldSpec{{ID: "name", Type: aep.FieldString, Label: "Name", Required: true}}}})
	require.NoError(t, err)
	in.Apply(req)
	id := in.Cards(inbox.Query{})[0].ID

	posted, err := in.BeginSubmission(id, inbox.Submission{Token: "t1", CommandID: "c1", By: "alice",
		Answer: aep.Answer{Values: aep.Values{"name": "v1.2"}}, Form: url.Values{"f0": {"v1.2"}}})
	require.NoError(t, err)
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "kept before BeginSubmission returned")
	AssertSameSubmission(t, posted, waiting[0])
	assert.Equal(t, "Which release?", waiting[0].Question)
	assert.Equal(t, "builder", waiting[0].Agent)

	now = now.Add(time.Second)
	in.SettleSubmission(id, "c1", inbox.SubmissionRejected, "invalid", "no such release")
	require.NoError(t, in.Flush(context.Background()), "the inbox's queued journal writes are made")
	require.NoError(t, j.Close(), "the process ends")

	j = open()
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	assert.Empty(t, waiting, "the rejection was kept")
	page, err := j.History(context.Background(), store.HistoryQuery{Operator: "alice"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	e := page.Entries[0]
	assert.Equal(t, inbox.SubmissionRejected, e.State)
	assert.Equal(t, "no such release", e.Detail)
	assert.True(t, e.SettledAt.Equal(T0.Add(time.Second)))
	require.Len(t, e.Changes, 2)
	assert.Equal(t, []inbox.SubmissionState{inbox.SubmissionSending, inbox.SubmissionRejected}, []inbox.SubmissionState{e.Changes[0].State, e.Changes[1].State})
}

// The resume scan: a post journaled with its command bytes by one
// process is restored onto its card by the next, handed back with the
// same id and bytes, and an over-age one is kept as not sent.
func testResumeScan(t *testing.T, st Store) {
	open := st.Open
	now := T0
	clock := func() time.Time { return now }
	ask := func(in *inbox.Inbox, id string, seq int64) inbox.CardID {
		req, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Time: T0.Format(time.RFC3339Nano), Source: "aep://h/agent", Agent: "builder",
			Session: "s1", Seq: aep.Int64(seq), Capture: "full", Data: aep.Request{Kind: aep.KindPermission, Prompt: "Deploy?",
				Options: []aep.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}})
		require.NoError(t, err)
		in.Apply(req)
		return inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: id}.CardID()
	}
	build := func(s inbox.Submission) ([]byte, error) { return []byte(`{"id":"` + s.CommandID + `"}`), nil }

	j := open()
	first := inbox.New(inbox.Options{Journal: j, Now: clock, Command: build})
	_, err := first.BeginSubmission(ask(first, "r-old", 0), inbox.Submission{Token: "t0", CommandID: "c-old", By: "alice", Answer: aep.Answer{Option: "no"}})
	require.NoError(t, err)
	now = now.Add(time.Hour)
	_, err = first.BeginSubmission(ask(first, "r1", 1), inbox.Submission{Token: "t1", CommandID: "c1", By: "alice", Answer: aep.Answer{Option: "yes"}})
	require.NoError(t, err)
	require.NoError(t, j.Close(), "the process ends before any ack")

	j = open()
	now = now.Add(time.Minute)
	second := inbox.New(inbox.Options{Journal: j, Now: clock})
	n, err := second.Restore()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	card := ask(second, "r-old", 0)
	ask(second, "r1", 1)
	again := second.Resume(10 * time.Minute)
	require.Len(t, again, 1)
	assert.Equal(t, "c1", again[0].CommandID)
	assert.Equal(t, `{"id":"c1"}`, string(again[0].Command), "the journaled bytes")
	assert.Equal(t, "alice", again[0].By)

	require.NoError(t, second.Flush(context.Background()), "the inbox's queued journal writes are made")
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "only the resent one still waits")
	c, ok := second.Card(card)
	require.True(t, ok)
	require.NotNil(t, c.Submission)
	assert.Equal(t, inbox.SubmissionUnknown, c.Submission.State, "it was sending when the process ended: it may have left, so unknown, not \"not sent\"")
	assert.Equal(t, inbox.ReasonTooOld, c.Submission.Reason)
}

// CommandIDs are the entries' command ids, in order.
func CommandIDs(es []store.Entry) []string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.CommandID)
	}
	return ids
}

// Lookup finds a command in its latest state; KeepRecorded settles an
// accepted answer for good (Unsettled leaves it out, across a reopen) and
// Recent lists the recorded ones newest first, one per card, with the
// request's kind, options and capture that History and the restored card
// read.
func testRecorded(t *testing.T, st Store) {
	j := st.Open()
	perm := Submission("perm", T0)
	perm.Kind = aep.KindPermission
	perm.Options = []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}
	perm.Capture = aep.CaptureMetadata
	perm.Answer = aep.Answer{Option: "allow"}
	older := Submission("older", T0.Add(-time.Hour))
	older.Card = perm.Card // an earlier answer to the same card, rejected
	older.Key.RequestID = perm.Key.RequestID
	other := Submission("other", T0.Add(time.Minute))
	for _, s := range []inbox.Submission{older, perm, other} {
		require.NoError(t, j.Record(s))
		if s.CommandID == "older" {
			require.NoError(t, j.Settle("older", inbox.SubmissionRejected, "invalid", "", T0))
		}
	}
	require.NoError(t, j.Settle("perm", inbox.SubmissionAccepted, "", "", T0.Add(time.Second)))
	require.NoError(t, j.Settle("other", inbox.SubmissionAccepted, "", "", T0.Add(time.Second)))

	got, ok, err := j.Lookup("perm")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, inbox.SubmissionAccepted, got.State, "its latest state")
	assert.Equal(t, perm.Options, got.Options)
	assert.Equal(t, aep.CaptureMetadata, got.Capture)
	_, ok, err = j.Lookup("unknown")
	require.NoError(t, err)
	assert.False(t, ok)

	rec := inbox.Recorded{Answer: aep.Answer{Option: "allow"}, By: "alice", Via: "control", Capture: aep.CaptureMetadata, EventID: "a1", Cause: "perm"}
	for _, id := range []string{"older", "perm", "other"} {
		require.NoError(t, j.KeepRecorded(id, rec, T0.Add(2*time.Second)))
	}
	require.NoError(t, j.KeepRecorded("unknown", rec, T0), "an unknown command is ignored")
	require.NoError(t, j.Close())

	j = st.Open()
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	assert.Empty(t, waiting, "recorded answers are settled for good")
	recent, err := j.Recent(10)
	require.NoError(t, err)
	require.Len(t, recent, 2, "one per card")
	assert.Equal(t, "other", recent[0].CommandID, "newest posted first")
	assert.Equal(t, "perm", recent[1].CommandID, "the newest answer of its card")
	require.NotNil(t, recent[1].Recorded)
	assert.Equal(t, rec, *recent[1].Recorded)
	assert.True(t, recent[1].RecordedAt.Equal(T0.Add(2*time.Second)))
	assert.Equal(t, aep.KindPermission, recent[1].Kind)
	one, err := j.Recent(1)
	require.NoError(t, err)
	require.Len(t, one, 1)
	none, err := j.Recent(0)
	require.NoError(t, err)
	assert.Empty(t, none)
}

// A queued answer (posted while the relay was away) is kept queued, not
// settled, is live (a second answer to its request is refused), and comes
// back after a restart to be sent.
func testQueued(t *testing.T, st Store) {
	now := T0
	clock := func() time.Time { return now }
	ask := func(in *inbox.Inbox) inbox.CardID {
		req, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Time: T0.Format(time.RFC3339Nano), Source: "aep://h/agent", Agent: "builder",
			Session: "s1", Seq: aep.Int64(1), Capture: "full", Data: aep.Request{Kind: aep.KindPermission, Prompt: "Deploy?",
				Options: []aep.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}})
		require.NoError(t, err)
		in.Apply(req)
		return inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r1"}.CardID()
	}
	j := st.Open()
	first := inbox.New(inbox.Options{Journal: j, Now: clock})
	id := ask(first)
	_, err := first.BeginSubmission(id, inbox.Submission{Token: "t1", CommandID: "c1", By: "alice", Answer: aep.Answer{Option: "yes"}})
	require.NoError(t, err)
	first.SettleSubmission(id, "c1", inbox.SubmissionQueued, "", "")
	require.NoError(t, first.Flush(t.Context()), "the inbox's queued journal writes are made")
	page, err := j.History(t.Context(), store.HistoryQuery{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, inbox.SubmissionQueued, page.Entries[0].Submission.State)
	assert.True(t, page.Entries[0].Submission.SettledAt.IsZero(), "queued is not settled")
	second := Submission("c2", T0)
	second.Key = inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r1"}
	assert.ErrorIs(t, j.Record(second), store.ErrLive, "a queued answer is live")
	require.NoError(t, j.Close())

	j = st.Open()
	again := inbox.New(inbox.Options{Journal: j, Now: clock})
	n, err := again.Restore()
	require.NoError(t, err)
	require.Equal(t, 1, n, "the queued answer is restored")
	ask(again)
	resent := again.Resume(10 * time.Minute)
	require.Len(t, resent, 1)
	assert.Equal(t, "c1", resent[0].CommandID)
	assert.Equal(t, inbox.SubmissionSending, resent[0].State, "handed to the respond path, which says queued again if the relay is away")
}

// A submission is found by its card and form token, the latest first; by
// a second replica on a shared store too.
func testLookupToken(t *testing.T, st Store) {
	j := st.Open()
	first := Submission("t1", T0)
	require.NoError(t, j.Record(first))
	require.NoError(t, j.Settle("t1", inbox.SubmissionFailed, inbox.ReasonTimeout, "", T0.Add(time.Second)))
	again := Submission("t2", T0.Add(2*time.Second))
	again.Card, again.Key, again.Token = first.Card, first.Key, first.Token
	require.NoError(t, j.Record(again))

	got, ok, err := j.LookupToken(first.Card, first.Token)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "t2", got.CommandID, "the latest post of the token")
	assert.Equal(t, inbox.SubmissionSending, got.State)
	assert.Equal(t, first.Key, got.Key)

	_, ok, err = j.LookupToken(first.Card, "tok-other")
	require.NoError(t, err)
	assert.False(t, ok, "another token")
	_, ok, err = j.LookupToken("card-other", first.Token)
	require.NoError(t, err)
	assert.False(t, ok, "the token on another card")

	if st.Shared {
		two := st.Open()
		got, ok, err := two.LookupToken(first.Card, first.Token)
		require.NoError(t, err)
		require.True(t, ok, "a second replica finds it")
		assert.Equal(t, "t2", got.CommandID)
		require.NoError(t, two.Close())
	}
}

// Resend leases: the replica that records a submission holds its lease
// for the lease duration from its post; others cannot claim it until it
// lapses, renewing extends it, and once lapsed exactly one other replica
// takes it. Settled submissions are no one's to resend. On a store that
// only one process opens at a time, the next process is the other
// replica, and one under the same name holds its leases again.
func testLeases(t *testing.T, st Store) {
	const lease = time.Minute
	a := st.OpenAs("a", lease)
	live, done := Submission("l1", T0), Submission("l2", T0)
	require.NoError(t, a.Record(live))
	require.NoError(t, a.Record(done))
	require.NoError(t, a.Settle("l2", inbox.SubmissionRejected, "invalid", "", T0.Add(time.Second)))

	lapsed, err := a.Lapsed(T0.Add(2 * lease))
	require.NoError(t, err)
	assert.Empty(t, lapsed, "a replica's own leases are not lapsed to it")
	held, err := a.Claim("l1", T0.Add(time.Second))
	require.NoError(t, err)
	assert.True(t, held, "its own lease")
	require.NoError(t, a.Renew(T0.Add(50*time.Second)), "held until 50s + lease")

	var b Backend
	if st.Shared {
		b = st.OpenAs("b", lease)
		t.Cleanup(func() { _ = a.Close() })
	} else {
		require.NoError(t, a.Close())
		b = st.OpenAs("b", lease)
	}
	at := T0.Add(50*time.Second + lease - time.Second)
	lapsed, err = b.Lapsed(at)
	require.NoError(t, err)
	assert.Empty(t, lapsed, "renewed: not lapsed yet")
	held, err = b.Claim("l1", at)
	require.NoError(t, err)
	assert.False(t, held, "another replica's lease that has not lapsed")

	at = T0.Add(50*time.Second + lease)
	lapsed, err = b.Lapsed(at)
	require.NoError(t, err)
	require.Len(t, lapsed, 1, "only the live one")
	assert.Equal(t, "l1", lapsed[0].CommandID)
	held, err = b.Claim("l1", at)
	require.NoError(t, err)
	assert.True(t, held, "lapsed: taken over")
	if st.Shared {
		held, err = a.Claim("l1", at)
		require.NoError(t, err)
		assert.False(t, held, "taken over: the first replica no longer holds it")
	}
	lapsed, err = b.Lapsed(at.Add(2 * lease))
	require.NoError(t, err)
	assert.Empty(t, lapsed, "its own now")
	require.NoError(t, b.Close())

	if !st.Shared {
		b = st.OpenAs("b", lease)
		held, err = b.Claim("l1", at)
		require.NoError(t, err)
		assert.True(t, held, "the same replica restarted holds its leases")
		require.NoError(t, b.Close())
	}
}

// askOn makes request r1 (a permission) on in and returns its card.
func askOn(t *testing.T, in *inbox.Inbox) inbox.CardID {
	t.Helper()
	req, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Time: T0.Format(time.RFC3339Nano), Source: "aep://h/agent", Agent: "builder",
		Session: "s1", Seq: aep.Int64(1), Capture: "full", Data: aep.Request{Kind: aep.KindPermission, Prompt: "Deploy?",
			Options: []aep.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}})
	require.NoError(t, err)
	in.Apply(req)
	return inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r1"}.CardID()
}

// Replicas on one journal (inboxes sharing it; on a store only one
// process opens, one journal value, as the database's rule is the same)
// give one answer per request, and the same answer for the same form
// wherever it is posted: the form posted first on one and again on
// another is a duplicate there, with the first's submission on the card;
// another form while that answer is live is refused as in flight (409),
// not as a journal failure (503); and once the answer settled the card,
// the same form is still known as posted everywhere.
func testReplicasOneAnswer(t *testing.T, st Store) {
	now := T0
	clock := func() time.Time { return now }
	ja := st.Open()
	jb, jc := ja, ja
	if st.Shared {
		jb, jc = st.Open(), st.Open()
	}
	a := inbox.New(inbox.Options{Journal: ja, Now: clock})
	b := inbox.New(inbox.Options{Journal: jb, Now: clock})
	c := inbox.New(inbox.Options{Journal: jc, Now: clock})
	id := askOn(t, a)
	askOn(t, b)
	askOn(t, c)

	first, err := a.BeginSubmission(id, inbox.Submission{Token: "tok-1", CommandID: "c1", By: "alice", Answer: aep.Answer{Option: "yes"}})
	require.NoError(t, err)

	now = now.Add(time.Second)
	got, err := b.BeginSubmission(id, inbox.Submission{Token: "tok-1", CommandID: "c2", By: "alice", Answer: aep.Answer{Option: "yes"}})
	require.ErrorIs(t, err, inbox.ErrDuplicate, "the same form posted on a second replica")
	assert.NotErrorIs(t, err, inbox.ErrNotRecorded)
	assert.Equal(t, first.CommandID, got.CommandID, "the first post's submission")
	card, ok := b.Card(id)
	require.True(t, ok)
	require.NotNil(t, card.Submission, "the second replica shows the first's answer")
	assert.Equal(t, "c1", card.Submission.CommandID)
	assert.True(t, card.Submission.InFlight())

	_, err = c.BeginSubmission(id, inbox.Submission{Token: "tok-2", CommandID: "c3", By: "bob", Answer: aep.Answer{Option: "no"}})
	require.ErrorIs(t, err, inbox.ErrInFlight, "another form while the first answer is live")
	assert.NotErrorIs(t, err, inbox.ErrNotRecorded, "not a journal failure")
	assert.NotErrorIs(t, err, inbox.ErrDuplicate)
	_, found, err := jc.Lookup("c3")
	require.NoError(t, err)
	assert.False(t, found, "nothing recorded for the refused post")

	assert.True(t, c.Posted(id, "tok-1"), "a replica that never saw the form knows it was posted")
	assert.False(t, c.Posted(id, "tok-2"), "the refused form was not")
	assert.False(t, c.Posted(id, "tok-never"))
	card, _ = c.Card(id)
	require.NotNil(t, card.Submission, "and shows the answer it found")
	assert.Equal(t, "c1", card.Submission.CommandID)
}

// A replica that journaled an answer and died before the agent's ack
// (its lease is not renewed) has it sent again by exactly one other
// replica once the lease lapses, with the same command id; a replica
// that restarts while the first one lives resends nothing of it.
func testReplicasReclaim(t *testing.T, st Store) {
	const lease = time.Minute
	now := T0
	clock := func() time.Time { return now }
	ja := st.OpenAs("a", lease)
	a := inbox.New(inbox.Options{Journal: ja, Now: clock})
	id := askOn(t, a)
	sent, err := a.BeginSubmission(id, inbox.Submission{Token: "tok-1", CommandID: "c1", By: "alice", Answer: aep.Answer{Option: "yes"}})
	require.NoError(t, err)
	if !st.Shared {
		require.NoError(t, ja.Close()) // a dies; b is the next process on the file
	}

	var jb, jc inbox.Journal
	jb = st.OpenAs("b", lease)
	jc = jb
	if st.Shared {
		jc = st.OpenAs("c", lease)
	}
	b := inbox.New(inbox.Options{Journal: jb, Now: clock})
	c := inbox.New(inbox.Options{Journal: jc, Now: clock})
	n, err := b.Restore()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	askOn(t, b)
	askOn(t, c)
	now = T0.Add(lease / 2)
	assert.Empty(t, b.Resume(10*time.Minute), "a restart while a's lease holds resends nothing")
	assert.Empty(t, b.Reclaim(10*time.Minute), "nor does a replica that stays up")
	card, _ := b.Card(id)
	require.NotNil(t, card.Submission)
	assert.True(t, card.Submission.InFlight(), "the card shows the answer on its way, not settled by b")

	now = T0.Add(lease)
	again := b.Reclaim(10 * time.Minute)
	require.Len(t, again, 1, "the lease lapsed: b sends it again")
	assert.Equal(t, sent.CommandID, again[0].CommandID, "with the same command id")
	assert.Equal(t, string(sent.Command), string(again[0].Command), "and the same bytes")
	assert.Empty(t, c.Reclaim(10*time.Minute), "exactly one replica resends it")
	assert.Empty(t, b.Reclaim(10*time.Minute), "once")
}

// Peers are the queued answers (posted while the relay was away) whose
// lease another replica holds: not a replica's own, not one sent or
// settled, and one taken over (claimed after a lapse) is the taker's.
func testPeers(t *testing.T, st Store) {
	if !st.Shared {
		t.Skip("one process opens this store at a time: no other replica's answers to show")
	}
	const lease = time.Minute
	a, b := st.OpenAs("a", lease), st.OpenAs("b", lease)
	for i, state := range []inbox.SubmissionState{inbox.SubmissionQueued, inbox.SubmissionQueued, inbox.SubmissionSending, inbox.SubmissionQueued} {
		require.NoError(t, a.Record(Submission(CmdID(i), T0.Add(time.Duration(i)*time.Second))))
		require.NoError(t, a.Settle(CmdID(i), state, "", "", T0.Add(time.Duration(i)*time.Second)))
	}
	require.NoError(t, a.Settle(CmdID(3), inbox.SubmissionRejected, "invalid", "", T0.Add(time.Minute)))
	ids := func(j Backend) []string {
		t.Helper()
		got, err := j.Peers()
		require.NoError(t, err)
		var out []string
		for _, s := range got {
			out = append(out, s.CommandID)
		}
		return out
	}
	assert.Equal(t, []string{CmdID(0), CmdID(1)}, ids(b), "a's queued answers, oldest first")
	assert.Empty(t, ids(a), "not a replica's own")
	held, err := b.Claim(CmdID(1), T0.Add(2*lease))
	require.NoError(t, err)
	require.True(t, held, "b takes over a lapsed lease")
	assert.Equal(t, []string{CmdID(0)}, ids(b), "one taken over is b's own")
	assert.Equal(t, []string{CmdID(1)}, ids(a), "and a peer's to a")
}
