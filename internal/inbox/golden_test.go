package inbox

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

const (
	goldSrc      = "aep://host-a/agent/claude-code/session/s_8f2c"
	goldSink     = "aep://host-b/agent/telegram-sink"
	goldFormSrc  = "aep://host-a/agent/claude-code/session/s_form"
	goldAllowReq = "01JX9YB4RQ000000000000GOLD"
	goldForceReq = "01JX9YBQARQ20000000000GOLD"
	goldFormReq  = "01JX9YBEFRQ0000000000GOLD3"
	goldCmd      = "01JX9YB6CMD00000000000GOLD"
)

func goldID(source, session, id string) CardID {
	return RequestKey{Source: source, Session: session, RequestID: id}.CardID()
}

func applyAll(in *Inbox, events []*aep.Event) {
	for _, e := range events {
		in.Apply(e)
	}
}

// checkGoldenArcs asserts the three attention arcs of the corpus.
func checkGoldenArcs(t *testing.T, in *Inbox) {
	t.Helper()
	cards := in.Cards(Query{})
	require.Len(t, cards, 3, "got %d cards, want one per attention.requested", len(cards))
	assert.Equal(t, 0, in.Status().Pending, "every golden request is settled")

	allow, ok := in.Card(goldID(goldSrc, "s_8f2c", goldAllowReq))
	require.True(t, ok, "the rm -rf permission card")
	assert.Equal(t, StateResolved, allow.State)
	assert.Equal(t, aep.ResolutionAnswered, allow.Resolution)
	require.NotNil(t, allow.LatencyMS)
	assert.Equal(t, int64(4250), *allow.LatencyMS)
	assert.Equal(t, []Route{{Source: goldSink, Agent: "telegram-sink"}}, allow.Routes, "routed by the sink, found by (session, subject)")
	require.NotNil(t, allow.Recorded)
	assert.Equal(t, "allow", allow.Recorded.Answer.Option)
	assert.Equal(t, aep.ViaControl, allow.Recorded.Via)
	assert.Equal(t, aep.CaptureMetadata, allow.Recorded.Capture)
	assert.Equal(t, "01JX9YB8ANS00000000000GOLD", allow.Recorded.EventID)
	// cause edges across the control boundary: the answer's cause is the
	// sink's command, whose ack (cause = command id) is recorded on it.
	assert.Equal(t, goldCmd, allow.Recorded.Cause)
	require.Len(t, allow.Responders, 1)
	seen := allow.Responders[0]
	assert.False(t, seen.SeenAt.IsZero(), "when the inbox saw the command")
	seen.SeenAt = time.Time{}
	assert.Equal(t, Responder{CommandID: goldCmd, Agent: "telegram-sink", Source: goldSink, Ack: SubmissionAccepted,
		By: "telegram-sink", Answer: aep.Answer{Option: "allow"}, Capture: aep.CaptureMetadata}, seen,
		"the sink's command: who sent it, what, and the agent's ack")
	assert.True(t, allow.AnsweredElsewhere, "answered by another sender, not this inbox")
	assert.True(t, allow.SessionEnded, "s_8f2c ended after the request")
	assert.Equal(t, aep.KindPermission, allow.Request.Kind)
	assert.Empty(t, allow.Malformed)
	assert.Equal(t, "claude-code", allow.Agent)
	assert.Equal(t, "r_0042", allow.Run)
	assert.Equal(t, aep.CaptureRedacted, allow.Capture)
	assert.Equal(t, aep.SeverityNotice, allow.Severity)
	assert.Equal(t, "2026-07-03T10:15:05Z", allow.AskedAt.UTC().Format("2006-01-02T15:04:05Z07:00"))

	force, ok := in.Card(goldID(goldSrc, "s_8f2c", goldForceReq))
	require.True(t, ok, "the push --force permission card")
	assert.Equal(t, StateTimedOut, force.State)
	require.NotNil(t, force.TimeoutMS)
	assert.Equal(t, int64(30000), *force.TimeoutMS)
	assert.Nil(t, force.Recorded)
	assert.False(t, force.AnsweredElsewhere)
	assert.Empty(t, force.Responders, "control.cancel is not an answer")

	form, ok := in.Card(goldID(goldFormSrc, "s_form", goldFormReq))
	require.True(t, ok, "the s_form card")
	assert.Equal(t, StateResolved, form.State)
	assert.Equal(t, aep.ResolutionAnswered, form.Resolution)
	assert.Len(t, form.Request.Fields, 4)
	require.NotNil(t, form.Recorded)
	assert.Equal(t, aep.CaptureRedacted, form.Recorded.Capture, "the answer's own capture, to gate its values")
	v := form.Recorded.Answer.Values
	assert.Equal(t, "billing-api", v["name"])
	assert.Equal(t, true, v["staged"])
	assert.Equal(t, []any{"1", "3"}, v["regions"])
	assert.Equal(t, "MariaDB", v["db"], "the free-text other answer is kept")
	assert.False(t, form.SessionEnded)
	assert.True(t, form.AnsweredElsewhere)
}

