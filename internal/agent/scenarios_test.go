package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestEveryScenarioOpensItsSession(t *testing.T) {
	t.Parallel()
	for _, name := range AllScenarios() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, []string{name}, nil)
			evs := h.take()
			want := []string{"session.started", "run.started", "attention.requested"}
			switch name {
			case ScenarioStandby:
				want = want[:2]
			case ScenarioPermission:
				// The tool call it asks about, named by the request's cause.
				want = []string{"session.started", "run.started", "tool.requested", "attention.requested"}
			}
			require.Equal(t, want, types(evs))
			if name == ScenarioPermission {
				assert.Equal(t, evs[2].ID(), evs[3].Cause())
				assert.Equal(t, map[string]any{"name": "Bash", "call_id": "call-1"}, data(t, evs[2])["tool"])
			}

			s := h.session(name)
			assert.True(t, s.Open)
			assert.NotEmpty(t, s.Run, "a running run")
			assert.Equal(t, "aep://host-t/agent/aepforms-demo/session/"+s.ID, s.Source)
			assert.True(t, strings.HasPrefix(s.ID, name+"-"), "session id %q names its scenario", s.ID)
			for i, ev := range evs {
				seq, ok := ev.Seq()
				assert.True(t, ok)
				assert.Equal(t, int64(i), seq, "seq of %s", ev.Type())
				assert.Equal(t, s.Source, ev.Source())
				assert.Equal(t, s.ID, ev.Session())
				assert.Equal(t, "aepforms-demo", ev.Agent())
			}
			assert.Equal(t, s.Run, evs[1].Run())
			if name == ScenarioStandby {
				assert.Empty(t, s.Requests)
				return
			}
			asked := evs[len(evs)-1]
			req := decodeRequest(t, asked)
			assert.NoError(t, aep.ValidateRequest(req), "the request's form structure")
			assert.Equal(t, s.Run, asked.Run())
			assert.Equal(t, aep.SeverityNotice, asked.Severity())
			require.Len(t, s.Requests, 1)
			assert.Equal(t, asked.ID(), s.Requests[0].ID)
			assert.Equal(t, asked.Raw(), s.Requests[0].Event)
		})
	}
}

func TestScenarioCaptures(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioAskUser, ScenarioAskUserMetadata, ScenarioDeploy}, nil)
	h.take()
	cases := map[string]aep.Capture{
		ScenarioAskUser:         aep.CaptureRedacted,
		ScenarioAskUserMetadata: aep.CaptureMetadata,
		ScenarioDeploy:          aep.CaptureFull,
	}
	for name, want := range cases {
		s := h.session(name)
		assert.Equal(t, want, s.Capture, "capture of %s", name)
		ev, err := aep.Decode(s.Requests[0].Event)
		require.NoError(t, err)
		assert.Equal(t, want, ev.Capture(), "the request of %s declares its capture", name)
	}

	meta := h.session(ScenarioAskUserMetadata)
	ev, _ := aep.Decode(meta.Requests[0].Event)
	r := decodeRequest(t, ev)
	assert.Equal(t, "aepforms-demo asks 2 questions", r.Prompt)
	for _, f := range r.Fields {
		assert.Equal(t, f.ID, f.Label, "placeholder label at metadata")
		for _, c := range f.Choices {
			assert.Equal(t, c.ID, c.Label, "placeholder choice label at metadata")
		}
	}
}

func TestAgentCaptureMetadataSynthesizesEveryPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{scenarioAll}, func(c *Config) { c.Capture = aep.CaptureMetadata })
	for _, ev := range h.take() {
		assert.Equal(t, aep.CaptureMetadata, ev.Capture(), "%s declares the agent's capture", ev.Type())
		switch ev.Type() {
		case "session.started":
			assert.NotContains(t, data(t, ev), "label", "label is [redacted]")
		case "attention.requested":
			r := decodeRequest(t, ev)
			assert.True(t, strings.HasPrefix(r.Prompt, "aepforms-demo "), "structural prompt, got %q", r.Prompt)
			for _, o := range r.Options {
				assert.Equal(t, o.ID, o.Label)
			}
			for _, f := range r.Fields {
				assert.Equal(t, f.ID, f.Label)
			}
		}
	}
}

