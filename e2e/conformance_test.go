package e2e

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aepforms/aepforms/e2e/conformance"
	"github.com/aepforms/aepforms/internal/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The limits the relay is started with, so the checker can probe them.
const (
	testMaxBody  = 65536
	testMaxBatch = 100
	testMaxFrom  = 4
)

var limitFlags = []string{"--max-body", "65536", "--max-batch", "100", "--max-from", "4", "--sse-ping", "200ms"}

// Skips every set-up has: none (the relay's SSE ping is set short with
// --sse-ping so the heartbeat check runs).
var alwaysSkipped = []string{}

var evictChecks = []string{"evict.sse-replay-exhausted", "evict.ws-replay-exhausted", "evict.from-all-holds-only-buffer", "evict.per-session"}

// openSkipped are the checks the open, watch-only posture cannot run:
// token checks, and routing (every command is refused unauthorized).
var openSkipped = []string{
	"auth.token-required", "healthz.counts-with-auth", "post.unauthorized-401", "sse.access-token-query",
	"ws.auth-header-or-query", "control.routed-byte-identical", "control.retry-forwarded",
	"control.ambiguous", "control.seqless-not-owner", "control.any-role-sends", "control.unsupported-behalf",
	"capture.ceiling-routed-command",
}

// TestRelayConformance runs the independent AEP 0.1 live checker against
// `aepforms relay` in three set-ups: a token, open (watch-only), and a
// token with a buffer small enough to evict.
func TestRelayConformance(t *testing.T) {
	t.Parallel()
	downlevel := confFixture(t, "downlevel/cases.json")
	setups := []struct {
		name    string
		env     map[string]string
		target  conformance.Target
		skipped []string
	}{
		{
			name:    "token",
			env:     map[string]string{"AEP_TOKEN": "conformance-secret"},
			target:  conformance.Target{Token: "conformance-secret", Buffer: 10000},
			skipped: confConcat(alwaysSkipped, evictChecks, []string{"control.unauthorized-watch-only"}),
		},
		{
			name:    "open-watch-only",
			env:     map[string]string{},
			target:  conformance.Target{Buffer: 10000},
			skipped: confConcat(alwaysSkipped, evictChecks, openSkipped),
		},
		{
			name:    "token-evict",
			env:     map[string]string{"AEP_TOKEN": "conformance-secret", "AEP_BUFFER": "64"},
			target:  conformance.Target{Token: "conformance-secret", Buffer: 64, Evict: true},
			skipped: confConcat(alwaysSkipped, []string{"control.unauthorized-watch-only"}),
		},
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			relay := startConfRelay(t, s.env, limitFlags...)
			log := relay.log
			tg := s.target
			tg.BaseURL, tg.Downlevel = relay.base, downlevel
			tg.MaxBody, tg.MaxBatch, tg.MaxFrom = testMaxBody, testMaxBatch, testMaxFrom
			tg.SSEPing = 200 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep := conformance.Run(ctx, tg)
			t.Logf("conformance report (%s):\n%s", s.name, rep)
			for _, f := range rep.Failed() {
				assert.Failf(t, "check failed", "%s: %s", f.Name, f.Reason)
			}
			for _, sk := range rep.Skipped() {
				assert.Contains(t, s.skipped, sk.Name, "check %s skipped (%s), want it run in this set-up", sk.Name, sk.Reason)
			}
			assert.Len(t, rep.Results, len(conformance.Checks()), "checks run: got %d, want all %d", len(rep.Results), len(conformance.Checks()))
			if t.Failed() {
				t.Logf("relay log:\n%s", log)
			}
			assert.NotContains(t, log.String(), "conformance-secret", "the relay log must never hold the token")
		})
	}
}

func confConcat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return slices.Compact(out)
}

