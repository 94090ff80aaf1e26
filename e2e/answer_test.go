package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// uiAgent is the identity the UI sends commands as (serve --agent default).
const uiAgent = "aepforms"

// openForm waits for the session's card to be open and loads the page
// narrowed to the session, returning it with the card and its form.
func (s *stack) openForm(t *testing.T, session string) (*uiPage, *goquery.Selection, *htmlForm) {
	t.Helper()
	s.awaitCard(t, session, "an open card", func(c *goquery.Selection) bool {
		return c.AttrOr("data-open", "") == "true" && c.Find(`form[data-testid="answer-form"]`).Length() == 1
	})
	p := s.getPage(t, "?session="+url.QueryEscape(session))
	require.Equal(t, http.StatusOK, p.status)
	card := p.cardOf(t, session)
	return p, card, formOf(t, p, card)
}

// fieldNamed returns the control name of the card's field whose label
// contains label.
func fieldNamed(t *testing.T, card *goquery.Selection, label string) string {
	t.Helper()
	var names []string
	card.Find(`[data-testid="field"]`).Each(func(_ int, f *goquery.Selection) {
		if strings.Contains(f.Find(".field__label").First().Text(), label) {
			names = append(names, f.AttrOr("data-name", ""))
		}
	})
	require.Len(t, names, 1, "fields labelled %q", label)
	return names[0]
}

// fieldKind is the rendered kind (data-kind) of the field named name.
func fieldKind(card *goquery.Selection, name string) string {
	return card.Find(`[data-testid="field"][data-name="`+name+`"]`).AttrOr("data-kind", "")
}

// choiceValue returns the value of the choice labelled label in field
// name: a radio's or checkbox's (by its <label for>), or a <select>'s
// option's.
func choiceValue(t *testing.T, card *goquery.Selection, name, label string) string {
	t.Helper()
	var vals []string
	field := card.Find(`[data-testid="field"][data-name="` + name + `"]`)
	field.Find(`input[name="` + name + `"]`).Each(func(_ int, in *goquery.Selection) {
		if strings.TrimSpace(field.Find(`label[for="`+in.AttrOr("id", "")+`"]`).Text()) == label {
			vals = append(vals, in.AttrOr("value", "on"))
		}
	})
	field.Find(`select[name="` + name + `"] option`).Each(func(_ int, o *goquery.Selection) {
		if strings.TrimSpace(o.Text()) == label {
			vals = append(vals, o.AttrOr("value", ""))
		}
	})
	require.Len(t, vals, 1, "choices labelled %q in %s", label, name)
	return vals[0]
}