func TestEveryTypeForm(t *testing.T) {
	t.Parallel()
	r := everyTypeForm("a").req
	require.NoError(t, aep.ValidateRequest(r))
	byType := map[string]int{}
	var twelve, numberRange, optionalNumber, requiredBool, multiOther bool
	for _, f := range r.Fields {
		byType[f.Type]++
		switch {
		case f.Type == aep.FieldSelect && len(f.Choices) == 12:
			twelve = true
		case f.Type == aep.FieldNumber && f.Min != nil && f.Max != nil:
			numberRange = true
		case f.Type == aep.FieldNumber && !f.Required:
			optionalNumber = true
		case f.Type == aep.FieldBoolean && f.Required:
			requiredBool = true
		case f.Type == aep.FieldSelect && f.Multi && f.Other:
			multiOther = true
		}
	}
	assert.True(t, twelve, "a select with 12 choices")
	assert.True(t, numberRange, "a number with min and max")
	assert.True(t, optionalNumber, "an optional number")
	assert.True(t, requiredBool, "a required boolean")
	assert.True(t, multiOther, "a multi select with other")
	assert.Positive(t, byType[aep.FieldString])
	assert.Greater(t, len(r.Prompt), 800, "a long prompt")
	for _, s := range []string{"<script>alert(1)</script>", "**bold**", "<b>not bold</b>"} {
		assert.Contains(t, r.Prompt, s)
	}
	assert.Equal(t, r.Prompt, aep.Redact(r.Prompt), "the prompt survives the redaction pipeline, so capture redacted shows it whole")
}

func TestDeployFormIsTheGoldenForm(t *testing.T) {
	t.Parallel()
	r := deployForm("a").req
	assert.Equal(t, "Configure the new service deployment", r.Prompt)
	require.Len(t, r.Fields, 4)
	assert.Equal(t, []string{"name", "staged", "regions", "db"}, []string{r.Fields[0].ID, r.Fields[1].ID, r.Fields[2].ID, r.Fields[3].ID})
	assert.True(t, r.Fields[0].Required)
	assert.True(t, r.Fields[2].Multi)
	assert.True(t, r.Fields[3].Other)
}

func TestResolveScenarios(t *testing.T) {
	t.Parallel()
	all, err := resolveScenarios([]string{"all"})
	require.NoError(t, err)
	require.Len(t, all, len(AllScenarios()))
	assert.Equal(t, ScenarioStandby, all[0].name, "standby opens first")
	assert.Equal(t, ScenarioDeploy, all[1].name, "then the first form")

	_, err = resolveScenarios([]string{"deploy", "nope"})
	assert.ErrorIs(t, err, ErrUnknownScenario)

	for _, n := range RepeatableScenarios() {
		assert.NotEqual(t, ScenarioStandby, n)
		assert.NotEqual(t, ScenarioExpiring, n)
		assert.NotEqual(t, ScenarioOOB, n)
	}
	for _, want := range []string{ScenarioDeploy, ScenarioAskUser, ScenarioAskUserMetadata, ScenarioElicitation,
		ScenarioEveryType, ScenarioExpiring, ScenarioOOB, ScenarioPermission, ScenarioInput, ScenarioPromptOnly, ScenarioOther} {
		assert.Contains(t, AllScenarios(), want)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*Config){
		"bad scheme":      func(c *Config) { c.RelayURL = "ftp://x" },
		"no host":         func(c *Config) { c.RelayURL = "http://" },
		"reject rate > 1": func(c *Config) { c.RejectRate = 1.5 },
		"unknown scenario": func(c *Config) {
			c.Scenarios = []string{"nope"}
		},
		"capture above full": func(c *Config) { c.Capture = aep.CaptureFull + 1 },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			mod(&cfg)
			err := New(cfg).Run(t.Context())
			assert.Error(t, err)
		})
	}
	assert.Equal(t, "ws://h:1/base/socket", Config{RelayURL: "ws://h:1/base/"}.socketURL())
	assert.Equal(t, "http://127.0.0.1:8787/socket", DefaultConfig().socketURL())
	assert.Equal(t, "my-host.local", sanitizeHost("My_Host.local"))
}

// --pending asks that many more deploy forms at once after the set, in
// ten sessions of their own, none dropped from the event queue.
func TestPendingAsksThatManyDeployForms(t *testing.T) {
	t.Parallel()
	const n = 12000 // more than the default event queue holds
	h := newHarness(t, []string{ScenarioPermission}, func(c *Config) { c.Pending = n })
	evs := h.take()
	asked := map[string]int{}
	prompts, heads := map[string]bool{}, map[string]bool{}
	for _, ev := range evs {
		if ev.Type() == "attention.requested" && strings.HasPrefix(ev.Session(), ScenarioDeploy+"-") {
			asked[ev.Session()]++
			var req aep.Request
			require.NoError(t, ev.DecodeData(&req))
			prompts[req.Prompt] = true
			heads[strings.SplitN(req.Prompt, ":", 2)[0]] = true
		}
	}
	assert.Len(t, asked, 10, "ten sessions")
	assert.Len(t, prompts, n, "every question names its own service: a page of them does not read the same")
	assert.Len(t, heads, n, "and names it first, so a row cut short on a phone still differs")
	total := 0
	for _, k := range asked {
		total += k
	}
	assert.Equal(t, n, total, "deploy forms asked")
	assert.Equal(t, ScenarioPermission, strings.SplitN(h.session(ScenarioPermission).ID, "-", 2)[0], "the set is asked too")
}
