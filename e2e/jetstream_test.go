//go:build unix

package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/conformance"
	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/relay/natstest"
)

// runRelayNode starts `aepforms relay` as a process (so it can be killed
// with SIGKILL) on the NATS servers natsURL, stream E2E, with the limits
// the live checker probes, and waits until it listens.
func runRelayNode(t *testing.T, bin, name, token, natsURL string) (string, *process) {
	t.Helper()
	return runRelayProcess(t, bin, name, token,
		append([]string{"--port", "0", "--nats", natsURL, "--nats-stream", "E2E", "--nats-subject", "e2e"}, limitFlags...)...)
}

// retarget makes the gate's next connections go to target (host:port):
// the one address an agent knows, moved to another relay node as a load
// balancer does when a node stops answering.
func (g *tcpGate) retarget(target string) {
	g.mu.Lock()
	g.target = target
	g.mu.Unlock()
}

// roundRobin is a TCP proxy handing each new connection to the next of
// its targets: one address in front of several relay nodes, so one
// client's requests and sockets land on different nodes.
type roundRobin struct {
	ln      net.Listener
	targets []string
	n       atomic.Int64
	wg      sync.WaitGroup
}

func startRoundRobin(t *testing.T, targets ...string) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rr := &roundRobin{ln: ln, targets: targets}
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	rr.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", targets[int(rr.n.Add(1))%len(targets)])
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			open[c], open[up] = struct{}{}, struct{}{}
			mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			rr.wg.Go(func() { pipe(up, c) })
			rr.wg.Go(func() { pipe(c, up) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		rr.wg.Wait()
	})
	return rr
}

func hostOf(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	return u.Host
}

// A relay of two `aepforms relay` processes on a three-node NATS
// JetStream cluster (in this process, on loopback). The AEP live checker
// passes against the two nodes behind one round-robin address (each of
// its connections on the next node, so two claimants of one session may
// be on two nodes: still ambiguous). Then an agent on relay A (through
// one address, as behind a load balancer) and serve on relay B answer 50
// questions: 20 answers are in flight (their commands routed from B to
// the agent's socket on A, and lost there unread by the stalled agent)
// when relay A is killed with SIGKILL and the NATS server leading the
// stream is killed too (Shutdown in process: its clients cut, the other
// two elect a new leader); the address moves to B, where the agent
// reconnects and is sent the 20 commands again; the other 30 answers are
// posted. Every answer that got its 303 is executed by the agent
// exactly once, under one command id, and accepted; History lists each
// once; the UI never said events may be missing and shows each question
// once.
func TestJetStreamRelayNodeAndStreamLeaderKilled(t *testing.T) {
	t.Parallel()
	const total, beforeKill = 50, 20
	nats := natstest.StartT(t, 3)
	bin := buildCrashBinary(t, t.TempDir())
	token := "e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	aURL, relayA := runRelayNode(t, bin, "relay A (to be killed)", token, nats.URL())
	bURL, _ := runRelayNode(t, bin, "relay B", token, nats.URL())

	t.Run("conformance", func(t *testing.T) {
		rr := startRoundRobin(t, hostOf(t, aURL), hostOf(t, bURL))
		tg := conformance.Target{Token: token, Buffer: 10000, BaseURL: "http://" + rr.ln.Addr().String(),
			Downlevel: confFixture(t, "downlevel/cases.json"), MaxBody: testMaxBody, MaxBatch: testMaxBatch,
			MaxFrom: testMaxFrom, SSEPing: 200 * time.Millisecond}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rep := conformance.Run(ctx, tg)
		t.Logf("conformance report (two nodes, round robin):\n%s", rep)
		for _, f := range rep.Failed() {
			assert.Failf(t, "check failed", "%s: %s", f.Name, f.Reason)
		}
		skipped := confConcat(alwaysSkipped, evictChecks, []string{"control.unauthorized-watch-only"})
		for _, sk := range rep.Skipped() {
			assert.Contains(t, skipped, sk.Name, "check %s skipped (%s), want it run", sk.Name, sk.Reason)
		}
	})

	front := startGate(t, hostOf(t, aURL)) // the agent's one relay address
	s := runServe(t, "ui (on relay B)", token, bURL)
	commands := newCommandGate()
	ag, sessions, forms := askMany(t, s, total, agentOptions{relayURL: front.url(), gate: commands})
	ctx, cancel := context.WithTimeout(t.Context(), stackWait)
	defer cancel()
	s.awaitRespond(t, true)

	answer := func(sess string) {
		status, err := s.post(t, forms[sess], forms[sess].button(t, "Deny"))
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "session %s", sess)
	}
	// Mid-stream: 20 answers in flight through A. Each got its 303 and
	// its command reached the agent through A (routed there from B), and
	// the agent, stalled, lost it unread: no ack.
	resume := commands.stall()
	for _, sess := range sessions[:beforeKill] {
		answer(sess)
	}
	dropped, err := commands.awaitDropped(ctx, beforeKill)
	require.NoError(t, err, "every answer's command reached the agent through A before the kill (%d of %d)", dropped, beforeKill)
	relayA.killed(t) // kill -9: no drain, nothing handed over
	leader, err := nats.StreamLeader("E2E")
	require.NoError(t, err)
	nats.Kill(leader)
	// The agent is itself again before its address leads to B, so what
	// B sends it on its return is executed, not lost unread once more.
	resume()
	front.retarget(hostOf(t, bURL))
	front.cut() // what was left of the agent's connections through A
	front.reopen()

	// Back on B, the agent re-claims its sessions, and B sends it the
	// 20 commands kept in the stream with no ack: each executed once.
	for _, sess := range sessions[:beforeKill] {
		awaitCommands(t, ag, sess, 1, nil)
	}
	for _, sess := range sessions[beforeKill:] {
		answer(sess)
	}

	var ids []string
	for _, sess := range sessions {
		got := awaitCommands(t, ag, sess, 1, nil)
		require.Len(t, got, 1, "session %s: one command id, never two: %+v", sess, got)
		assert.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "session %s executed: %+v", sess, got[0].Decision)
		assert.Equal(t, 0, got[0].Differing, "session %s: every transmission the same bytes", sess)
		ids = append(ids, got[0].ID)
	}
	for _, sess := range sessions {
		s.awaitCard(t, sess, "the answer recorded by the agent", func(c *goquery.Selection) bool {
			return c.AttrOr("data-state", "") == "answered"
		})
	}
	for _, sess := range sessions {
		assert.Len(t, commandsTo(ag, sess), 1, "session %s: still one command", sess)
		s.getPage(t, "?session="+url.QueryEscape(sess)).cardOf(t, sess) // one card: no question twice
	}
	slices.Sort(ids)
	rows := historyRows(t, s)
	require.Len(t, rows, total, "one History entry per answer: %+v", rows)
	var accepted []string
	for _, r := range rows {
		assert.Equal(t, "accepted", r.State, "History of %s: %+v", r.CommandID, r)
		accepted = append(accepted, r.CommandID)
	}
	slices.Sort(accepted)
	assert.Equal(t, ids, accepted, "History's commands are the ones the agent executed")
	page := s.getPage(t, "")
	assert.NotContains(t, strings.ToLower(page.doc.Text()), "events may be missing", "the UI's feed saw no gap")
}