// answerOf returns the command's data.answer exactly as the agent received it.
func answerOf(t *testing.T, raw []byte) string {
	t.Helper()
	var env struct {
		Data struct {
			Answer json.RawMessage `json:"answer"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &env), "command %s", raw)
	return string(env.Data.Answer)
}

// assertCommand checks one command as the agent recorded it: a
// control.attention.respond per AEP-0004 for the request, received once,
// with exactly the answer and capture wanted.
func assertCommand(t *testing.T, r agent.Received, sess agent.SessionInfo, req agent.RequestInfo, wantAnswer string, wantCapture aep.Capture) {
	t.Helper()
	ev, err := aep.Decode(r.Raw)
	require.NoError(t, err, "the agent received %s", r.Raw)
	assert.Equal(t, "control.attention.respond", ev.Type())
	assert.Equal(t, sess.ID, ev.Session(), "command session")
	assert.Equal(t, req.ID, ev.Subject(), "command subject: the request id")
	assert.Equal(t, req.ID, ev.Cause(), "command cause: the request id")
	_, hasSeq := ev.Seq()
	assert.False(t, hasSeq, "a command carries no seq: %s", r.Raw)
	assert.Equal(t, uiAgent, ev.Agent(), "command agent")
	assert.Equal(t, wantCapture.String(), ev.Capture().String(), "command capture for answer %s", answerOf(t, r.Raw))
	assert.Equal(t, wantAnswer, answerOf(t, r.Raw), "data.answer the agent received")
	assert.Equal(t, 1, r.Count, "transmissions of command %s", r.ID)
}

// sendAndAccept submits f with submitter, follows the redirect, and
// waits for the agent to accept exactly one command, which it returns.
func (s *stack) sendAndAccept(t *testing.T, ag *agent.Agent, session string, f *htmlForm, submitter *formControl) agent.Received {
	t.Helper()
	s.follow(t, s.submit(t, f, submitter, ""))
	got := awaitCommands(t, ag, session, 1, nil)
	require.Len(t, got, 1, "commands the agent received")
	require.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "agent decision: %+v", got[0].Decision)
	return got[0]
}

// TestAnswering drives every kind of answer through one stack, each case
// with its own agent (and so its own record).
func TestAnswering(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})

	cases := []struct {
		name     string
		scenario string
		// fill answers the form; the returned button is clicked (nil: Enter).
		fill        func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl
		wantAnswer  string
		wantCapture aep.Capture
	}{
		{
			name:     "every field kind filled",
			scenario: agent.ScenarioEveryType,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				service, replicas := fieldNamed(t, card, "Service name"), fieldNamed(t, card, "Replica count")
				timeout, agree := fieldNamed(t, card, "Request timeout"), fieldNamed(t, card, "I have read")
				features, region := fieldNamed(t, card, "Features"), fieldNamed(t, card, "Primary region")
				notes := fieldNamed(t, card, "Notes for the release manager")
				assert.Equal(t, "text", fieldKind(card, service))
				assert.Equal(t, "number", fieldKind(card, replicas))
				assert.Equal(t, "boolean", fieldKind(card, agree))
				assert.Equal(t, "checkboxes", fieldKind(card, features), "multi select with Other")
				assert.Equal(t, "select", fieldKind(card, region), "single select of twelve choices")
				assert.Equal(t, "textarea", fieldKind(card, notes))
				num := card.Find(`input[name="` + replicas + `"]`)
				assert.Equal(t, []string{"number", "1", "20", "any"}, []string{num.AttrOr("type", ""), num.AttrOr("min", ""), num.AttrOr("max", ""), num.AttrOr("step", "")})
				_, req := card.Find(`input[name="` + agree + `"]`).Attr("required")
				assert.False(t, req, "a required boolean carries no HTML required (it would force a tick)")

				f.fill(t, service, "billing-api")
				f.fill(t, replicas, "3")
				f.fill(t, timeout, "2.5")
				f.tick(t, agree, "on", true)
				f.tick(t, features, choiceValue(t, card, features, "Metrics"), true)
				f.tick(t, features, choiceValue(t, card, features, "Continuous profiling"), true)
				f.tick(t, features, "other", true)
				f.fill(t, features+"-other", "canary analysis")
				f.choose(t, region, choiceValue(t, card, region, "Region ap-south-1"))
				f.fill(t, notes, "Ship after 18:00 UTC.\nPing the \"release\" channel first. ✓")
				return f.button(t, "")
			},
			wantAnswer:  `{"values":{"agree":true,"features":["metrics","profiling","canary analysis"],"notes":"Ship after 18:00 UTC.\nPing the \"release\" channel first. ✓","region":"ap-south-1","replicas":3,"service":"billing-api","timeout":2.5}}`,
			wantCapture: aep.CaptureFull,
		},
		{
			name:     "required boolean unticked and optional fields left empty",
			scenario: agent.ScenarioEveryType,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				f.fill(t, fieldNamed(t, card, "Service name"), "ledger")
				f.fill(t, fieldNamed(t, card, "Replica count"), "20")
				region := fieldNamed(t, card, "Primary region")
				f.choose(t, region, choiceValue(t, card, region, "Region us-east-1"))
				return nil // Enter in a text field: no named button
			},
			wantAnswer:  `{"values":{"agree":false,"features":[],"region":"us-east-1","replicas":20,"service":"ledger"}}`,
			wantCapture: aep.CaptureFull,
		},
		{
			name:     "single radio select without Other, integer and boolean: ids and numbers only",
			scenario: agent.ScenarioElicitation,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				env := fieldNamed(t, card, "Environment")
				assert.Equal(t, "radios", fieldKind(card, env))
				assert.Zero(t, card.Find(`[data-testid="field"][data-name="`+env+`"] [data-testid="other"]`).Length(), "a closed select offers no Other")
				f.tick(t, env, choiceValue(t, card, env, "Production"), true)
				f.fill(t, fieldNamed(t, card, "Replica count"), "4")
				f.tick(t, fieldNamed(t, card, "Proceed immediately"), "on", true)
				return f.button(t, "")
			},
			wantAnswer:  `{"values":{"confirm":true,"environment":"production","replicas":4}}`,
			wantCapture: aep.CaptureMetadata,
		},
		{
			name:     "single select with Other answered with a choice, multi with Other answered with text",
			scenario: agent.ScenarioAskUser,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				db, regions := fieldNamed(t, card, "Database"), fieldNamed(t, card, "Regions")
				assert.Equal(t, "radios", fieldKind(card, db))
				assert.Equal(t, "checkboxes", fieldKind(card, regions))
				f.tick(t, db, choiceValue(t, card, db, "SQLite"), true)
				f.tick(t, regions, choiceValue(t, card, regions, "us-east"), true)
				f.tick(t, regions, "other", true)
				f.fill(t, regions+"-other", "ap-south")
				return f.button(t, "")
			},
			wantAnswer:  `{"values":{"1":"2","2":["1","ap-south"]}}`,
			wantCapture: aep.CaptureFull,
		},
		{
			name:     "permission answered deny",
			scenario: agent.ScenarioPermission,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				deny := card.Find(`button[data-testid="option"]`).FilterFunction(func(_ int, b *goquery.Selection) bool {
					return strings.TrimSpace(b.Text()) == "Deny"
				})
				require.Equal(t, 1, deny.Length(), "a Deny button")
				assert.Equal(t, "deny", deny.AttrOr("data-style", ""), "deny is styled apart")
				return f.button(t, "Deny")
			},
			wantAnswer:  `{"option":"deny"}`,
			wantCapture: aep.CaptureMetadata,
		},
		{
			name:     "input answered with typed text",
			scenario: agent.ScenarioInput,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				f.fill(t, "text", "hotfix/2.4.1")
				return f.button(t, "Send answer")
			},
			wantAnswer:  `{"text":"hotfix/2.4.1"}`,
			wantCapture: aep.CaptureFull,
		},
		{
			name:     "input answered by picking an option",
			scenario: agent.ScenarioInput,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				return f.button(t, "release/2.4")
			},
			wantAnswer:  `{"option":"release"}`,
			wantCapture: aep.CaptureMetadata,
		},
		{
			name:     "form without fields answered with a reply",
			scenario: agent.ScenarioPromptOnly,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				f.fill(t, "text", "The faster checkout.\nAnd the new invoices.")
				return f.button(t, "")
			},
			wantAnswer:  `{"text":"The faster checkout.\nAnd the new invoices."}`,
			wantCapture: aep.CaptureFull,
		},
		{
			name:     "kind other answered with a reply",
			scenario: agent.ScenarioOther,
			fill: func(t *testing.T, card *goquery.Selection, f *htmlForm) *formControl {
				f.fill(t, "text", "Keep the new ones.")
				return f.button(t, "")
			},
			wantAnswer:  `{"text":"Keep the new ones."}`,
			wantCapture: aep.CaptureFull,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ag := s.startAgent(t, agentOptions{scenarios: []string{tc.scenario}})
			sess, req := askedRequest(t, ag, tc.scenario)
			_, card, f := s.openForm(t, sess.ID)
			submitter := tc.fill(t, card, f)
			got := s.sendAndAccept(t, ag, sess.ID, f, submitter)
			assertCommand(t, got, sess, req, tc.wantAnswer, tc.wantCapture)
		})
	}

	t.Run("deploy form loop ends answered with what the agent recorded", func(t *testing.T) {
		t.Parallel()
		ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
		sess, req := askedRequest(t, ag, agent.ScenarioDeploy)
		_, card, f := s.openForm(t, sess.ID)
		name, staged := fieldNamed(t, card, "Service name"), fieldNamed(t, card, "Deploy to staging")
		regions, db := fieldNamed(t, card, "Regions"), fieldNamed(t, card, "Database")
		assert.Equal(t, "checkboxes", fieldKind(card, regions), "multi select without Other")
		assert.Zero(t, card.Find(`[data-testid="field"][data-name="`+regions+`"] [data-testid="other"]`).Length(), "a closed multi select offers no Other")
		assert.Equal(t, "radios", fieldKind(card, db), "single select with Other")
		f.fill(t, name, "checkout")
		f.tick(t, staged, "on", false)
		f.tick(t, regions, choiceValue(t, card, regions, "us-east"), true)
		f.tick(t, regions, choiceValue(t, card, regions, "eu-west"), true)
		f.tick(t, db, "other", true)
		f.fill(t, db+"-other", "CockroachDB")

		got := s.sendAndAccept(t, ag, sess.ID, f, f.button(t, ""))
		const want = `{"values":{"db":"CockroachDB","name":"checkout","regions":["1","2"],"staged":false}}`
		assertCommand(t, got, sess, req, want, aep.CaptureFull)

		final := s.awaitCard(t, sess.ID, "the card answered", inState("answered"))
		var answered *aep.Event
		for _, ev := range s.relayHistory(t, sess.ID) {
			if ev.Type() == "attention.answered" && ev.Subject() == req.ID {
				answered = ev
			}
		}
		require.NotNil(t, answered, "the relay holds no attention.answered for the request")
		assert.Equal(t, got.ID, answered.Cause(), "attention.answered is caused by the command")
		var rec aep.Answered
		require.NoError(t, answered.DecodeData(&rec))
		assert.Equal(t, uiAgent, rec.By)
		assert.Equal(t, aep.ViaControl, rec.Via)
		b, err := json.Marshal(rec.Answer.Values)
		require.NoError(t, err)
		assert.JSONEq(t, `{"db":"CockroachDB","name":"checkout","regions":["1","2"],"staged":false}`, string(b), "values the agent recorded")

		assert.Equal(t, "true", final.AttrOr("data-settled", ""), "the answered card is settled")
		assert.Regexp(t, `^Answered from this page · (just now|\d+ min ago)$`, strings.TrimSpace(final.Find(`[data-testid="state-text"]`).Text()),
			"via control is “from this page”, with when; who sent it is the line below")
		assert.Contains(t, final.Find(`[data-testid="answered-by"]`).Text(), "an operator who gave no name", "a bearer token gives no name")
		shown := map[string]string{}
		final.Find(`[data-testid="values"] .values__item`).Each(func(_ int, it *goquery.Selection) {
			shown[strings.TrimSpace(it.Find("dt").Text())] = strings.TrimSpace(it.Find("dd").Text())
		})
		assert.Equal(t, map[string]string{
			"Service name":             rec.Answer.Values["name"].(string),
			"Deploy to staging first?": "No",
			"Regions":                  "us-east, eu-west",
			"Database":                 "Other: “" + rec.Answer.Values["db"].(string) + "”",
		}, shown, "the answered card shows the recorded values")
	})
}

// TestAnswerSameAsExternalSender: an external AEP control sender's
// answer to the same form (built per AEP-0004 by hand) gives the demo
// agent the same answer as the operator's through the UI, and the agent
// records the same outcome for both.
func TestAnswerSameAsExternalSender(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy, agent.ScenarioDeploy}})
	ctx, cancel := context.WithTimeout(s.ctx, stackWait)
	defer cancel()
	var forms []agent.SessionInfo
	require.NoError(t, ag.Until(ctx, func() bool {
		forms = forms[:0]
		for _, x := range ag.Sessions() {
			if x.Scenario == agent.ScenarioDeploy && len(x.Requests) == 1 && x.Requests[0].Delivered {
				forms = append(forms, x)
			}
		}
		return len(forms) == 2
	}), "two deploy forms asked")
	viaUI, viaExt := forms[0], forms[1]

	_, card, f := s.openForm(t, viaUI.ID)
	db, regions := fieldNamed(t, card, "Database"), fieldNamed(t, card, "Regions")
	f.fill(t, fieldNamed(t, card, "Service name"), "checkout")
	f.tick(t, regions, choiceValue(t, card, regions, "us-east"), true)
	f.tick(t, regions, choiceValue(t, card, regions, "eu-west"), true)
	f.tick(t, db, "other", true)
	f.fill(t, db+"-other", "CockroachDB")
	fromUI := s.sendAndAccept(t, ag, viaUI.ID, f, nil)

	req := viaExt.Requests[0]
	cmd, err := aep.Build(aep.Envelope{
		ID: ulid.Make().String(), Type: "control.attention.respond", Subject: req.ID, Cause: req.ID,
		Time: time.Now().UTC().Format(time.RFC3339Nano), Source: "aep://e2e.test/sender/external",
		Agent: "external-sender", Session: viaExt.ID, Capture: aep.CaptureFull.String(),
		Data: aep.Respond{Answer: aep.Answer{Values: aep.Values{
			"name": "checkout", "staged": false, "regions": []any{"1", "2"}, "db": "CockroachDB",
		}}},
	})
	require.NoError(t, err)
	s.dialRelay(t, ctx, "external-sender").write(cmd.Raw())
	got := awaitCommands(t, ag, viaExt.ID, 1, nil)
	require.Equal(t, agent.OutcomeAccepted, got[0].Decision.Outcome, "agent decision on the external command: %+v", got[0].Decision)
	assert.Equal(t, answerOf(t, got[0].Raw), answerOf(t, fromUI.Raw), "the answer the agent received: external sender vs UI")

	recorded := func(session, request string) string {
		t.Helper()
		return answerOf(t, s.awaitRelayEvent(t, session, "attention.answered", request).Raw())
	}
	assert.Equal(t, recorded(viaExt.ID, req.ID), recorded(viaUI.ID, viaUI.Requests[0].ID),
		"attention.answered recorded: external sender vs UI")
}
