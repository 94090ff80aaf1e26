package relay_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/relay"
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

	ui.send(t, map[string]any{"type": "roster", "id": "r-1"})
	entries, _ := ui.expect(t, "roster")["entries"].([]any)
	require.Len(t, entries, 1, "B's roster lists the claim held on A: %v", entries)
	assert.Equal(t, "s", entries[0].(map[string]any)["session"])
	assert.Equal(t, "target", entries[0].(map[string]any)["agent"])

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

// A command stays owed across the death of the node that delivered it:
// the agent on A got it and A died before the agent acknowledged it; the
// agent's reconnect to B (its re-claim) is sent the command again,
// byte-identical. Once acknowledged, a reconnect is sent nothing.
func TestCommandOwedAcrossTheDeathOfItsNode(t *testing.T) {
	t.Parallel()
	ns, _ := nodes(t, cfg(), 2)
	a, b := ns[0], ns[1]
	agent := a.target(t, "o", "control.attention.respond")
	ui := b.consumer(t)
	cmd := command(t, "o")
	ui.send(t, cmd)
	assert.JSONEq(t, string(cmd), string(agent.next(t)), "delivered on A")
	// B keeps the command once A delivered it: wait until B serves it.
	b.stream(t, url.Values{"from": {"all"}, "filter": {`{"id":"` + idOf(t, cmd) + `"}`}}, nil).nextEvent(t)

	a.die(t)
	agent.closed(t)

	reclaim := func() *fakeTarget { return b.reclaim(t, "o", 1) }
	again := reclaim()
	assert.JSONEq(t, string(cmd), string(again.next(t)), "the unacknowledged command again, on B")
	ack := ev(t, "control.accepted", "o", 2, withSource("aep://target/agent/target/session/o"), withSubject(idOf(t, cmd)))
	again.send(t, ack)
	b.stream(t, url.Values{"from": {"all"}, "filter": {`{"id":"` + idOf(t, ack) + `"}`}}, nil).nextEvent(t)
	again.c.CloseNow()
	again.closed(t)

	third := reclaim()
	third.send(t, map[string]any{"type": "ping", "t": 7})
	assert.Equal(t, "pong", third.expect(t, "pong").str("type"), "an acknowledged command is not sent again")
}

// A session claimed on two nodes is ambiguous, as two claimants on one
// relay are: a command to it, sent through either node, is refused
// ambiguous, reaches neither claimant and is not kept. Once one claimant
// has gone, the other gets the next command, through either node.
func TestSessionClaimedOnTwoNodesIsAmbiguous(t *testing.T) {
	t.Parallel()
	ns, _ := nodes(t, cfg(), 2)
	a, b := ns[0], ns[1]
	onA := a.target(t, "two", "control.attention.respond")
	onB := b.target(t, "two", "control.attention.respond")
	for i, n := range ns {
		ui := n.consumer(t)
		cmd := command(t, "two", withSubject(fmt.Sprintf("req-%d", i)))
		ui.send(t, cmd)
		refused(t, ui, cmd, "ambiguous")
		for _, tg := range []*fakeTarget{onA, onB} {
			tg.send(t, map[string]any{"type": "ping", "t": i})
			tg.expect(t, "pong") // frames are ordered: the command would have come first
		}
		assert.NotContains(t, n.sessionHistory(t, "two"), idOf(t, cmd), "a refused command is not kept")
	}

	conns := b.Stats().Connections
	onB.c.CloseNow()
	onB.closed(t)
	require.Eventually(t, func() bool { return b.Stats().Connections == conns-1 }, wait, time.Millisecond,
		"B let go of the closed claimant")
	for _, n := range []*testRelay{b, a} {
		ui := n.consumer(t)
		cmd := command(t, "two")
		ui.send(t, cmd)
		assert.JSONEq(t, string(cmd), string(onA.next(t)), "the one claimant left, on A, gets it")
	}
}

