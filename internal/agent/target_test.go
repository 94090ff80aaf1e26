package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestRespondValidFormRunsTheLoop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioDeploy}, nil)
	h.take()
	_, q := h.pendingRequest(ScenarioDeploy)
	h.clk.add(5 * time.Second)
	cmd := h.respond(ScenarioDeploy, map[string]any{"values": map[string]any{
		"name": "billing-api", "staged": true, "regions": []any{"1", "3"}, "db": "MariaDB",
	}})

	evs := h.send(cmd)
	require.Equal(t, []string{"control.accepted", "attention.answered", "attention.resolved", "run.finished", "session.ended"}, types(evs))
	ack, answered, resolved, finished := evs[0], evs[1], evs[2], evs[3]

	assert.Equal(t, cmd.ID(), ack.Cause(), "ack.cause = command id")
	assert.Equal(t, aep.CaptureMetadata, ack.Capture())
	for _, ev := range evs[1:3] {
		assert.Equal(t, q.ID, ev.Subject(), "%s.subject = request id", ev.Type())
		assert.Equal(t, cmd.ID(), ev.Cause(), "%s.cause = command id", ev.Type())
	}
	assert.Equal(t, resolved.ID(), finished.Cause())

	var ad aep.Answered
	require.NoError(t, answered.DecodeData(&ad))
	assert.Equal(t, aep.ViaControl, ad.Via)
	assert.Equal(t, "mission-control", ad.By, "by = the sender's identity")
	assert.Equal(t, aep.Values{"name": "billing-api", "staged": true, "regions": []any{"1", "3"}, "db": "MariaDB"}, ad.Answer.Values)

	var rd aep.Resolved
	require.NoError(t, resolved.DecodeData(&rd))
	assert.Equal(t, aep.ResolutionAnswered, rd.Resolution)
	require.NotNil(t, rd.LatencyMS)
	assert.Equal(t, int64(5000), *rd.LatencyMS)

	s := h.session(ScenarioDeploy)
	assert.False(t, s.Open)
	assert.Equal(t, StateAnswered, s.Requests[0].State)
	rec := h.a.Record()
	require.Len(t, rec, 1)
	assert.Equal(t, OutcomeAccepted, rec[0].Decision.Outcome)
	assert.Equal(t, ack.Raw(), rec[0].Ack)
	assert.Equal(t, cmd.Raw(), rec[0].Raw)
}

func TestRespondValuesAreGatedToTheSessionCapture(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioAskUserMetadata, ScenarioAskUser}, nil)
	h.take()
	values := map[string]any{"1": "MariaDB", "2": []any{"1", "2"}}

	evs := h.send(h.respond(ScenarioAskUserMetadata, map[string]any{"values": values}))
	require.Equal(t, "attention.answered", evs[1].Type())
	assert.Equal(t, aep.CaptureMetadata, evs[1].Capture())
	var ad aep.Answered
	require.NoError(t, evs[1].DecodeData(&ad))
	assert.Equal(t, aep.Values{"2": []any{"1", "2"}}, ad.Answer.Values, "other text is dropped at metadata, closed ids stay")

	values["1"] = "email me at ops@example.com"
	evs = h.send(h.respond(ScenarioAskUser, map[string]any{"values": values}))
	require.Equal(t, "attention.answered", evs[1].Type())
	assert.Equal(t, aep.CaptureRedacted, evs[1].Capture())
	require.NoError(t, evs[1].DecodeData(&ad))
	assert.NotContains(t, ad.Answer.Values["1"], "ops@example.com", "free text passed the redaction pipeline")
	assert.Equal(t, []any{"1", "2"}, ad.Answer.Values["2"])
}

func TestRespondInvalidValuesNackedAndStillPending(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		capture aep.Capture
		values  map[string]any
		detail  bool
	}{
		{"missing required", aep.CaptureFull, map[string]any{"staged": true}, true},
		{"not a choice on a closed select", aep.CaptureFull, map[string]any{"name": "x", "regions": []any{"SECRET-INPUT-42"}}, true},
		{"agent capture metadata leaves the detail out", aep.CaptureMetadata, map[string]any{"staged": true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, []string{ScenarioDeploy}, func(c *Config) { c.Capture = tc.capture })
			h.take()
			cmd := h.respond(ScenarioDeploy, map[string]any{"values": tc.values})
			evs := h.send(cmd)
			require.Equal(t, []string{"control.rejected"}, types(evs), "only the nack")
			var rej aep.Rejected
			require.NoError(t, evs[0].DecodeData(&rej))
			assert.Equal(t, aep.ReasonInvalid, rej.Reason)
			assert.Equal(t, cmd.ID(), evs[0].Cause())
			if tc.detail {
				assert.NotEmpty(t, rej.Detail)
				assert.Equal(t, aep.CaptureRedacted, evs[0].Capture(), "a detail is published at redacted")
				assert.NotContains(t, string(evs[0].Raw()), "SECRET-INPUT-42", "the detail never holds the operator's input")
			} else {
				assert.Empty(t, rej.Detail)
				assert.Equal(t, aep.CaptureMetadata, evs[0].Capture())
			}
			_, q := h.pendingRequest(ScenarioDeploy)
			assert.Equal(t, StatePending, q.State, "the request stays pending")
			rec := h.a.Record()
			require.Len(t, rec, 1)
			assert.Equal(t, Decision{Outcome: OutcomeRejected, Reason: aep.ReasonInvalid, Detail: rej.Detail}, rec[0].Decision)

			// A corrected answer (a new command) is then accepted.
			evs = h.send(h.respond(ScenarioDeploy, map[string]any{"values": map[string]any{"name": "ok"}}))
			assert.Equal(t, "control.accepted", evs[0].Type())
		})
	}
}

