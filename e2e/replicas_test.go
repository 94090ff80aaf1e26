//go:build unix

package e2e

import (
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/crashpoint"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// TestMain stops the throwaway PostgreSQL server the replica test starts
// (pgtest.Need), once the package's tests end.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Three serve replicas as processes on one relay and one PostgreSQL
// database, a recording demo agent asking one permission per session,
// each answered by a post on a replica chosen at random; one in five is
// posted on two replicas at once (alternately the same form twice, and
// two forms opened on two replicas). Halfway one replica is killed with
// SIGKILL: what it journaled and had not had
// acked is sent again by a survivor once its lease lapses: here, at its
// crash point, after the 303 and before the send. The agent's
// record: every request executed once, under one command id, never two.
// The surviving replicas' pages show every card answered, and their
// History lists the same answers.
func TestReplicasAnswerExactlyOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	cards := 200
	if testing.Short() {
		cards = 20
	}
	bin := buildCrashBinary(t, t.TempDir())
	r := newCrashRig(t, bin)
	r.db = db
	r.args = []string{"--lease", "1s"}
	scenarios := make([]string, cards)
	for i := range scenarios {
		scenarios[i] = agent.ScenarioPermission
	}
	ag := r.base.startAgent(t, agentOptions{scenarios: scenarios})

	type replica struct {
		s    *stack
		p    *process
		name string
	}
	// Replica a dies (SIGKILL, its crash point) right after it lets the
	// first answer posted on it go, before sending its command (its 303,
	// written beside, may be out or not: if not, the post is retried on a
	// survivor): it is
	// left out of the draw until halfway, then takes that post.
	var replicas []*replica
	for i, name := range []string{"replica a", "replica b", "replica c"} {
		point := ""
		if i == 0 {
			point = crashpoint.Unsent
		}
		s, p := r.serve(t, name, point)
		replicas = append(replicas, &replica{s: s, p: p, name: name})
	}
	doomed := replicas[0]

	// Every question asked and delivered.
	sessions := awaitAsked(t, ag, cards)

	rng := rand.New(rand.NewPCG(1, 16))
	live := slices.Clone(replicas[1:])
	var killedSession string
	for i, sess := range sessions {
		if i == cards/2 {
			_, _, f := doomed.s.openForm(t, sess)
			status, err := doomed.s.post(t, f, f.button(t, "Deny"))
			doomed.p.awaitKilled(t, crashpoint.Unsent)
			killedSession = sess
			if err == nil {
				require.Equal(t, http.StatusSeeOther, status, "the 303 beside the command, before the kill")
				continue
			}
			// The 303 did not leave before the kill: the browser posts
			// the same form again, and the load balancer sends it to a
			// survivor, which finds the dead replica's kept answer.
			status, err = live[0].s.postAs(t, f, f.button(t, "Deny"))
			require.NoError(t, err)
			require.Equal(t, http.StatusSeeOther, status, "the retried post finds the answer kept by the dead replica")
			continue
		}
		one := live[rng.IntN(len(live))]
		if i%5 == 4 {
			// Two posts at once on two replicas.
			two := live[(slices.Index(live, one)+1+rng.IntN(len(live)-1))%len(live)]
			_, _, f1 := one.s.openForm(t, sess)
			f2 := f1 // the same form posted on both
			if i%10 == 9 {
				_, _, f2 = two.s.openForm(t, sess) // another form, another token
			}
			var (
				wg       sync.WaitGroup
				statuses [2]int
				errs     [2]error
			)
			wg.Add(2)
			go func() { defer wg.Done(); statuses[0], errs[0] = one.s.post(t, f1, f1.button(t, "Deny")) }()
			go func() { defer wg.Done(); statuses[1], errs[1] = two.s.postAs(t, f2, f2.button(t, "Deny")) }()
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			for k, st := range statuses {
				assert.Contains(t, []int{http.StatusSeeOther, http.StatusConflict}, st, "card %d, post %d on two replicas: an honest answer (303 or 409), never a 503", i, k)
			}
			if f1 == f2 {
				assert.Equal(t, [2]int{http.StatusSeeOther, http.StatusSeeOther}, statuses, "card %d: the same form on two replicas: the same 303", i)
			} else {
				assert.Contains(t, statuses, http.StatusSeeOther, "card %d: one of two forms is taken", i)
			}
			continue
		}
		_, _, f := one.s.openForm(t, sess)
		status, err := one.s.post(t, f, f.button(t, "Deny"))
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "card %d on %s", i, one.name)
	}
	require.NotEmpty(t, killedSession)

	// The agent executed every request once, under one command id.
	var ids []string
	for _, sess := range sessions {
		got := awaitCommands(t, ag, sess, 1, nil)
		require.Len(t, got, 1, "session %s: one command id for the request, never two: %+v", sess, got)
		assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "session %s executed: %+v", sess, got[0].Decision)
		assert.Equal(t, 0, got[0].Differing, "every transmission the same bytes")
		ids = append(ids, got[0].ID)
	}
	// Let any late resend show itself: still one per session.
	for _, sess := range sessions {
		assert.Len(t, commandsTo(ag, sess), 1, "session %s", sess)
	}
	// The dead replica's answer was sent by one survivor, once its lease
	// lapsed.
	var took []string
	for _, rp := range live {
		if strings.Contains(rp.p.logs.String(), "taking over answers whose replica stopped renewing them") {
			took = append(took, rp.name)
		}
	}
	assert.Len(t, took, 1, "exactly one survivor took the dead replica's answer over: %v", took)

	// Every survivor, once caught up, shows every card answered, and its
	// History holds the same answers.
	slices.Sort(ids)
	for _, rp := range live {
		for _, sess := range sessions {
			card := rp.s.awaitCard(t, sess, "the answer on "+rp.name, func(c *goquery.Selection) bool {
				return c.AttrOr("data-state", "") == "answered"
			})
			// Whichever replica sent it, it is this UI's answer (the
			// shared source, found in the journal), not another UI's.
			assert.NotContains(t, card.Find(`[data-testid="state-text"]`).Text(), "elsewhere", "%s, session %s", rp.name, sess)
		}
		assert.Equal(t, ids, historyCommands(t, rp.s), "%s: History lists each executed command once", rp.name)
	}
}

// postAs is post, for a second replica of the same page's form: the
// form's action and page are resolved against this replica.
func (s *stack) postAs(t *testing.T, f *htmlForm, submitter *formControl) (int, error) {
	t.Helper()
	g := *f
	page := *f.page
	page.url = s.resolve(t, nil, f.page.url.RequestURI())
	g.page = &page
	return s.post(t, &g, submitter)
}

// historyCommands lists the accepted command ids in a replica's History
// (its JSON lines export), sorted.
func historyCommands(t *testing.T, s *stack) []string {
	t.Helper()
	var ids []string
	for _, r := range historyRows(t, s) {
		if r.State == "accepted" {
			ids = append(ids, r.CommandID)
		}
	}
	slices.Sort(ids)
	return ids
}