// A command owed to a session's claimant is not sent to a second
// claimant on another node: the session is ambiguous then, and a relay
// in memory would never have given it that command.
func TestOwedCommandNotSentToASecondClaimant(t *testing.T) {
	t.Parallel()
	ns, _ := nodes(t, cfg(), 2)
	a, b := ns[0], ns[1]
	first := a.target(t, "owed", "control.attention.respond")
	ui := b.consumer(t)
	cmd := command(t, "owed")
	ui.send(t, cmd)
	assert.JSONEq(t, string(cmd), string(first.next(t)), "delivered on A, not acknowledged")
	b.stream(t, url.Values{"from": {"all"}, "filter": {`{"id":"` + idOf(t, cmd) + `"}`}}, nil).nextEvent(t)

	second := b.reclaim(t, "owed", 1)
	second.send(t, map[string]any{"type": "ping", "t": 1})
	assert.Equal(t, "pong", second.expect(t, "pong").str("type"), "the second claimant is sent nothing owed")
	next := command(t, "owed", withSubject("req-2"))
	ui.send(t, next)
	refused(t, ui, next, "ambiguous")
}

// A node that died holding a claim does not hold the session: its record
// (written here as a dead node leaves it) counts for nothing, the agent's
// claim on another node gets its commands at once, and the dead record is
// purged when a claim or a command finds it, or lapses after ClaimTTL
// when none does;
// a live node's record outlives the TTL (it writes it again).
func TestClaimOfAGoneNodeLapses(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.NATS.ClaimTTL = 600 * time.Millisecond
	ns, c := nodes(t, c, 1)
	b := ns[0]
	cv := viewClaims(t, c.NATS)
	record, records := cv.record, cv.records
	leave := func(session string) string { // a gone node's record
		subj := record(session, "gone")
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := cv.js.Publish(ctx, subj, nil)
		require.NoError(t, err)
		return subj
	}

	dead := leave("held")
	agent := b.target(t, "held", "control.attention.respond")
	require.Len(t, records("held"), 1, "B's record: the claim, asking who else claims the session (for what it owes), purged the gone node's")
	require.NotContains(t, records("held"), dead)
	dead = leave("held")
	ui := b.consumer(t)
	cmd := command(t, "held")
	ui.send(t, cmd)
	assert.JSONEq(t, string(cmd), string(agent.next(t)), "delivered on B: the gone node claims nothing")
	assert.NotContains(t, records("held"), dead, "the gone node's record purged")

	lapses := leave("asked-by-none")
	require.Eventually(t, func() bool { return len(records("asked-by-none")) == 0 }, wait, 10*time.Millisecond,
		"a record no command finds lapses after ClaimTTL")
	require.NotContains(t, records("asked-by-none"), lapses)
	leave("later")
	require.Eventually(t, func() bool { return len(records("later")) == 0 }, wait, 10*time.Millisecond)
	assert.Len(t, records("held"), 1, "B's own record, written again, outlives the TTL")
}

// A node whose NATS connection broke and came back writes the records of
// its claims again at once (not a third of ClaimTTL later): another node
// may have purged them meanwhile, finding no one to answer for it.
func TestNodeBackOnNATSRecordsItsClaimsAgain(t *testing.T) {
	t.Parallel()
	c := cfg()
	c.NATS.ClaimTTL = time.Minute
	k := streams.Add(1)
	proxy := startTCPProxy(t, strings.TrimPrefix(cluster(t).URLs()[0], "nats://"))
	c.NATS.URLs, c.NATS.Stream, c.NATS.Subject = []string{"nats://" + proxy.addr()}, fmt.Sprintf("P%d", k), fmt.Sprintf("p%d", k)
	r := openOn(t, c)
	b := serveRelay(t, r, httptest.NewServer(r.Handler()), c.Token)
	b.target(t, "kept", "control.attention.respond")
	cv := viewClaims(t, c.NATS)
	require.Len(t, cv.records("kept"), 1)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	claims, err := cv.js.Stream(ctx, c.NATS.Stream+"_CLAIMS")
	require.NoError(t, err)
	require.NoError(t, claims.Purge(ctx, jetstream.WithPurgeSubject(cv.record("kept", "*"))))
	require.Empty(t, cv.records("kept"), "purged, as by a node that found this one gone")
	proxy.cut()
	require.Eventually(t, func() bool { return len(cv.records("kept")) == 1 }, wait, 10*time.Millisecond,
		"the record written again once the connection is back")
}

// claimsView reads the claims stream of the relays on n.
type claimsView struct {
	t  *testing.T
	n  relay.NATSConfig
	js jetstream.JetStream
}

func viewClaims(t *testing.T, n relay.NATSConfig) *claimsView {
	nc, err := nats.Connect(strings.Join(cluster(t).URLs(), ","))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &claimsView{t: t, n: n, js: js}
}

