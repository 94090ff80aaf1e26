package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/aeptest"
	"github.com/aepforms/aepforms/internal/aep"
)

// validAnswers answers each scenario's request validly.
var validAnswers = map[string]map[string]any{
	ScenarioDeploy:          {"values": map[string]any{"name": "billing-api", "staged": true, "regions": []any{"1", "3"}, "db": "MariaDB"}},
	ScenarioAskUser:         {"values": map[string]any{"1": "2", "2": []any{"1", "Mars"}}},
	ScenarioAskUserMetadata: {"values": map[string]any{"1": "CockroachDB", "2": []any{"2"}}},
	ScenarioElicitation:     {"values": map[string]any{"environment": "staging", "replicas": 3, "reason": "traffic", "confirm": true}},
	ScenarioEveryType: {"values": map[string]any{"service": "api", "replicas": 4, "agree": true,
		"features": []any{"metrics", "chaos"}, "region": "eu-north-1", "notes": "<b>hi</b> **there**"}},
	ScenarioExpiring:   {"values": map[string]any{"window": "2200", "notify": false}},
	ScenarioPermission: {"text": "no, use the staging registry"},
	ScenarioInput:      {"text": "hotfix/7"},
	ScenarioPromptOnly: {"text": "The currency migration."},
	ScenarioOther:      {"text": "keep them"},
}

// checkStream asserts every event passes envelope and payload validation
// and, in order, the stream checker.
func checkStream(t *testing.T, sc *aeptest.StreamChecker, evs []*aep.Event) {
	t.Helper()
	for _, ev := range evs {
		assert.NoError(t, aeptest.ValidateEvent(ev), "event %s", ev.Raw())
		assert.NoError(t, sc.Check(ev), "stream rule at %s", ev.Raw())
		assertCaptureHonest(t, ev)
	}
}

// assertCaptureHonest checks that an event declaring capture metadata holds
// no payload member gated above metadata, using the protocol core's hop
// rules as the oracle: the same event declared full and down-levelled to
// metadata must keep every member path the event has (answer.values
// entries aside: an emitter gates those finer than a hop can).
func assertCaptureHonest(t *testing.T, ev *aep.Event) {
	t.Helper()
	if ev.Capture() != aep.CaptureMetadata || ev.Data() == nil {
		return
	}
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(ev.Raw(), &m))
	m["capture"] = json.RawMessage(`"full"`)
	b, _ := json.Marshal(m)
	asFull, err := aep.Decode(b)
	require.NoError(t, err)
	down, err := aep.Downlevel(asFull, aep.CaptureMetadata)
	require.NoError(t, err)
	kept := map[string]bool{}
	for _, p := range memberPaths(down.Data(), "") {
		kept[p] = true
	}
	for _, p := range memberPaths(ev.Data(), "") {
		if strings.HasPrefix(p, "answer.values.") {
			continue
		}
		assert.True(t, kept[p], "%s at capture metadata carries %s, gated above metadata", ev.Type(), p)
	}
}

// memberPaths lists the object member paths in a JSON value ("a", "a.b",
// "a[].c").
func memberPaths(raw json.RawMessage, prefix string) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		var out []string
		for k, v := range obj {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, p)
			out = append(out, memberPaths(v, p)...)
		}
		return out
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		var out []string
		for _, v := range arr {
			out = append(out, memberPaths(v, prefix+"[]")...)
		}
		return out
	}
	return nil
}

// TestEveryScenarioStreamValidates drives every scenario through its paths
// at each capture the agent can run at, and validates all it emits.
func TestEveryScenarioStreamValidates(t *testing.T) {
	t.Parallel()
	for _, c := range []aep.Capture{aep.CaptureMetadata, aep.CaptureRedacted, aep.CaptureFull} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			sc := aeptest.NewStreamChecker()
			h := newHarness(t, []string{scenarioAll}, func(cfg *Config) {
				cfg.Capture = c
				cfg.Every = time.Minute
				cfg.ReaskExpired = true
			})
			checkStream(t, sc, h.take())

			for _, name := range AllScenarios() {
				answer, ok := validAnswers[name]
				if !ok {
					continue
				}
				// An invalid answer first, then a retry of it, then a valid one.
				bad := h.respond(name, map[string]any{"values": map[string]any{"nope": 1}, "option": "nope"})
				checkStream(t, sc, h.send(bad))
				checkStream(t, sc, h.send(bad))
				good := h.respond(name, answer)
				evs := h.send(good)
				require.NotEmpty(t, evs)
				assert.Equal(t, "control.accepted", evs[0].Type(), "%s: %s", name, evs[0].Raw())
				checkStream(t, sc, evs)
				checkStream(t, sc, h.send(good))
			}

			standby := h.session(ScenarioStandby)
			checkStream(t, sc, h.send(command{typ: "control.pause", session: standby.ID, data: map[string]any{}}.event(t)))
			checkStream(t, sc, h.send(command{typ: "control.cancel", session: standby.ID,
				data: map[string]any{"scope": "run", "reason": "probe token=abc123secret"}}.event(t)))

			h.advance(time.Minute) // the OOB answer (45 s) and one Every question
			checkStream(t, sc, h.take())
			h.advance(time.Minute) // the expiring form was answered: nothing; one more Every question
			checkStream(t, sc, h.take())

			h.a.mu.Lock()
			h.a.stopping = true
			h.a.closeAllLocked(h.clk.add(time.Second))
			h.a.mu.Unlock()
			checkStream(t, sc, h.take())
			for _, s := range h.a.Sessions() {
				assert.False(t, s.Open, "%s ended", s.Scenario)
			}
		})
	}
}

func TestTimeoutAndReaskStreamValidates(t *testing.T) {
	t.Parallel()
	sc := aeptest.NewStreamChecker()
	h := newHarness(t, []string{ScenarioExpiring, ScenarioOOB}, func(cfg *Config) {
		cfg.ExpiresIn = time.Second
		cfg.OOBResolveAfter = 3 * time.Second
		cfg.ReaskExpired = true
	})
	checkStream(t, sc, h.take())
	for range 3 {
		h.advance(time.Second)
		checkStream(t, sc, h.take())
	}
	h.a.mu.Lock()
	h.a.stopping = true
	h.a.closeAllLocked(h.clk.add(time.Second))
	h.a.mu.Unlock()
	checkStream(t, sc, h.take())
}

func TestCancelRedactsTheReasonAtRedacted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioStandby}, func(c *Config) { c.Capture = aep.CaptureRedacted })
	h.take()
	s := h.session(ScenarioStandby)
	evs := h.send(command{typ: "control.cancel", session: s.ID,
		data: map[string]any{"scope": "run", "reason": "password=hunter2sequel"}}.event(t))
	require.Equal(t, "run.cancelled", evs[1].Type())
	assert.NotContains(t, string(evs[1].Raw()), "hunter2sequel")
	assert.Equal(t, aep.CaptureRedacted, evs[1].Capture())
}
