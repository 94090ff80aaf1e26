package inbox

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// ask is one input request from agent, in the agent's own session, with a
// prompt of promptBytes bytes.
// askSeq numbers the asks (a session-scoped event needs a seq).
var askSeq atomic.Int64

func ask(t testing.TB, agent, id string, promptBytes int) *aep.Event {
	t.Helper()
	return ev(t, aep.Envelope{ID: id, Type: "attention.requested", Source: "aep://h/" + agent, Agent: agent,
		Session: "s-" + agent, Seq: aep.Int64(askSeq.Add(1)), Data: aep.Request{Kind: aep.KindInput, Prompt: strings.Repeat("x", promptBytes)}})
}

// heldBy lists the request ids of the open cards each agent holds.
func heldBy(in *Inbox) map[string][]string {
	out := map[string][]string{}
	for _, c := range in.Cards(Query{}) {
		if c.State.Open() {
			out[c.Agent] = append(out[c.Agent], c.Key.RequestID)
		}
	}
	return out
}

// drain counts the removals published to sub so far.
func removals(sub *Subscription) int {
	n := 0
	for len(sub.C()) > 0 {
		if (<-sub.C()).Kind == ChangeRemoved {
			n++
		}
	}
	return n
}

// Past MaxPending the agent holding the most open cards loses its own
// oldest: a quiet agent's question survives a flood, and every drop is
// counted against the agent that caused it.
func TestCountBoundEvictsTheBiggestAgentsOldest(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxPending: 4})
	sub := in.Subscribe(256)
	defer sub.Close()
	in.Apply(ask(t, "quiet", "q0", 10))
	for i := range 10 {
		in.Apply(ask(t, "flood", "f"+strconv.Itoa(i), 10))
	}
	held := heldBy(in)
	assert.Equal(t, []string{"q0"}, held["quiet"], "the quiet agent's question survives")
	assert.ElementsMatch(t, []string{"f7", "f8", "f9"}, held["flood"], "the flood loses its oldest")
	st := in.Status()
	assert.Equal(t, 4, st.Pending)
	assert.Equal(t, []Dropped{{Agent: "flood", Count: 7}}, st.Dropped)
	assert.Empty(t, st.Notices, "drops are counted, not noticed one by one")
	assert.Equal(t, 7, removals(sub), "each dropped card is published as removed")
}

// On a tie nobody holds more than the newcomer's agent: the newcomer is
// refused and counted, and the requests pending before it stay.
func TestCountBoundTieRefusesTheNewcomer(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxPending: 2})
	in.Apply(ask(t, "a", "a0", 1))
	in.Apply(ask(t, "b", "b0", 1))
	in.Apply(ask(t, "c", "c0", 1))
	held := heldBy(in)
	assert.Equal(t, []string{"a0"}, held["a"])
	assert.Equal(t, []string{"b0"}, held["b"])
	assert.Empty(t, held["c"])
	assert.Equal(t, []Dropped{{Agent: "c", Count: 1}}, in.Status().Dropped, "the refusal is counted")
}

// A flood under a new agent name, source and session for every request
// cannot evict a question that was pending before it, under either
// bound: each newcomer is refused (and counted) instead.
func TestRotatingFloodKeepsTheQuietQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opts   Options
		prompt int
	}{
		{"count", Options{MaxPending: 100}, 10},
		{"bytes", Options{MaxBytes: 100 * 1200}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := New(tc.opts)
			in.Apply(ask(t, "quiet", "q0", tc.prompt))
			const flood = 6000
			for i := range flood {
				in.Apply(ask(t, "rot-"+strconv.Itoa(i), "r", tc.prompt))
			}
			assert.Equal(t, []string{"q0"}, heldBy(in)["quiet"], "the quiet agent's question survives the rotating flood")
			st := in.Status()
			var dropped uint64
			for _, d := range st.Dropped {
				dropped += d.Count
			}
			dropped += st.DroppedOthers
			assert.Equal(t, uint64(flood+1-st.Pending), dropped, "every request not kept is counted as dropped")
			assert.NotContains(t, st.Dropped, Dropped{Agent: "quiet", Count: 1})
		})
	}
}