// record is the subject of the record that node claims session.
func (cv *claimsView) record(session, node string) string {
	return cv.n.Subject + ".cl." + base64.RawURLEncoding.EncodeToString([]byte(session)) + "." + node
}

// records lists the subjects of the records of session's claims.
func (cv *claimsView) records(session string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	st, err := cv.js.Stream(ctx, cv.n.Stream+"_CLAIMS")
	require.NoError(cv.t, err)
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(cv.record(session, "*")))
	require.NoError(cv.t, err)
	return slices.Sorted(maps.Keys(info.State.Subjects))
}

// tcpProxy forwards each connection to target, until cut.
type tcpProxy struct {
	ln   net.Listener
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

func startTCPProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln, open: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.open[c], p.open[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			wg.Go(func() { pipe(up, c) })
			wg.Go(func() { pipe(c, up) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		wg.Wait()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// cut closes every connection through the proxy; it goes on accepting.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.open {
		_ = c.Close()
	}
	clear(p.open)
}

// die kills the node as far as a test can in process: its sockets cut
// (a shutdown given no time to drain) and its NATS connection closed.
func (tr *testRelay) die(t *testing.T) {
	t.Helper()
	tr.srv.CloseClientConnections()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_ = tr.Shutdown(gone)
}

// reclaim is the agent "target" back on tr after its node died: a new
// socket claiming session with an event at seq.
func (tr *testRelay) reclaim(t *testing.T, session string, seq int64) *fakeTarget {
	t.Helper()
	w := tr.dial(t)
	h := hello("emitter")
	h["identity"] = map[string]any{"agent": "target", "instance": "t/1"}
	h["capabilities"] = map[string]any{"control": map[string]any{"accepts": []string{"control.attention.respond"}, "ack_window_ms": 10000}}
	w.send(t, h)
	w.expect(t, "hello")
	w.send(t, ev(t, "progress.status", session, seq, withSource("aep://target/agent/target/session/"+session)))
	return &fakeTarget{w}
}

// An answer the UI replaced ("Answer differently": a second command to
// the same request, under a new id) is not sent again when the agent
// re-claims its session after its node died: only the replacing one is,
// beside the unacknowledged answer to another request.
func TestReplacedCommandNotSentAgainAfterANodeDied(t *testing.T) {
	t.Parallel()
	ns, _ := nodes(t, cfg(), 2)
	a, b := ns[0], ns[1]
	agent := a.target(t, "r", "control.attention.respond")
	ui := b.consumer(t)
	first := command(t, "r")
	other := command(t, "r", withSubject("req-2"))
	second := command(t, "r", withData(map[string]any{"answer": map[string]any{"option": "no"}}))
	for _, cmd := range [][]byte{first, other, second} {
		ui.send(t, cmd)
		assert.JSONEq(t, string(cmd), string(agent.next(t)), "delivered on A")
	}
	b.stream(t, url.Values{"from": {"all"}, "filter": {`{"id":"` + idOf(t, second) + `"}`}}, nil).nextEvent(t)

	a.die(t)
	agent.closed(t)
	again := b.reclaim(t, "r", 1)
	assert.JSONEq(t, string(other), string(again.next(t)), "the answer to req-2, owed")
	assert.JSONEq(t, string(second), string(again.next(t)), "the replacing answer to req-1, owed")
	again.send(t, map[string]any{"type": "ping", "t": 7})
	assert.Equal(t, "pong", again.expect(t, "pong").str("type"), "the replaced answer is not sent again")
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

// A command is never delivered on a guess: when this node cannot read
// the other nodes' claims (the claims stream unreadable), a command to a
// session it claims is refused unavailable, which its sender sends
// again, rather than handed to this node's claimant while another node's
// may hold the session too.
func TestCommandRefusedWhileTheClaimsAreUnknown(t *testing.T) {
	t.Parallel()
	ns, c := nodes(t, cfg(), 1)
	a := ns[0]
	agent := a.target(t, "unknown", "control.attention.respond")
	cv := viewClaims(t, c.NATS)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, cv.js.DeleteStream(ctx, c.NATS.Stream+"_CLAIMS"))

	ui := a.consumer(t)
	cmd := command(t, "unknown")
	ui.send(t, cmd)
	refused(t, ui, cmd, "unavailable")
	agent.send(t, map[string]any{"type": "ping", "t": 1})
	agent.expect(t, "pong") // frames are ordered: the command would have come first
}
