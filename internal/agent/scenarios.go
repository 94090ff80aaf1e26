package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// Scenario names. Each scenario is its own session: session.started,
// run.started, its request, the outcome, run.finished, session.ended.
const (
	ScenarioStandby         = "standby"
	ScenarioDeploy          = "deploy"
	ScenarioAskUser         = "ask-user-question"
	ScenarioAskUserMetadata = "ask-user-question-metadata"
	ScenarioElicitation     = "elicitation"
	ScenarioEveryType       = "every-type"
	ScenarioExpiring        = "expiring"
	ScenarioOOB             = "oob"
	ScenarioPermission      = "permission"
	ScenarioInput           = "input"
	ScenarioPromptOnly      = "prompt-only"
	ScenarioOther           = "other"
	scenarioAll             = "all"
)

// oobResponder is attention.answered.by for the answers the agent's own
// terminal user gives (the oob scenario).
const oobResponder = "terminal-user"

// scenario is one entry of the library.
type scenario struct {
	name    string
	label   string      // session.started label (redacted+)
	ceiling aep.Capture // the highest capture its events declare
	extra   bool        // Every may ask it again
	ask     func(agent string) ask
}

// ask is one request a scenario raises, with full content.
type ask struct {
	req        aep.Request
	metaPrompt string      // the prompt at capture metadata
	refusing   string      // option applied to unmatched text on a permission request
	expires    bool        // expires_at = asked + ExpiresIn, attention.timeout then
	oob        *aep.Answer // answered by the agent itself after OOBResolveAfter
	tool       string      // the tool asked about (a tool.requested before the request)
}

// AllScenarios lists what `--scenario all` runs, in order: standby first,
// then the golden deploy form, then the rest.
func AllScenarios() []string {
	out := make([]string, 0, len(library))
	for _, s := range library {
		out = append(out, s.name)
	}
	return out
}

// RepeatableScenarios lists the scenarios Every rotates through.
func RepeatableScenarios() []string {
	var out []string
	for _, s := range library {
		if s.extra {
			out = append(out, s.name)
		}
	}
	return out
}

func lookupScenario(name string) (*scenario, bool) {
	for i := range library {
		if library[i].name == name {
			return &library[i], true
		}
	}
	return nil, false
}