// A quiet agent's new question still gets in past a one-name flood: the
// flood, holding more, gives way.
func TestQuietNewcomerDisplacesTheFlood(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxPending: 5})
	for i := range 5 {
		in.Apply(ask(t, "flood", "f"+strconv.Itoa(i), 10))
	}
	in.Apply(ask(t, "quiet", "q0", 10))
	held := heldBy(in)
	assert.Equal(t, []string{"q0"}, held["quiet"])
	assert.ElementsMatch(t, []string{"f1", "f2", "f3", "f4"}, held["flood"], "the flood's oldest went")
}

// Past MaxBytes the agent holding the most bytes loses its oldest card,
// even when it holds fewer cards than another.
func TestByteBoundEvictsTheHeaviestAgentsOldest(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxBytes: 10_000})
	for i := range 5 {
		in.Apply(ask(t, "chatty", "c"+strconv.Itoa(i), 10))
	}
	in.Apply(ask(t, "big", "b0", 4000))
	in.Apply(ask(t, "big", "b1", 4000))
	in.Apply(ask(t, "big", "b2", 4000))
	held := heldBy(in)
	assert.Len(t, held["chatty"], 5, "the agent with more, smaller cards keeps them all")
	assert.ElementsMatch(t, []string{"b1", "b2"}, held["big"])
	assert.Equal(t, []Dropped{{Agent: "big", Count: 1}}, in.Status().Dropped)
	in.mu.Lock()
	defer in.mu.Unlock()
	assert.LessOrEqual(t, in.bytes, int64(10_000))
}

// Under the byte bound an agent's settled cards go before its open ones:
// an outcome already seen is worth less than a question still waiting,
// and it is not counted as a dropped question.
func TestByteBoundTakesSettledCardsFirst(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxBytes: 10_000})
	in.Apply(ask(t, "big", "b0", 4000))
	in.Apply(ev(t, aep.Envelope{ID: "res", Type: "attention.resolved", Source: "aep://h/big", Agent: "big", Session: "s-big",
		Subject: "b0", Seq: aep.Int64(askSeq.Add(1)), Data: aep.Resolved{Resolution: aep.ResolutionAuto}}))
	in.Apply(ask(t, "big", "b1", 4000))
	in.Apply(ask(t, "big", "b2", 4000))
	_, ok := in.Card(RequestKey{Source: "aep://h/big", Session: "s-big", RequestID: "b0"}.CardID())
	assert.False(t, ok, "the settled card went first")
	assert.Len(t, heldBy(in)["big"], 2)
	assert.Empty(t, in.Status().Dropped, "a settled card is not a dropped question")
}

// A card whose answer is in flight is never evicted by either bound,
// whoever holds the most; the next oldest goes instead.
func TestBoundsNeverEvictAnAnswerInFlight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"count", Options{MaxPending: 3}},
		{"bytes", Options{MaxBytes: 3 * 1200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := New(tc.opts)
			in.Apply(ask(t, "flood", "f0", 1000))
			id := RequestKey{Source: "aep://h/flood", Session: "s-flood", RequestID: "f0"}.CardID()
			_, err := in.BeginSubmission(id, Submission{Token: "t", CommandID: "cmd"})
			require.NoError(t, err)
			for i := 1; i <= 20; i++ {
				in.Apply(ask(t, "flood", "f"+strconv.Itoa(i), 1000))
			}
			c, ok := in.Card(id)
			require.True(t, ok, "the card with an answer in flight is kept")
			assert.True(t, c.InFlight())
			held := heldBy(in)["flood"]
			assert.Contains(t, held, "f20")
			assert.NotContains(t, held, "f1", "the next oldest went instead")

			// Once the agent rejects the answer the card may go again.
			in.SettleSubmission(id, "cmd", SubmissionRejected, "invalid", "")
			in.Apply(ask(t, "flood", "f21", 1000))
			_, ok = in.Card(id)
			assert.False(t, ok, "a rejected answer no longer holds its card")
		})
	}
}

// When every card left to evict has an answer in flight, the bound gives
// way instead of evicting one.
func TestBoundsGiveWayToAnswersInFlight(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxPending: 1})
	in.Apply(ask(t, "a", "a0", 1))
	id := RequestKey{Source: "aep://h/a", Session: "s-a", RequestID: "a0"}.CardID()
	_, err := in.BeginSubmission(id, Submission{Token: "t", CommandID: "cmd"})
	require.NoError(t, err)
	in.Apply(ask(t, "a", "a1", 1))
	_, ok := in.Card(id)
	assert.True(t, ok)
	assert.Equal(t, []Dropped{{Agent: "a", Count: 1}}, in.Status().Dropped, "the new one went")
}

