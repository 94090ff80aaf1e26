package routing

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// Ann assigns a question to the team db: db's chat channel is told in
// her words with the card's link, once of the two replicas sharing the
// journal (the other sees the assignment there); the team the question
// is routed to is told nothing more. Assigned again, to a person, no
// channel is told (the person's devices are); an assignment ended tells
// nobody; a restarted process tells nobody again.
func TestAssigningATeamTellsItsChannelOnce(t *testing.T) {
	t.Parallel()
	oncall, db := newHook(t), newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`"}, "db": {"webhook": "`+db.url()+`"}},
		"routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	shared := inbox.Options{Now: clk.Now, Journal: j}
	a := newRigOn(t, clk, f, j, quietLog(), shared)
	b := newRigOn(t, clk, f, j, quietLog(), shared)
	id := ask(t, a.in, "s1", "r1", "form", 1)
	ask(t, b.in, "s1", "r1", "form", 1)
	a.waitSteps(t, id, "oncall")
	b.waitSteps(t, id, "oncall")
	assert.Contains(t, oncall.next(t), "New question for oncall")

	_, err := a.in.Assign(id, inbox.Assignment{To: "db", Team: true, By: "ann"})
	require.NoError(t, err)
	assert.Equal(t, "ann assigned you (db) a question from claude-code: “Deploy?” (form). Answer it here: https://forms.example/cards/"+string(id)+"/page", db.next(t))
	b.in.SeeClaims()
	b.waitAssigned(t, id, "db")
	b.router.Sweep(context.Background(), b.in) // a look at the open questions tells nobody either

	_, err = a.in.Assign(id, inbox.Assignment{To: "bo", By: "ann"})
	require.NoError(t, err)
	// Looked at now, as Run does on its change: Run looks at the card as
	// it is when it gets there, which may be after the assignment ended.
	c, _ := a.in.Card(id)
	a.router.Observe(context.Background(), a.in, c)
	_, err = a.in.Assign(id, inbox.Assignment{By: "ann"})
	require.NoError(t, err)
	b.in.SeeClaims()
	b.waitAssigned(t, id, "")

	clk.Add(time.Second) // a restart takes time: its writes come after the ones before it
	restarted := newRigOn(t, clk, f, j, quietLog(), shared)
	ask(t, restarted.in, "s1", "r1", "form", 1)
	_, err = restarted.in.Assign(id, inbox.Assignment{To: "oncall", Team: true, By: "bo"})
	require.NoError(t, err)
	assert.Contains(t, oncall.next(t), "bo assigned you (oncall) a question")
	for _, rg := range []*rig{a, b, restarted} {
		rg.hooks.Wait()
	}
	db.none(t, "db is told once, of both replicas, and not of the person's assignment after it")
	kept, err := j.RoutingSteps(context.Background(), string(id))
	require.NoError(t, err)
	var told []string
	for _, st := range kept {
		if st.Kind != store.Assigned {
			continue
		}
		a, ok := store.ParseAssigned(st.Team)
		require.True(t, ok, "%s reads", st.Team)
		told = append(told, a.To+" by "+a.By)
	}
	assert.ElementsMatch(t, []string{"db by ann", "bo by ann", "oncall by bo"}, told, "each assignment kept for History, once")
	oncall.none(t, "oncall is told of its own assignment only")
}

// waitAssigned waits until card id is assigned to to ("" nobody) here.
func (rg *rig) waitAssigned(t *testing.T, id inbox.CardID, to string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c, _ := rg.in.Card(id)
		got := ""
		if a := c.Verdict(time.Now(), inbox.Viewer{}).Assigned; a != nil {
			got = a.To
		}
		if got == to {
			return
		}
		select {
		case <-rg.watch.C():
		case <-deadline:
			t.Fatalf("card %s assigned to %q, want %q", id, got, to)
		}
	}
}

// A question assigned is reminded to its assignee, not to the team it is
// routed to, remind after the assignment (an assignment restarts the
// remind clock); escalation still goes to escalate_to, on the clock of
// the question's arrival. A question assigned to a person is reminded to
// them (their devices: no channel is told).
func TestAnAssignedQuestionIsRemindedToItsAssignee(t *testing.T) {
	t.Parallel()
	oncall, db, leads := newHook(t), newHook(t), newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {"webhook": "`+oncall.url()+`", "remind": "2m", "escalate": "10m", "escalate_to": "leads"},
		"db": {"webhook": "`+db.url()+`"}, "leads": {"webhook": "`+leads.url()+`"}}, "routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	rg := newRig(t, clk, f, openJournal(t, filepath.Join(t.TempDir(), "j.db")), quietLog())
	toTeam := ask(t, rg.in, "s1", "r1", "form", 1)
	toBo := ask(t, rg.in, "s1", "r2", "form", 2)
	rg.waitSteps(t, toTeam, "oncall")
	rg.waitSteps(t, toBo, "oncall")
	oncall.next(t)
	oncall.next(t)

	clk.Add(time.Minute) // 09:11
	_, err := rg.in.Assign(toTeam, inbox.Assignment{To: "db", Team: true, By: "ann"})
	require.NoError(t, err)
	_, err = rg.in.Assign(toBo, inbox.Assignment{To: "bo", By: "ann"})
	require.NoError(t, err)
	assert.Contains(t, db.next(t), "ann assigned you (db)")

	clk.Add(time.Minute) // 09:12: remind after arrival, not after the assignment
	rg.router.Sweep(context.Background(), rg.in)
	rg.hooks.Wait()
	c, _ := rg.in.Card(toTeam)
	assert.Empty(t, c.Verdict(clk.Now(), inbox.Viewer{}).Routing.Steps, "the assignment restarted the remind clock")

	clk.Add(time.Minute) // 09:13: remind after the assignment
	rg.router.Sweep(context.Background(), rg.in)
	rg.waitSteps(t, toTeam, "oncall", "reminded db")
	rg.waitSteps(t, toBo, "oncall", "reminded bo")
	assert.Contains(t, db.next(t), "Reminder for db: unanswered for 3 min")

	clk.Add(7 * time.Minute) // 09:20: escalate after arrival
	for range 2 {
		rg.router.Sweep(context.Background(), rg.in)
	}
	rg.waitSteps(t, toTeam, "oncall", "reminded db", "escalated leads")
	rg.waitSteps(t, toBo, "oncall", "reminded bo", "escalated leads")
	escalations := []string{leads.next(t), leads.next(t)}
	slices.Sort(escalations)
	assert.Contains(t, escalations[0], "Escalated to leads: bo has not answered for 10 min", "it names who was given it")
	assert.Contains(t, escalations[1], "Escalated to leads: db has not answered for 10 min")
	rg.hooks.Wait()
	oncall.none(t, "oncall is not reminded of a question assigned away")
	db.none(t, "one reminder")
	leads.none(t, "one escalation each")

	var m bytes.Buffer
	rg.router.Metrics().Write(&m)
	assert.Contains(t, m.String(), `aepforms_reminders_total{team="db"} 1`)
	assert.Contains(t, m.String(), `aepforms_reminders_total{team="oncall"} 1`, "a person's reminder is counted for the team whose policy sent it")
}

// The same assignment posted again (a double click, the page sent
// again) is the assignment in force, not a new one: the team's channel
// is told once.
func TestTheSameAssignmentAgainTellsNobodyAgain(t *testing.T) {
	t.Parallel()
	db, ops := newHook(t), newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {}, "db": {"webhook": "`+db.url()+`"}, "ops": {"webhook": "`+ops.url()+`"}},
		"routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	rg := newRigOn(t, clk, f, j, quietLog(), inbox.Options{Now: clk.Now, Journal: j})
	id := ask(t, rg.in, "s1", "r1", "form", 1)
	rg.waitSteps(t, id, "oncall")

	first, err := rg.in.Assign(id, inbox.Assignment{To: "db", Team: true, By: "ann"})
	require.NoError(t, err)
	assert.Contains(t, db.next(t), "ann assigned you (db)")
	clk.Add(time.Second)
	again, err := rg.in.Assign(id, inbox.Assignment{To: "db", Team: true, By: "ann"})
	require.NoError(t, err)
	assert.Equal(t, first, again, "the assignment in force stays as it was")
	// The router looks at the changes in order: once ops is told of the
	// assignment after, it has looked at the one above.
	_, err = rg.in.Assign(id, inbox.Assignment{To: "ops", Team: true, By: "ann"})
	require.NoError(t, err)
	assert.Contains(t, ops.next(t), "ann assigned you (ops)")
	rg.hooks.Wait()
	db.none(t, "db is told once of one assignment")
}

// A question nobody here can answer (answered in the agent's own UI)
// assigned by a hand-made post tells nobody: "Answer it here" would send
// the assignee to a card that takes no answer.
func TestAssigningAQuestionAnsweredElsewhereTellsNobody(t *testing.T) {
	t.Parallel()
	db, ops := newHook(t), newHook(t)
	f := loadRoutes(t, `{"teams": {"oncall": {}, "db": {"webhook": "`+db.url()+`"}, "ops": {"webhook": "`+ops.url()+`"}},
		"routes": [{"team": "oncall"}]}`)
	clk := &clock{t: time.Date(2026, 7, 3, 9, 10, 0, 0, time.UTC)}
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	rg := newRigOn(t, clk, f, j, quietLog(), inbox.Options{Now: clk.Now, Journal: j})
	e, err := aep.Build(aep.Envelope{ID: "elsewhere", Type: "attention.requested", Source: testSource, Agent: "claude-code",
		Session: "s1", Seq: aep.Int64(1), Capture: "full", Time: "2026-07-03T09:10:00Z",
		Data: map[string]any{"kind": "input", "prompt": "Which suites?", "respond_via": []string{"terminal"}}})
	require.NoError(t, err)
	rg.in.Apply(e)
	elsewhere := inbox.RequestKey{Source: testSource, Session: "s1", RequestID: "elsewhere"}.CardID()
	here := ask(t, rg.in, "s1", "r2", "form", 2)
	rg.waitSteps(t, here, "oncall")

	_, err = rg.in.Assign(elsewhere, inbox.Assignment{To: "db", Team: true, By: "ann"})
	require.NoError(t, err)
	// The router looks at the changes in order: once ops is told of the
	// assignment after, it has looked at the one above.
	_, err = rg.in.Assign(here, inbox.Assignment{To: "ops", Team: true, By: "ann"})
	require.NoError(t, err)
	assert.Contains(t, ops.next(t), "ann assigned you (ops)")
	rg.hooks.Wait()
	db.none(t, "nobody is told of a question answered elsewhere")
}
