package inbox

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// A flood of routes and foreign commands for one request keeps the card
// bounded: the first maxCardFacts of each are kept.
func TestCardFactsAreBounded(t *testing.T) {
	t.Parallel()
	in := New(Options{})
	in.Apply(ev(t, aep.Envelope{ID: "r1", Type: "attention.requested", Source: "aep://h/a", Agent: "a", Session: "s1", Seq: aep.Int64(0),
		Data: aep.Request{Kind: aep.KindInput, Prompt: "Name?"}}))
	for i := range 3 * maxCardFacts {
		n := strconv.Itoa(i)
		in.Apply(ev(t, aep.Envelope{ID: "route-" + n, Type: "attention.routed", Source: "aep://sink/" + n, Agent: "sink", Session: "s1", Subject: "r1", Data: aep.Routed{To: "x"}}))
		in.Apply(ev(t, aep.Envelope{ID: "cmd-" + n, Type: "control.attention.respond", Source: "aep://other/" + n, Agent: "other", Session: "s1", Subject: "r1", Cause: "r1",
			Data: aep.Respond{Answer: aep.Answer{Option: "allow"}}}))
	}
	cards := in.Cards(Query{})
	require.Len(t, cards, 1)
	assert.Len(t, cards[0].Routes, maxCardFacts)
	assert.Len(t, cards[0].Responders, maxCardFacts)
	assert.Equal(t, "aep://sink/0", cards[0].Routes[0].Source, "the first routes are the ones kept")
}

// After a restart the UI's earlier commands come back on the feed, unknown
// to the new inbox. One from any of OwnSources (the journal's source, and
// the host-derived one of earlier releases) that the journal does not hold
// is this UI's, though unknown (Own): "an answer was already sent from
// this UI", not another sender's; one from any other source, even
// another UI on the same host, is another sender's.
func TestOwnCommandsFromBeforeARestartAreNotForeign(t *testing.T) {
	t.Parallel()
	const (
		own    = "aep://host/ui/aepforms/01JOURNALINSTANCE"
		legacy = "aep://host/ui/aepforms"
	)
	for _, tc := range []struct {
		name   string
		source string
		own    bool
	}{
		{"our own source", own, true},
		{"our source before the journal", legacy, true},
		{"another sender", "aep://sink/telegram", false},
		{"another UI on the same host", "aep://host/ui/aepforms/01OTHERINSTANCE", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := New(Options{OwnSources: []string{own, legacy}})
			in.Apply(ev(t, aep.Envelope{ID: "r1", Type: "attention.requested", Source: "aep://h/a", Agent: "a", Session: "s1", Seq: aep.Int64(0),
				Data: aep.Request{Kind: aep.KindInput, Prompt: "Name?"}}))
			in.Apply(ev(t, aep.Envelope{ID: "cmd-1", Type: "control.attention.respond", Source: tc.source, Agent: "aepforms", Session: "s1", Subject: "r1", Cause: "r1",
				Data: aep.Respond{Answer: aep.Answer{Option: "allow"}}}))
			rs := in.Cards(Query{})[0].Responders
			require.Len(t, rs, 1)
			assert.Equal(t, tc.own, rs[0].Own)
		})
	}
}