// Drop counts by name are bounded: agents past the bound are counted
// together.
func TestDroppedAgentsAreBounded(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxPending: 1})
	for i := range maxDroppedAgents + 11 {
		in.Apply(ask(t, "agent-"+strconv.Itoa(i), "r", 1))
	}
	st := in.Status()
	assert.Len(t, st.Dropped, maxDroppedAgents)
	assert.Equal(t, uint64(10), st.DroppedOthers)
}

// The share accounting follows cards out of the inbox, so it never
// drifts: after every card is gone the inbox holds nothing.
func TestShareAccountingBalances(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxPending: 3, MaxSettled: 1, MaxBytes: 5000})
	for i := range 30 {
		agent := "a" + strconv.Itoa(i%3)
		id := "r" + strconv.Itoa(i)
		in.Apply(ask(t, agent, id, 100*(i%7)))
		if i%4 == 0 {
			in.Apply(ev(t, aep.Envelope{ID: "res" + id, Type: "attention.resolved", Source: "aep://h/" + agent, Agent: agent,
				Session: "s-" + agent, Subject: id, Data: aep.Resolved{Resolution: aep.ResolutionAuto}}))
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var bytes int64
	cards := 0
	for _, l := range in.loads {
		n, settled := 0, 0
		var lb int64
		for en := l.oldest; en != nil; en = en.newer {
			n++
			lb += en.size
			if en.settledOrder != 0 {
				settled++
			}
		}
		assert.Equal(t, l.cards, n, "agent %s cards", l.name)
		assert.Equal(t, l.settled, settled, "agent %s settled", l.name)
		assert.Equal(t, l.bytes, lb, "agent %s bytes", l.name)
		bytes += lb
		cards += n
	}
	assert.Equal(t, in.bytes, bytes)
	assert.Equal(t, len(in.byID), cards)
	assert.LessOrEqual(t, in.bytes, int64(5000))
	assert.LessOrEqual(t, len(in.byID)-len(in.settled), 3)
}

// A card the operator answered, once settled, is an outcome like any
// other: MaxSettled still evicts it (its accepted submission does not
// hold it for good).
func TestSettledAnswersAreStillBounded(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxSettled: 1})
	for i := range 3 {
		n := strconv.Itoa(i)
		in.Apply(ask(t, "a", "r"+n, 10))
		id := RequestKey{Source: "aep://h/a", Session: "s-a", RequestID: "r" + n}.CardID()
		_, err := in.BeginSubmission(id, Submission{Token: "t" + n, CommandID: "cmd" + n})
		require.NoError(t, err)
		in.SettleSubmission(id, "cmd"+n, SubmissionAccepted, "", "")
		in.Apply(ev(t, aep.Envelope{ID: "ans" + n, Type: "attention.answered", Source: "aep://h/a", Agent: "a", Session: "s-a",
			Subject: "r" + n, Cause: "cmd" + n, Seq: aep.Int64(askSeq.Add(1)), Data: aep.Answered{Answer: aep.Answer{Option: "ok"}}}))
	}
	cards := in.Cards(Query{})
	require.Len(t, cards, 1, "one settled card kept")
	assert.Equal(t, "r2", cards[0].Key.RequestID)
	assert.Equal(t, SubmissionAccepted, cards[0].Submission.State)
	assert.Empty(t, in.Status().Dropped, "outcomes are not dropped questions")
}

// Drop counts keep at most maxDroppedName bytes of an agent's name.
func TestDroppedNamesAreBounded(t *testing.T) {
	t.Parallel()
	in := New(Options{MaxPending: 1})
	long := strings.Repeat("n", 64<<10)
	in.Apply(ask(t, "a", "a0", 1))
	in.Apply(ask(t, long, "r", 1))
	st := in.Status()
	require.Len(t, st.Dropped, 1)
	assert.LessOrEqual(t, len(st.Dropped[0].Agent), maxDroppedName+len("…"))
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(st.Dropped[0].Agent, "…")))
}