// resolveScenarios expands "all" and checks every name.
func resolveScenarios(names []string) ([]*scenario, error) {
	var out []*scenario
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == scenarioAll {
			for i := range library {
				out = append(out, &library[i])
			}
			continue
		}
		s, ok := lookupScenario(n)
		if !ok {
			return nil, fmt.Errorf("%w: %q (known: all, %s)", ErrUnknownScenario, n, strings.Join(AllScenarios(), ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

var library = []scenario{
	{
		name:    ScenarioStandby,
		label:   "Standby: a running run with nothing pending (control probes, control.cancel)",
		ceiling: aep.CaptureFull,
	},
	{
		name:    ScenarioDeploy,
		label:   "Deploy form (AEP-0006, as the golden s_form session)",
		ceiling: aep.CaptureFull,
		extra:   true,
		ask:     deployForm,
	},
	{
		name:    ScenarioAskUser,
		label:   "Claude Code AskUserQuestion at capture redacted",
		ceiling: aep.CaptureRedacted,
		extra:   true,
		ask:     askUserQuestionForm,
	},
	{
		name:    ScenarioAskUserMetadata,
		label:   "Claude Code AskUserQuestion at capture metadata (placeholder labels)",
		ceiling: aep.CaptureMetadata,
		ask:     askUserQuestionForm,
	},
	{
		name:    ScenarioElicitation,
		label:   "MCP elicitation/create mapped to a form",
		ceiling: aep.CaptureFull,
		extra:   true,
		ask:     elicitationForm,
	},
	{
		name:    ScenarioEveryType,
		label:   "A form with every field type and constraint",
		ceiling: aep.CaptureFull,
		extra:   true,
		ask:     everyTypeForm,
	},
	{
		name:    ScenarioExpiring,
		label:   "A form that expires if unanswered",
		ceiling: aep.CaptureFull,
		ask:     expiringForm,
	},
	{
		name:    ScenarioOOB,
		label:   "An informational form answered in the agent's own terminal (respond_via oob)",
		ceiling: aep.CaptureFull,
		ask:     oobForm,
	},
	{
		name:    ScenarioPermission,
		label:   "A permission request with allow/deny options",
		ceiling: aep.CaptureFull,
		extra:   true,
		ask:     permissionRequest,
	},
	{
		name:    ScenarioInput,
		label:   "An input request: pick an option or type an answer",
		ceiling: aep.CaptureFull,
		extra:   true,
		ask:     inputRequest,
	},
	{
		name:    ScenarioPromptOnly,
		label:   "A form without fields (prompt only, free-text answer)",
		ceiling: aep.CaptureFull,
		extra:   true,
		ask:     promptOnlyForm,
	},
	{
		name:    ScenarioOther,
		label:   `A request of kind "other" (free-text answer)`,
		ceiling: aep.CaptureFull,
		ask:     otherRequest,
	},
}

func deployForm(agent string) ask {
	return ask{req: DeployForm(), metaPrompt: metadataPrompt(agent, aep.KindForm, ScenarioDeploy)}
}

// DeployForm is the deploy scenario's request: the golden corpus's s_form
// (AEP-0006), a required service name, a boolean, a multi select of
// regions and a database select with Other, answered over control. Field
// ids "name", "staged", "regions" ("1".."3") and "db" ("1", "2"). Tests
// use it (through e2e/samples) to ask what the demo agent asks.
func DeployForm() aep.Request {
	return aep.Request{
		Kind:   aep.KindForm,
		Prompt: "Configure the new service deployment",
		Fields: []aep.FieldSpec{
			{ID: "name", Type: aep.FieldString, Label: "Service name", Required: true},
			{ID: "staged", Type: aep.FieldBoolean, Label: "Deploy to staging first?"},
			{ID: "regions", Type: aep.FieldSelect, Label: "Regions", Multi: true, Choices: []aep.Choice{
				{ID: "1", Label: "us-east"}, {ID: "2", Label: "eu-west"}, {ID: "3", Label: "ap-south"},
			}},
			{ID: "db", Type: aep.FieldSelect, Label: "Database", Other: true, Choices: []aep.Choice{
				{ID: "1", Label: "PostgreSQL"}, {ID: "2", Label: "SQLite"},
			}},
		},
		RespondVia: []string{aep.ViaControl},
	}
}

// askUserQuestionInput is the fixture's AskUserQuestion call.
const askUserQuestionInput = `{"questions":[
 {"question":"Which database should the new service use?","header":"Database","multiSelect":false,
  "options":[{"label":"PostgreSQL","description":"relational, ACID"},{"label":"SQLite","description":"embedded, zero-ops"}]},
 {"question":"Which regions should we roll out to?","header":"Regions","multiSelect":true,
  "options":[{"label":"us-east"},{"label":"eu-west"}]}]}`

func askUserQuestionForm(agent string) ask {
	var in askUserQuestion
	mustUnmarshal(askUserQuestionInput, &in)
	r := mapAskUserQuestion(agent, in)
	return ask{req: r, metaPrompt: r.Prompt}
}

// elicitationInput is the fixture's MCP elicitation/create request.
const elicitationInput = `{"message":"Configure the deployment target","requestedSchema":{"type":"object",
 "properties":{
  "environment":{"type":"string","enum":["staging","production"],"enumNames":["Staging","Production"],"title":"Environment"},
  "replicas":{"type":"integer","title":"Replica count"},
  "reason":{"type":"string","title":"Why now"},
  "confirm":{"type":"boolean","title":"Proceed immediately"}},
 "required":["environment","confirm"]}}`

func elicitationForm(agent string) ask {
	e, err := parseElicitation([]byte(elicitationInput))
	if err != nil {
		panic(err) // a constant of this file
	}
	r, meta := mapElicitation(agent, e)
	return ask{req: r, metaPrompt: meta}
}

// everyTypePrompt is long, written in Markdown as agents write, with
// HTML and a javascript: link in it: a consumer may format the Markdown
// but must show the HTML as text and never follow the link.
const everyTypePrompt = `## Release checklist for **billing-api** v2.4.0

Please review before the release is cut. This prompt is long on purpose: it must wrap, scroll and stay readable as plain text in a narrow window as well as a wide one.

- [ ] Changelog updated (see ` + "`CHANGELOG.md`" + `)
- [ ] Migration reviewed: ` + "`ALTER TABLE invoices ADD COLUMN currency text NOT NULL DEFAULT 'EUR'`" + `
- [x] Load test passed at 1,200 req/s for 30 minutes

> Markdown such as **bold**, _italic_ and [a link](https://example.com/docs) may be formatted; a link shows where it goes.

HTML-looking text must too: <script>alert(1)</script> <b>not bold</b> <img src=x onerror=alert(2)> &amp; &lt;tag&gt; </textarea></form><a href="javascript:alert(3)">click</a>
If any of that ran, rendered or swallowed the rest of this prompt, the UI is broken.

Fill in the fields below. The replica count must be between 1 and 20; the timeout is optional. Pick one region out of twelve, any number of features, or type one that is not listed.`

var twelveRegions = []string{
	"us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1",
	"eu-west-1", "eu-west-2", "eu-central-1", "eu-north-1", "ap-south-1", "ap-northeast-1",
}

func everyTypeForm(agent string) ask {
	lo, hi := 1.0, 20.0
	regions := make([]aep.Choice, 0, len(twelveRegions))
	for _, r := range twelveRegions {
		regions = append(regions, aep.Choice{ID: r, Label: "Region " + r})
	}
	return ask{
		req: aep.Request{
			Kind:   aep.KindForm,
			Prompt: everyTypePrompt,
			Fields: []aep.FieldSpec{
				{ID: "service", Type: aep.FieldString, Label: "Service name", Required: true},
				{ID: "replicas", Type: aep.FieldNumber, Label: "Replica count (1 to 20)", Required: true, Min: &lo, Max: &hi},
				{ID: "timeout", Type: aep.FieldNumber, Label: "Request timeout in seconds (optional)"},
				{ID: "agree", Type: aep.FieldBoolean, Label: "I have read the checklist above", Required: true},
				{ID: "features", Type: aep.FieldSelect, Label: "Features to enable", Multi: true, Other: true, Choices: []aep.Choice{
					{ID: "metrics", Label: "Metrics"}, {ID: "tracing", Label: "Tracing"}, {ID: "profiling", Label: "Continuous profiling"},
				}},
				{ID: "region", Type: aep.FieldSelect, Label: "Primary region", Required: true, Choices: regions},
				{ID: "notes", Type: aep.FieldString, Label: "Notes for the release manager (optional, <b>plain text</b>)"},
			},
			RespondVia: []string{aep.ViaControl},
		},
		metaPrompt: metadataPrompt(agent, aep.KindForm, ScenarioEveryType),
	}
}

func expiringForm(agent string) ask {
	return ask{
		req: aep.Request{
			Kind:   aep.KindForm,
			Prompt: "Approve tonight's maintenance window? Unanswered, the agent skips maintenance when this expires.",
			Fields: []aep.FieldSpec{
				{ID: "window", Type: aep.FieldSelect, Label: "Window", Required: true, Choices: []aep.Choice{
					{ID: "2200", Label: "22:00 to 23:00 UTC"}, {ID: "0200", Label: "02:00 to 03:00 UTC"},
				}},
				{ID: "notify", Type: aep.FieldBoolean, Label: "Notify customers beforehand"},
			},
			RespondVia: []string{aep.ViaControl},
		},
		metaPrompt: metadataPrompt(agent, aep.KindForm, ScenarioExpiring),
		expires:    true,
	}
}

func oobForm(agent string) ask {
	return ask{
		req: aep.Request{
			Kind:   aep.KindForm,
			Prompt: "The agent is asking its own terminal user which test suites to run (shown here for information; it is answered there).",
			Fields: []aep.FieldSpec{
				{ID: "suites", Type: aep.FieldSelect, Label: "Test suites", Multi: true, Required: true, Choices: []aep.Choice{
					{ID: "unit", Label: "Unit"}, {ID: "integration", Label: "Integration"}, {ID: "e2e", Label: "End to end"},
				}},
			},
			RespondVia: []string{aep.ViaOOB},
		},
		metaPrompt: metadataPrompt(agent, aep.KindForm, ScenarioOOB),
		oob:        &aep.Answer{Values: aep.Values{"suites": []any{"unit", "integration"}}},
	}
}

func permissionRequest(agent string) ask {
	return ask{
		req: aep.Request{
			Kind:    aep.KindPermission,
			Prompt:  "Allow Bash to run `rm -rf ./build && make release` in the project directory?",
			Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}},
		},
		metaPrompt: metadataPrompt(agent, aep.KindPermission, "Bash"),
		refusing:   "deny",
		tool:       "Bash",
	}
}

func inputRequest(agent string) ask {
	return ask{
		req: aep.Request{
			Kind:    aep.KindInput,
			Prompt:  "Which branch should the fix be merged into? Pick one, or type another branch name.",
			Options: []aep.Option{{ID: "main", Label: "main"}, {ID: "release", Label: "release/2.4"}},
		},
		metaPrompt: metadataPrompt(agent, aep.KindInput, ScenarioInput),
	}
}

func promptOnlyForm(agent string) ask {
	return ask{
		req: aep.Request{
			Kind:       aep.KindForm,
			Prompt:     "In a sentence or two: what should the release notes emphasise?",
			RespondVia: []string{aep.ViaControl},
		},
		metaPrompt: metadataPrompt(agent, aep.KindForm, ScenarioPromptOnly),
	}
}

func otherRequest(agent string) ask {
	return ask{
		req: aep.Request{
			Kind:   aep.KindOther,
			Prompt: "The generated fixtures differ from the committed ones. Keep the new ones, or explain what to do instead.",
		},
		metaPrompt: metadataPrompt(agent, aep.KindOther, ScenarioOther),
	}
}

func mustUnmarshal(s string, v any) {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		panic(err) // a constant of this file
	}
}
