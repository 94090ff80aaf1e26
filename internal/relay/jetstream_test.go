package relay_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two relays on one JetStream stream are one relay: an agent on A and a
// UI on B see each other's events, B's command reaches the agent's
// socket on A byte-identically and is kept in the history both serve, an
// event sent again to the other node is a duplicate, and a command for a
// session no node holds is refused no-route.
func TestNodesOnOneStreamAreOneRelay(t *testing.T) {
	t.Parallel()
	ns, _ := nodes(t, cfg(), 2)
	a, b := ns[0], ns[1]

	agent := a.target(t, "s", "control.attention.respond")
	ui := b.consumer(t)
	ui.subscribe(t, "all", map[string]any{"from": "all", "filter": map[string]any{"session": []string{"s", "nobody-holds-this"}}})
	require.Equal(t, "session.started", ui.expect(t, "session.started").str("type"), "the agent's claim on A, replayed on B")

	req := ev(t, "attention.requested", "s", 1, withSource("aep://target/agent/target/session/s"),
		withData(map[string]any{"kind": "confirm", "prompt": "deploy?"}))
	agent.send(t, req)
	got := ui.expect(t, "attention.requested")
	assert.Equal(t, idOf(t, req), got.str("id"), "A's event live on B")

	cmd := command(t, "s")
	ui.send(t, cmd)
	assert.JSONEq(t, string(cmd), string(agent.next(t)), "B's command on the agent's socket on A, byte-identical")
	assert.Equal(t, idOf(t, cmd), ui.expect(t, "control.attention.respond").str("id"), "the routed command fanned out")
	for _, n := range ns {
		// Each node applies the stream as it reads it: wait for the
		// command there, replayed or live, then read its history.
		kept := n.stream(t, url.Values{"from": {"all"}, "filter": {`{"id":"` + idOf(t, cmd) + `"}`}}, nil)
		assert.Equal(t, "control.attention.respond", kept.nextEvent(t).Event)
		assert.Contains(t, n.sessionHistory(t, "s"), idOf(t, cmd), "the command kept, on every node")
	}

	status, m := b.post(t, req)
	require.Equal(t, http.StatusAccepted, status)
	assert.EqualValues(t, 1, m["duplicates"], "an event A took is a duplicate on B")
	assert.Equal(t, idOf(t, req), ui.expect(t, "attention.requested").str("id"), "a redelivery is forwarded as received, as in memory")

	// Read-your-writes across nodes: a replay on B, asked right after A
	// acknowledged an event, holds it (B catches up with the stream first).
	for i := range 20 {
		late := ev(t, "progress.status", "rw", int64(i+1))
		a.mustPost(t, late)
		events, _ := b.history(t, url.Values{"from": {fromJSON(t, "rw", 0, int64(i))}})
		require.Equal(t, []string{idOf(t, late)}, ids(t, events), "B's replay right after A's 202, round %d", i)
	}

	lost := command(t, "nobody-holds-this")
	ui.send(t, lost)
	refused(t, ui, lost, "no-route")
}

// A relay node that starts later reads the stream before it serves and
// holds what the running node holds: the same replay, the same
// replay-exhausted for a resume from before its buffer.
func TestNodeStartedLaterServesTheSameReplay(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.Buffer = 4
	ns, c := nodes(t, c, 1)
	first := ns[0]
	var evs [][]byte
	for i := range 10 {
		evs = append(evs, ev(t, "progress.status", "ev", int64(i), withEpoch(1)))
	}
	first.mustPost(t, evs...)
	q := url.Values{"from": {fromJSON(t, "ev", 1, 0)}}
	wantEvents, wantComments := first.history(t, q)
	require.Equal(t, []string{"replay-exhausted ev 1:6"}, wantComments)

	r := openOn(t, c)
	later := serveRelay(t, r, httptest.NewServer(r.Handler()), c.Token)
	events, comments := later.history(t, url.Values{"from": {fromJSON(t, "ev", 1, 0)}})
	assert.Equal(t, wantComments, comments)
	assert.Equal(t, ids(t, wantEvents), ids(t, events))
}

// The aepforms binary embeds no NATS server (it would add ~17 MB): the
// server is imported by tests only, through natstest.
func TestBinaryEmbedsNoNATSServer(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/aepforms/aepforms/cmd/aepforms").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := string(out)
	require.Contains(t, deps, "github.com/nats-io/nats.go/jetstream", "the relay's JetStream client is in the binary")
	for _, d := range strings.Split(deps, "\n") {
		assert.False(t, strings.HasPrefix(d, "github.com/nats-io/nats-server"), "the binary imports %s", d)
		assert.NotEqual(t, "github.com/aepforms/aepforms/internal/relay/natstest", d)
	}
}