// TestControlTargetConformance runs the independent control-target checker
// against the demo agent's standby session, through the relay of set-up 1,
// and answers its deploy form as a raw AEP control sender.
func TestControlTargetConformance(t *testing.T) {
	t.Parallel()
	const token = "conformance-secret"
	relay := startConfRelay(t, map[string]string{"AEP_TOKEN": token})
	base, relayLog := relay.base, relay.log

	cfg := agent.DefaultConfig()
	cfg.RelayURL, cfg.Token = base, token
	cfg.Scenarios = []string{agent.ScenarioStandby, agent.ScenarioDeploy}
	cfg.Host, cfg.Agent = "conformance.test", "conformance-demo"
	cfg.Every, cfg.AckWindow, cfg.DrainTimeout = 0, 2*time.Second, -1
	agentLog := newConfLog()
	cfg.Logger = slog.New(slog.NewTextHandler(agentLog, nil))
	ag := agent.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ag.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "agent Run")
		case <-time.After(10 * time.Second):
			t.Error("agent Run did not return within 10 s of its context ending")
		}
	})

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	deploy, form, err := ag.WaitRequest(wctx, agent.ScenarioDeploy)
	require.NoError(t, err, "the agent did not ask its deploy form")
	awaitRelayHolds(t, base, token, deploy.ID, form.ID)
	var standby agent.SessionInfo
	for _, s := range ag.Sessions() {
		if s.Scenario == agent.ScenarioStandby {
			standby = s
		}
	}
	require.NotEmpty(t, standby.Run, "the standby session has a running run")

	values := map[string]any{"name": "conformance-svc", "staged": true, "regions": []any{"1", "3"}, "db": "a custom engine"}
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	rep := conformance.RunControl(cctx, conformance.ControlTarget{
		BaseURL: base, Token: token, Agent: cfg.Agent,
		Form: &conformance.FormAnswer{Values: values},
	})
	t.Logf("control-target report:\n%s", rep)
	for _, f := range rep.Failed() {
		assert.Failf(t, "check failed", "%s: %s", f.Name, f.Reason)
	}
	assert.Empty(t, rep.Skipped(), "every control-target check runs against the demo agent")
	assert.Len(t, rep.Results, len(conformance.ControlChecks()))
	if res, ok := rep.Result("target.declared"); ok {
		assert.Contains(t, res.Reason, standby.ID, "the checker found the standby session by itself")
	}

	// What reached the agent, by its own record: each redelivered command
	// arrived twice and was decided once; the form answer once, accepted.
	var redelivered, cancels, answers int
	for _, r := range ag.Record() {
		switch {
		case r.Type == "control.cancel":
			cancels++
			assert.Equal(t, 2, r.Count, "control.cancel transmissions (one redelivery)")
			assert.Equal(t, agent.OutcomeAccepted, r.Decision.Outcome)
			assert.Zero(t, r.Differing, "the redelivery was byte-identical")
		case r.Session == deploy.ID:
			answers++
			assert.Equal(t, 1, r.Count)
			assert.Equal(t, agent.OutcomeAccepted, r.Decision.Outcome, "form answer decision: %+v", r.Decision)
		case r.Count == 2:
			redelivered++
			assert.Zero(t, r.Differing)
		default:
			assert.Equal(t, 1, r.Count, "command %s %s", r.Type, r.ID)
		}
	}
	assert.Equal(t, 1, cancels, "distinct control.cancel commands")
	assert.Equal(t, 1, answers, "distinct answers to the deploy form")
	assert.Equal(t, 1, redelivered, "distinct redelivered respond commands")
	for _, s := range ag.Sessions() {
		switch s.Scenario {
		case agent.ScenarioStandby:
			assert.Len(t, s.Runs, 2, "standby runs: the cancelled one and the one it restarts")
		case agent.ScenarioDeploy:
			require.Len(t, s.Requests, 1)
			assert.Equal(t, agent.StateAnswered, s.Requests[0].State)
		}
	}
	if t.Failed() {
		t.Logf("relay log:\n%s\nagent log:\n%s", relayLog, agentLog)
	}
}

// TestRelayDrainConformance checks the relay's orderly shutdown: a socket
// gets closing (with its delivered position) and close 1001, a stream gets
// `: shutting-down` and ends, and the process exits 0.
func TestRelayDrainConformance(t *testing.T) {
	t.Parallel()
	const token = "conformance-secret"
	relay := startConfRelay(t, map[string]string{"AEP_TOKEN": token})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	rep := conformance.RunDrain(ctx, conformance.Target{BaseURL: relay.base, Token: token, Buffer: 10000}, func() {
		go func() { stopped <- relay.stop() }()
	})
	t.Logf("drain report:\n%s", rep)
	for _, f := range rep.Failed() {
		assert.Failf(t, "check failed", "%s: %s", f.Name, f.Reason)
	}
	assert.Len(t, rep.Results, len(conformance.DrainChecks()))
	assert.NoError(t, <-stopped, "relay exit after drain")
}
