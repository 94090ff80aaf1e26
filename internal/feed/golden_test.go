package feed

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/fixtures"
	"github.com/aepforms/aepforms/internal/aep"
)

// goldenEvents reads the golden corpus's non-command events (a relay
// routes commands rather than serving them on /stream).
func goldenEvents(t *testing.T) []*aep.Event {
	t.Helper()
	var out []*aep.Event
	for _, line := range fixtures.GoldenLines(t) {
		e, err := aep.Decode(line)
		require.NoError(t, err, "golden line %q", line)
		if !aep.IsCommand(e.Type()) {
			out = append(out, e)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestGoldenCorpusOnce: the corpus served over SSE reaches the sink exactly
// once per event, in order, byte-identical; served twice, and replayed
// again on a reconnect, still once.
func TestGoldenCorpusOnce(t *testing.T) {
	t.Parallel()
	corpus := goldenEvents(t)
	tr := newTestRelay(t)
	tr.add(corpus...)
	tr.add(corpus...) // served twice
	sink := newRecSink()
	startClient(t, testConfig(tr.URL()), sink)

	check := func(round string) {
		got := make([]*aep.Event, 0, len(corpus))
		for len(got) < len(corpus) {
			select {
			case e := <-sink.applied:
				got = append(got, e)
			case <-testTimeout():
				t.Fatalf("%s: got %d events, want %d", round, len(got), len(corpus))
			}
		}
		for i, want := range corpus {
			assert.Equal(t, string(want.Raw()), string(got[i].Raw()), "%s: event %d (%s) byte-identical, in order", round, i, want.Type())
		}
	}
	check("first")
	tr.restart() // the reconnect replays the whole corpus, twice, again
	waitConnected(t, sink)
	waitConnected(t, sink)
	sentinel := event(t, "s_after", 0, "session.started", "sentinel")
	tr.add(sentinel)
	assert.Equal(t, []string{"sentinel"}, waitApplied(t, sink, 1), "nothing from the corpus applied again")
	for _, e := range corpus {
		assert.Equal(t, 1, sink.count(e.Key()), "%s %s applied once", e.Type(), e.ID())
	}
	select {
	case ex := <-sink.exhausted:
		t.Fatalf("got ReplayExhausted(%q), want none: every position is held", ex.session)
	default:
	}
}