func TestRedeliveredCommandGetsTheRecordedAckByteIdentical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values map[string]any
		ack    string
	}{
		{"accepted", map[string]any{"name": "svc"}, "control.accepted"},
		{"rejected", map[string]any{}, "control.rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, []string{ScenarioDeploy}, nil)
			h.take()
			cmd := h.respond(ScenarioDeploy, map[string]any{"values": tc.values})
			first := h.send(cmd)
			require.Equal(t, tc.ack, first[0].Type())

			for i := 2; i <= 3; i++ {
				again := h.send(cmd)
				require.Len(t, again, 1, "a redelivery re-emits the ack and nothing else")
				assert.Equal(t, first[0].Raw(), again[0].Raw(), "byte-identical re-ack")
				rec := h.a.Record()
				require.Len(t, rec, 1)
				assert.Equal(t, i, rec[0].Count)
				assert.Zero(t, rec[0].Differing)
			}
			s := h.session(ScenarioDeploy)
			answered := 0
			for _, q := range s.Requests {
				if q.State == StateAnswered {
					answered++
				}
			}
			if tc.ack == "control.accepted" {
				assert.Equal(t, 1, answered, "executed once")
			} else {
				assert.Zero(t, answered)
			}
		})
	}
}

func TestDedupeIsPerSourceAndID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioDeploy}, nil)
	h.take()
	cmd := h.respond(ScenarioDeploy, map[string]any{"values": map[string]any{}})
	h.send(cmd)

	var m map[string]any
	require.NoError(t, json.Unmarshal(cmd.Raw(), &m))
	m["source"] = "aep://host-c/agent/other-sender"
	b, _ := json.Marshal(m)
	other, err := aep.Decode(b)
	require.NoError(t, err)
	evs := h.send(other)
	require.Equal(t, []string{"control.rejected"}, types(evs), "same id from another source is a new command")
	assert.Equal(t, other.ID(), evs[0].Cause())
	assert.Len(t, h.a.Record(), 2)

	// The same (source, id) with other bytes is still a redelivery.
	m["source"] = cmd.Source()
	m["time"] = "2026-07-03T10:00:09.000Z"
	b, _ = json.Marshal(m)
	changed, err := aep.Decode(b)
	require.NoError(t, err)
	h.send(changed)
	rec := h.a.Record()
	assert.Equal(t, 2, rec[0].Count)
	assert.Equal(t, 1, rec[0].Differing)
}

func TestRespondRejections(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioDeploy, ScenarioOOB, ScenarioStandby}, nil)
	h.take()
	deploy, q := h.pendingRequest(ScenarioDeploy)
	oob, oq := h.pendingRequest(ScenarioOOB)
	standby := h.session(ScenarioStandby)

	cases := []struct {
		name   string
		cmd    command
		reason string
	}{
		{"unknown request", command{typ: "control.attention.respond", session: deploy.ID, subject: "01NOPE",
			data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}}, aep.ReasonInvalid},
		{"no subject", command{typ: "control.attention.respond", session: deploy.ID,
			data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}}, aep.ReasonInvalid},
		{"request of another session", command{typ: "control.attention.respond", session: standby.ID, subject: q.ID,
			data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}}, aep.ReasonInvalid},
		{"respond_via oob", command{typ: "control.attention.respond", session: oob.ID, subject: oq.ID,
			data: map[string]any{"answer": map[string]any{"values": map[string]any{"suites": []any{"unit"}}}}}, aep.ReasonRefused},
		{"malformed answer", command{typ: "control.attention.respond", session: deploy.ID, subject: q.ID,
			data: map[string]any{"answer": "yes"}}, aep.ReasonInvalid},
		{"text on a form with fields", command{typ: "control.attention.respond", session: deploy.ID, subject: q.ID,
			data: map[string]any{"answer": map[string]any{"text": "hello"}}}, aep.ReasonInvalid},
		{"empty answer", command{typ: "control.attention.respond", session: deploy.ID, subject: q.ID,
			data: map[string]any{"answer": map[string]any{}}}, aep.ReasonInvalid},
		{"pause is not accepted", command{typ: "control.pause", session: standby.ID, data: map[string]any{}}, aep.ReasonUnsupported},
		{"vendor command", command{typ: "x.acme.control.reboot", session: standby.ID, data: map[string]any{}}, aep.ReasonUnsupported},
		{"cancel with a bad scope", command{typ: "control.cancel", session: standby.ID, data: map[string]any{"scope": "agent"}}, aep.ReasonInvalid},
		{"cancel of a run that is not running", command{typ: "control.cancel", session: standby.ID, run: "run-old",
			data: map[string]any{"scope": "run"}}, aep.ReasonRefused},
	}
	for _, tc := range cases {
		evs := h.send(tc.cmd.event(t))
		require.Equal(t, []string{"control.rejected"}, types(evs), tc.name)
		var rej aep.Rejected
		require.NoError(t, evs[0].DecodeData(&rej))
		assert.Equal(t, tc.reason, rej.Reason, tc.name)
		assert.Equal(t, tc.cmd.session, evs[0].Session(), "%s: acked in the addressed session", tc.name)
	}
	_, q2 := h.pendingRequest(ScenarioDeploy)
	assert.Equal(t, q.ID, q2.ID, "nothing settled the deploy form")
	assert.Equal(t, StatePending, h.session(ScenarioOOB).Requests[0].State)
	assert.Len(t, h.a.Record(), len(cases))
}

func TestRespondToSettledRequestRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioPermission}, nil)
	h.take()
	s, q := h.pendingRequest(ScenarioPermission)
	evs := h.send(h.respond(ScenarioPermission, map[string]any{"option": "allow"}))
	require.Equal(t, "control.accepted", evs[0].Type())

	late := command{typ: "control.attention.respond", session: s.ID, subject: q.ID,
		data: map[string]any{"answer": map[string]any{"option": "deny"}}}.event(t)
	evs = h.send(late)
	require.Equal(t, []string{"control.rejected"}, types(evs), "no side effects")
	var rej aep.Rejected
	require.NoError(t, evs[0].DecodeData(&rej))
	assert.Equal(t, aep.ReasonRefused, rej.Reason)
}

func TestOptionAndTextAnswers(t *testing.T) {
	t.Parallel()
	text := func(s string) map[string]any { return map[string]any{"text": s} }
	cases := []struct {
		scenario string
		answer   map[string]any
		option   string // applied option
		text     string // applied text ("" = none)
		reason   string // nack reason, "" = accepted
	}{
		{ScenarioPermission, map[string]any{"option": "allow"}, "allow", "", ""},
		{ScenarioPermission, map[string]any{"option": "deny", "text": "use staging"}, "deny", "use staging", ""},
		{ScenarioPermission, map[string]any{"option": "maybe"}, "", "", aep.ReasonInvalid},
		{ScenarioPermission, text("  ALLOW "), "allow", "", ""},
		{ScenarioPermission, text("allow once"), "allow", "", ""},
		{ScenarioPermission, text("Deny"), "deny", "", ""},
		{ScenarioPermission, text("sure, go ahead"), "deny", "sure, go ahead", ""},
		{ScenarioPermission, map[string]any{"values": map[string]any{"x": "1"}}, "", "", aep.ReasonInvalid},
		{ScenarioInput, text("release/2.4"), "release", "", ""},
		{ScenarioInput, text("MAIN"), "main", "", ""},
		{ScenarioInput, text("hotfix/7"), "", "hotfix/7", ""},
		{ScenarioInput, text("   "), "", "", aep.ReasonInvalid},
		{ScenarioPromptOnly, text("Emphasise the currency migration."), "", "Emphasise the currency migration.", ""},
		{ScenarioPromptOnly, map[string]any{"option": "1"}, "", "", aep.ReasonInvalid},
		{ScenarioPromptOnly, map[string]any{"values": map[string]any{}}, "", "", aep.ReasonInvalid},
		{ScenarioOther, text("keep them"), "", "keep them", ""},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+mustJSON(tc.answer), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, []string{tc.scenario}, nil)
			h.take()
			evs := h.send(h.respond(tc.scenario, tc.answer))
			if tc.reason != "" {
				require.Equal(t, []string{"control.rejected"}, types(evs))
				var rej aep.Rejected
				require.NoError(t, evs[0].DecodeData(&rej))
				assert.Equal(t, tc.reason, rej.Reason)
				return
			}
			require.Equal(t, "attention.answered", evs[1].Type())
			var ad aep.Answered
			require.NoError(t, evs[1].DecodeData(&ad))
			assert.Equal(t, tc.option, ad.Answer.Option, "applied option")
			if tc.text == "" {
				assert.Nil(t, ad.Answer.Text, "the matched word is the decision, not text")
			} else {
				require.NotNil(t, ad.Answer.Text)
				assert.Equal(t, tc.text, *ad.Answer.Text)
			}
		})
	}
}

func TestUnmatchedTextNeverGrantsAtAnyCapture(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{ScenarioPermission}, func(c *Config) { c.Capture = aep.CaptureMetadata })
	h.take()
	evs := h.send(h.respond(ScenarioPermission, map[string]any{"text": "yes please"}))
	var ad aep.Answered
	require.NoError(t, evs[1].DecodeData(&ad))
	assert.Equal(t, "deny", ad.Answer.Option)
	assert.Nil(t, ad.Answer.Text, "answer.text is [redacted]: left out at metadata")
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
