package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/conformance"
	"github.com/stretchr/testify/assert"
)

// The limits the relay is started with, so the checker can probe them.
const (
	testMaxBody  = 65536
	testMaxBatch = 100
	testMaxFrom  = 4
)

var limitFlags = []string{"--max-body", "65536", "--max-batch", "100", "--max-from", "4"}

// Skips every set-up has: `aepforms relay` has no flag for its SSE ping
// interval (15 s), longer than the run may wait.
var alwaysSkipped = []string{"sse.ping"}

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
// `aepforms relay` in the three set-ups of its issue.
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
			base, log := startConfRelay(t, s.env, limitFlags...)
			tg := s.target
			tg.BaseURL, tg.Downlevel = base, downlevel
			tg.MaxBody, tg.MaxBatch, tg.MaxFrom = testMaxBody, testMaxBatch, testMaxFrom
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