func TestGoldenCorpus(t *testing.T) {
	t.Parallel()
	events := golden(t)
	in, _ := newTestInbox(t)
	applyAll(in, events)
	checkGoldenArcs(t, in)

	t.Run("applying it again changes nothing", func(t *testing.T) {
		before := in.Cards(Query{})
		seq := in.Seq()
		sub := in.Subscribe(len(events) * 4)
		defer sub.Close()
		applyAll(in, events)
		assert.Equal(t, before, in.Cards(Query{}), "cards after a second pass")
		assert.Empty(t, drainNow(sub), "changes published by a second pass")
		assert.Equal(t, seq, in.Seq())
	})
}

// TestGoldenIdempotentWithoutDedupe replays the corpus into an inbox that
// remembers a single (source, id): derivation itself must ignore repeats.
func TestGoldenIdempotentWithoutDedupe(t *testing.T) {
	t.Parallel()
	events := golden(t)
	clk := newClock()
	in := New(Options{Now: clk.Now, MaxSeen: 1})
	applyAll(in, events)
	before := in.Cards(Query{})
	seq := in.Seq()
	applyAll(in, events)
	assert.Equal(t, before, in.Cards(Query{}))
	assert.Equal(t, seq, in.Seq(), "got %d changes from the second pass, want 0", in.Seq()-seq)
	checkGoldenArcs(t, in)
}

func TestGoldenOutOfOrder(t *testing.T) {
	t.Parallel()
	events := golden(t)
	ref, _ := newTestInbox(t)
	applyAll(ref, events)
	want := stable(ref.Cards(Query{}))

	orders := map[string][]*aep.Event{"reversed": slices.Clone(events)}
	slices.Reverse(orders["reversed"])
	for seed := uint64(1); seed <= 5; seed++ {
		s := slices.Clone(events)
		r := rand.New(rand.NewPCG(seed, seed*7919))
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		orders["shuffle "+string(rune('0'+seed))] = s
	}
	// every event twice, the second copy early
	twice := slices.Clone(events)
	slices.Reverse(twice)
	orders["doubled"] = append(twice, events...)

	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, _ := newTestInbox(t)
			applyAll(in, order)
			assert.Equal(t, want, stable(in.Cards(Query{})))
			checkGoldenArcs(t, in)
		})
	}
}

// TestGoldenByCause drops subject from every event but requests and
// commands: outcomes and acks must still find their card by following
// cause one hop (resolved -> answered, answered -> command, ack -> command).
func TestGoldenByCause(t *testing.T) {
	t.Parallel()
	var events []*aep.Event
	for _, e := range golden(t) {
		if e.Type() == "attention.requested" || e.Type() == "control.attention.respond" || e.Subject() == "" {
			events = append(events, e)
			continue
		}
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(e.Raw(), &m))
		delete(m, "subject")
		b, err := json.Marshal(m)
		require.NoError(t, err)
		events = append(events, raw(t, string(b)))
	}
	for _, order := range []string{"forward", "reversed"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			evs := slices.Clone(events)
			if order == "reversed" {
				slices.Reverse(evs)
			}
			in, _ := newTestInbox(t)
			applyAll(in, evs)
			checkGoldenArcs(t, in)
		})
	}
}
